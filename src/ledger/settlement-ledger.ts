import * as z from 'zod'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { toCaip2 } from '../networks/networks.js'

/**
 * What became of a settle: `settled` (confirmed on chain), `failed` (refused before
 * anything was sent, or failed on chain: `errorReason` says which), `pending` (sent, not
 * confirmed within the settle's budget; a later row of the same transaction tells the end).
 */
export const ledgerStatusSchema = z.enum(['settled', 'failed', 'pending'])
export type LedgerStatus = z.infer<typeof ledgerStatusSchema>

/**
 * One row of the settlement ledger: one settle outcome, as the facilitator answered it.
 * No signature, payload, signed transaction or key is ever in it; a resource URL keeps its
 * origin and path only (no query, fragment or credentials).
 */
export const ledgerEntrySchema = z.object({
  /** Increasing, unique within one ledger. */
  id: z.number().int(),
  /** When the outcome was recorded (ISO 8601, UTC). */
  recordedAt: z.string(),
  /** When the settle call started (ISO 8601, UTC). */
  startedAt: z.string(),
  status: ledgerStatusSchema,
  /** This call finished a transaction an earlier call (or a process that died) had sent. */
  resumed: z.boolean(),
  /** The snake_case reason of a `failed` or `pending` outcome. */
  errorReason: z.string().nullable(),
  errorMessage: z.string().nullable(),
  /** CAIP-2 network id. */
  network: z.string(),
  scheme: z.string(),
  x402Version: z.number().int(),
  /** The payer, when known (EVM addresses in lower case). */
  payer: z.string().nullable(),
  payTo: z.string(),
  asset: z.string(),
  /** In the token's smallest unit, a decimal string. */
  amount: z.string(),
  /** The transaction id, when one was sent (or known). */
  transaction: z.string().nullable(),
  resourceUrl: z.string().nullable(),
  /**
   * What the transactions this settle sent (or finished) cost the facilitator, in the chain's native
   * smallest unit (wei on EVM chains, lamports on Solana), a decimal string: EVM gas used × effective
   * gas price (plus an OP-stack chain's L1 data fee), Solana the signature and priority fees. Set once
   * the chain shows the outcome, landed or not (a reverted transaction costs its gas too); `null` when
   * nothing was sent, while a transaction is pending (the row that finishes it carries its cost), and
   * in rows written before this column existed (a body without the field, from an older server, reads as `null`).
   */
  cost: z.string().regex(/^\d+$/).nullable().default(null),
})
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>

/** A page of the ledger; `nextCursor` reads the next one, absent on the last page. */
export const ledgerPageSchema = z.object({
  entries: z.array(ledgerEntrySchema),
  nextCursor: z.string().optional(),
})
export type LedgerPage = z.infer<typeof ledgerPageSchema>

/** A row to append: an entry without its id, times in epoch milliseconds, `cost` optional (`null`). */
export interface NewLedgerEntry extends Omit<LedgerEntry, 'id' | 'recordedAt' | 'startedAt' | 'cost'> {
  recordedAt: number
  startedAt: number
  cost?: string | null
}

/** What to read from the ledger. Every filter is optional; they combine with AND. */
export interface LedgerQuery {
  /** Rows recorded at or after this time (a Date, epoch ms or an ISO 8601 string). */
  from?: Date | number | string
  /** Rows recorded before this time. */
  to?: Date | number | string
  payer?: string
  payTo?: string
  /** A CAIP-2 id or an x402 v1 name (`base`). */
  network?: string
  status?: LedgerStatus
  /** Rows per page, at most 1,000. @default 100 */
  limit?: number
  /** The `nextCursor` of the previous page, read with the same filters. */
  cursor?: string
  /** `desc`: newest first; `asc`: oldest first (for exports). @default 'desc' */
  order?: 'asc' | 'desc'
}

/**
 * An append-only record of every settle outcome, for reconciliation and support. Kept
 * in memory (`createMemoryLedger`, for tests), in the SQLite file (`createSqliteStore(...).ledger`)
 * or in PostgreSQL (`createPostgresStore(...).ledger`); filled by `createLedgerRecorder`.
 *
 * @example
 * // partial
 * const page = await ledger.read({ payer: '0xabc…', from: '2026-11-01', limit: 50 })
 * for (const entry of page.entries) console.log(entry.recordedAt, entry.status, entry.transaction)
 * if (page.nextCursor) await ledger.read({ payer: '0xabc…', from: '2026-11-01', limit: 50, cursor: page.nextCursor })
 */
