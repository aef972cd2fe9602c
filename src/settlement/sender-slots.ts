import type { BroadcastRecord, SenderSlot } from '../core/adapter.js'
import type { SettlementStore } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'
import { identity } from './identity.js'
import { decodeSettlementRecord } from './settlement-record.js'

/** Where the settlement record of a sender's sequence number is named. */
export const slotKey = (slot: SenderSlot) => `sender-slot:${identity(slot.sender)}:${slot.sequence}`

/** Longest run of journaled sequence numbers one lookup follows (a signer's sends in flight are far fewer). */
const MAX_JOURNALED_RUN = 64

/**
 * How long a sender slot points at its record: a transaction journaled longer ago has landed, or its
 * authorization has likely expired and its retry checks it anew. Short, so slots take little of a store.
 */
export const SENDER_SLOT_TTL_MS = 10 * 60_000

/**
 * The transactions journaled for `sender` from `fromSequence` on whose outcome is not known
 * (records still `broadcast`), in order, stopping at the first number with none. A number whose
 * record has landed or failed ends the run too: the chain has then used it.
 */
export async function journaledTransactions(store: SettlementStore, sender: string, fromSequence: number, boundMs = 5_000): Promise<(BroadcastRecord & { slot: SenderSlot })[]> {
  const found: (BroadcastRecord & { slot: SenderSlot })[] = []
  for (let sequence = fromSequence; sequence < fromSequence + MAX_JOURNALED_RUN; sequence++) {
    const slot = { sender, sequence }
    const recordAt = await boundedStoreCall(() => store.get(slotKey(slot)), boundMs, 'reading the sender slot')
    if (recordAt === undefined) break
    const record = decodeSettlementRecord(await boundedStoreCall(() => store.get(recordAt), boundMs, 'reading the settlement record'))
    if (record?.state !== 'broadcast' || record.slot?.sequence !== sequence || identity(record.slot.sender) !== identity(sender)) break
    found.push({ transaction: record.transaction, ...(record.raw === undefined ? {} : { raw: record.raw }), slot })
  }
  return found
}
