import { ledgerFilter, ledgerPage, ledgerRow, type LedgerEntry, type LedgerFilter, type SettlementLedger } from './settlement-ledger.js'

/** Options of the in-memory ledger. */
export interface MemoryLedgerOptions {
  /**
   * Most rows kept; past it the oldest are forgotten, so a long-running process stays
   * bounded. A ledger that must keep every row belongs in SQLite or PostgreSQL.
   * @default 100_000
   */
  maxEntries?: number
}

/**
 * A settlement ledger in memory: for tests and for trying things out. Nothing
 * survives the process. Like the SQL ledgers it keeps one `settled` row per
 * transaction (among the rows it still keeps): a second append of one is skipped.
 *
 * @example
 * // partial
 * const ledger = createMemoryLedger()
 * const facilitator = createFacilitator({ schemes, hooks: [createLedgerRecorder({ ledger })] })
 */
export function createMemoryLedger(options: MemoryLedgerOptions = {}): SettlementLedger {
  const maxEntries = options.maxEntries ?? 100_000
  const rows: LedgerEntry[] = []
  let nextId = 1
  // Rows are dropped from the front in chunks: one shift per append would be O(n).
  let dropped = 0
  // The transactions with a settled row among the rows kept: one settled row per transaction, as the SQL ledgers' unique index.
  const settled = new Set<string>()

  return {
    async append(entry) {
      const row = ledgerRow(entry)
      const key = settledKey(row)
      if (key !== undefined) {
        if (settled.has(key)) return
        settled.add(key)
      }
      rows.push({ ...row, id: nextId++, recordedAt: new Date(row.recordedAt).toISOString(), startedAt: new Date(row.startedAt).toISOString() })
      if (rows.length - dropped > maxEntries) {
        const gone = settledKey(rows[dropped]!)
        if (gone !== undefined) settled.delete(gone)
        dropped++
      }
      if (dropped > 1024 || dropped > maxEntries) {
        rows.splice(0, dropped)
        dropped = 0
      }
    },
    async read(query) {
      const filter = ledgerFilter(query)
      const out: LedgerEntry[] = []
      const take = (row: LedgerEntry) => {
        if (matches(row, filter)) out.push(row)
        return out.length > filter.limit
      }
      if (filter.order === 'asc') {
        for (let i = dropped; i < rows.length; i++) if (take(rows[i]!)) break
      } else {
        for (let i = rows.length - 1; i >= dropped; i--) if (take(rows[i]!)) break
      }
      return ledgerPage(out, filter)
    },
  }
}

/** The identity of a settled row's transaction, or `undefined` for a row the rule does not cover. */
function settledKey(row: { status: string; network: string; transaction: string | null }): string | undefined {
  return row.status === 'settled' && row.transaction !== null ? `${row.network} ${row.transaction}` : undefined
}

function matches(row: LedgerEntry, filter: LedgerFilter): boolean {
  if (filter.afterId !== undefined && (filter.order === 'asc' ? row.id <= filter.afterId : row.id >= filter.afterId)) return false
  const recorded = Date.parse(row.recordedAt)
  if (filter.fromMs !== undefined && recorded < filter.fromMs) return false
  if (filter.toMs !== undefined && recorded >= filter.toMs) return false
  if (filter.payer !== undefined && row.payer !== filter.payer) return false
  if (filter.payTo !== undefined && row.payTo !== filter.payTo) return false
  if (filter.network !== undefined && row.network !== filter.network) return false
  if (filter.status !== undefined && row.status !== filter.status) return false
  return true
}