export interface SettlementLedger {
  /**
   * Appends one row. Rows are never changed or removed through the library. A transaction has at
   * most one `settled` row (by network and transaction id): an append of a second one is skipped, so
   * the recorder may append a settlement again (a retry answered from the record) and never doubles it.
   */
  append(entry: NewLedgerEntry): Promise<void>
  /**
   * Reads rows by time range, payer, payTo, network and status, a page at a time.
   * A malformed query (a bad date, cursor or limit) throws `FacilitatorError('invalid_request')`.
   */
  read(query?: LedgerQuery): Promise<LedgerPage>
}

/** A query checked and reduced to what a backend filters on. */
export interface LedgerFilter {
  fromMs?: number
  toMs?: number
  payer?: string
  payTo?: string
  network?: string
  status?: LedgerStatus
  limit: number
  order: 'asc' | 'desc'
  /** Rows past this id in `order` (from the cursor). */
  afterId?: number
}

export const LEDGER_DEFAULT_LIMIT = 100
export const LEDGER_MAX_LIMIT = 1_000

/**
 * EVM addresses compare in lower case (clients send checksummed or not); Solana
 * addresses are case-sensitive and kept as they are.
 */
export function ledgerAddress(value: string): string {
  return /^0x[0-9a-fA-F]{40}$/.test(value) ? value.toLowerCase() : value
}

/** Checks a query and reduces it to a filter; throws `invalid_request` naming the bad field. */
export function ledgerFilter(query: LedgerQuery = {}): LedgerFilter {
  const order = query.order ?? 'desc'
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'must be asc or desc')
  const limit = query.limit ?? LEDGER_DEFAULT_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > LEDGER_MAX_LIMIT) throw invalid('limit', `must be an integer from 1 to ${LEDGER_MAX_LIMIT}`)
  if (query.status !== undefined && !ledgerStatusSchema.safeParse(query.status).success) throw invalid('status', 'must be settled, failed or pending')
  const filter: LedgerFilter = { limit, order }
  if (query.from !== undefined) filter.fromMs = time(query.from, 'from')
  if (query.to !== undefined) filter.toMs = time(query.to, 'to')
  if (query.payer) filter.payer = ledgerAddress(query.payer)
  if (query.payTo) filter.payTo = ledgerAddress(query.payTo)
  if (query.network) filter.network = toCaip2(query.network) ?? query.network
  if (query.status) filter.status = query.status
  if (query.cursor !== undefined) {
    const cursor = decodeCursor(query.cursor)
    if (!cursor || cursor.order !== order) throw invalid('cursor', 'is not a cursor of this query (read it from nextCursor, with the same order)')
    filter.afterId = cursor.id
  }
  return filter
}

/**
 * The page of rows a backend read for `filter`: it reads `limit + 1` rows in order,
 * and the extra one, when there, says a next page exists.
 */
export function ledgerPage(rows: LedgerEntry[], filter: LedgerFilter): LedgerPage {
  if (rows.length <= filter.limit) return { entries: rows }
  const entries = rows.slice(0, filter.limit)
  return { entries, nextCursor: encodeCursor(filter.order, entries[entries.length - 1]!.id) }
}

/** An append's row made safe and comparable: addresses normalised, the cost checked (absent: `null`). */
export function ledgerRow(entry: NewLedgerEntry): NewLedgerEntry & { cost: string | null } {
  const cost = entry.cost ?? null
  if (cost !== null && !/^\d{1,78}$/.test(cost)) throw new FacilitatorError('invalid_request', 'cost: must be a decimal integer string (the chain\'s smallest unit)', { details: { field: 'cost' } })
  return {
    ...entry,
    payer: entry.payer === null ? null : ledgerAddress(entry.payer),
    payTo: ledgerAddress(entry.payTo),
    asset: ledgerAddress(entry.asset),
    cost,
  }
}

function time(value: Date | number | string, field: string): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : Date.parse(value)
  if (!Number.isFinite(ms)) throw invalid(field, 'must be a date (ISO 8601) or epoch milliseconds')
  return ms
}

// Cursors are opaque to callers: "<order>:<id>" in base64url (atob/btoa: the core also runs in workers).
function encodeCursor(order: 'asc' | 'desc', id: number): string {
  return btoa(`${order}:${id}`).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function decodeCursor(cursor: string): { order: string; id: number } | undefined {
  let text: string
  try {
    text = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'))
  } catch {
    return undefined
  }
  const match = /^(asc|desc):(\d{1,15})$/.exec(text)
  return match ? { order: match[1]!, id: Number(match[2]) } : undefined
}

function invalid(field: string, message: string): FacilitatorError {
  return new FacilitatorError('invalid_request', `${field}: ${message}`, { details: { field } })
}
