import * as z from 'zod'
import type { SettleResponse } from '../schemas/messages.js'
import type { SettlementStore } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'

/**
 * What the store remembers of one payment's settlement, keyed by the adapter's
 * settlement key (the payment's on-chain replay domain). `leaseUntil` says until
 * when the call that wrote it is still working on it: the call renews it while it
 * lives; past that, another call may take over (resume a broadcast, or claim anew
 * a claim that sent nothing).
 * `fingerprint` (see payment-fingerprint.ts) tells the payment that wrote the
 * record from another request that happens to share its key.
 */
const fingerprint = z.string().optional()
/** Which call holds the lease (a random id per settle call): a call that lost it to a takeover sends nothing. */
const owner = z.string().optional()
/** What the settlement charges, in atomic units, where the settle request sets it (`upto`: the usage). */
const amount = z.string().optional()

export const settlementRecordSchema = z.discriminatedUnion('state', [
  /** Claimed; nothing has left the process yet. */
  z.object({ state: z.literal('claimed'), leaseUntil: z.number(), fingerprint, owner }),
  /** Sent (or about to be); the outcome is not known yet. */
  z.object({
    state: z.literal('broadcast'),
    transaction: z.string(),
    raw: z.string().optional(),
    slot: z.object({ sender: z.string(), sequence: z.number().int().nonnegative() }).optional(),
    leaseUntil: z.number(),
    /** The settle request, so that a facilitator can finish the settlement when its caller is gone and never retries. */
    request: z.unknown().optional(),
    /** The minute whose in-flight index names this record (see in-flight.ts). */
    minute: z.number().int().optional(),
    fingerprint,
    amount,
    owner,
  }),
  /** Confirmed on chain. */
  z.object({
    state: z.literal('settled'),
    transaction: z.string(),
    payer: z.string().optional(),
    fingerprint,
    amount,
    /** The answer's fields of its scheme (a batch deposit's `amount`, `asset`, `extra.channelState`), so a repeat answers them too. */
    answer: z.record(z.string(), z.unknown()).optional(),
  }),
  /** Mined and failed; the transaction id is kept. */
  z.object({
    state: z.literal('failed'),
    transaction: z.string(),
    errorReason: z.string(),
    errorMessage: z.string().optional(),
    payer: z.string().optional(),
    fingerprint,
  }),
])
export type SettlementRecord = z.infer<typeof settlementRecordSchema>

/** A success answer's fields beyond those every record keeps, or `undefined` when it has none (an `exact` answer). */
export function schemeAnswerFields(answer: SettleResponse): Record<string, unknown> | undefined {
  const { success: _success, transaction: _transaction, network: _network, payer: _payer, ...rest } = answer
  return Object.keys(rest).length > 0 ? rest : undefined
}

/** Reads a stored record; anything unreadable counts as absent rather than crashing a settle. */
export function decodeSettlementRecord(raw: string | undefined): SettlementRecord | undefined {
  if (raw === undefined) return undefined
  try {
    const parsed = settlementRecordSchema.safeParse(JSON.parse(raw))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/**
 * Where a payment's settlement record lives in the store: under its replay domain alone (the
 * adapter's key), never under its scheme, so two payments the chain would let only one of land
 * (one Permit2 nonce signed for the exact and for the upto proxy) are one claim.
 */
export const recordKey = (key: string) => `settlement:${key}`

/**
 * Whether this payment was settled without a transaction (an `upto` usage of zero). Nothing on
 * chain shows such a settlement, so verify asks the store, or a spent authorization would keep
 * verifying valid and buy the work again. A store that fails or is slow answers `false`: verify
 * needs no store to answer, and settle still refuses the repeat from its record.
 */
export async function settledWithoutTransaction(key: string, store: SettlementStore, boundMs: number): Promise<boolean> {
  try {
    const record = decodeSettlementRecord(await boundedStoreCall(() => store.get(recordKey(key)), boundMs, 'reading the settlement record'))
    // Whatever the fingerprint: the same authorization (its key) re-encoded (a key added, a number for a
    // string, the 64-byte form of the signature) is the same spent permit, and settle refuses it too.
    return record?.state === 'settled' && record.transaction === ''
  } catch {
    return false
  }
}
