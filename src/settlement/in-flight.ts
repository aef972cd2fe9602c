import type { SettlementStore } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'

/**
 * The settlements whose transaction was journaled and whose outcome is not recorded yet, indexed by
 * the minute the journal was written: a numeric hash per minute, one field per settlement record
 * (+1 when journaled, -1 once its outcome is recorded). A caller that died and never retries
 * leaves its field at 1, and the reconciler (facilitator/reconciler.ts) finishes the settlement
 * from its journal, so its ledger row and statistics are written although nobody asked again.
 */
export const IN_FLIGHT_MINUTE_MS = 60_000

/** How long a minute's index lives: settlements journaled longer ago are left to a caller's retry. */
export const IN_FLIGHT_TTL_MS = 60 * IN_FLIGHT_MINUTE_MS

export const inFlightMinute = (at: number) => Math.floor(at / IN_FLIGHT_MINUTE_MS)

export const inFlightKey = (minute: number) => `settlements-in-flight:${minute}`

/** Adds (`by` > 0) or removes (`by` < 0) a settlement record from its minute's index; best effort, bounded. */
export function indexInFlight(store: SettlementStore, minute: number, recordKey: string, by: number, boundMs: number): Promise<void> {
  // A dictionary object: a literal `{ [recordKey]: by }` gives V8 a new hidden class for every record key (each one unique).
  const increments: Record<string, number> = Object.create(null)
  increments[recordKey] = by
  return boundedStoreCall(
    () => store.incrementFields(inFlightKey(minute), increments, { ttlMs: IN_FLIGHT_TTL_MS }),
    boundMs,
    by > 0 ? 'indexing the journaled settlement' : 'unindexing the recorded settlement',
  ).catch(() => undefined)
}

/** The settlement records a minute's index still names, with their count (above zero). */
export async function inFlightAt(store: SettlementStore, minute: number, boundMs: number): Promise<[recordKey: string, count: number][]> {
  const fields = await boundedStoreCall(() => store.readFields(inFlightKey(minute)), boundMs, 'reading the journaled settlements')
  return Object.entries(fields).filter(([, count]) => count > 0)
}
