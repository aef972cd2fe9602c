import type { SettleResponse } from '../schemas/messages.js'
import { IN_FLIGHT_TTL_MS, indexInFlight, inFlightAt, inFlightMinute } from '../settlement/in-flight.js'
import type { ReconcileOptions } from '../settlement/settlement-options.js'
import { decodeSettlementRecord } from '../settlement/settlement-record.js'
import { boundedStoreCall } from '../settlement/bounded-store-call.js'
import type { SettlementStore } from '../stores/store.js'

interface ReconcilerInput {
  store: SettlementStore
  /** The facilitator's settle, without its before-hooks (they admitted the payment when it was first settled). */
  settle(body: unknown): Promise<SettleResponse>
  options: ReconcileOptions | undefined
  /** Bound of each store call. */
  boundMs: number
  onError(error: unknown): void
}

/** Most settlements one pass finishes: the rest wait for the next pass, so a backlog never floods the chain or the store. */
const MAX_PER_PASS = 64
/** Settlements one pass finishes at once. */
const AT_ONCE = 8

/**
 * Finishes settlements whose caller is gone. Every pass reads the in-flight index of the last hour
 * (one store read per minute) and settles again, from its journaled request, each settlement still
 * `broadcast` whose lease ran out: the settle takes it over (resume: confirmed, failed, or checked
 * and sent anew when it never reached the chain), records its outcome and runs the after-hooks, as
 * a caller's retry would. Instances sharing a store may run passes at once: the takeover lock lets
 * one of them resume a settlement, and the after-hooks count a transaction once.
 */
export function startReconciler(input: ReconcilerInput): { pass(): Promise<number>; stop(): Promise<void> } {
  const intervalMs = input.options?.intervalMs ?? 30_000
  const minAgeMs = input.options?.minAgeMs ?? 15_000
  const { store, boundMs } = input
  let running: Promise<number> | undefined
  let stopped = false

  async function reconcile(): Promise<number> {
    const now = Date.now()
    const due: unknown[] = []
    for (let minute = inFlightMinute(now - IN_FLIGHT_TTL_MS); minute <= inFlightMinute(now - minAgeMs) && due.length < MAX_PER_PASS; minute++) {
      for (const [recordKey, count] of await inFlightAt(store, minute, boundMs)) {
        if (stopped || due.length >= MAX_PER_PASS) break
        const record = decodeSettlementRecord(await boundedStoreCall(() => store.get(recordKey), boundMs, 'reading the settlement record'))
        // Still being claimed by its caller (the index is written beside the journal): the next pass looks again.
        if (record?.state === 'claimed') continue
        if (record?.state !== 'broadcast' || record.minute !== minute || record.request === undefined) {
          // Recorded, gone, or journaled again in another minute: this minute no longer names it.
          await indexInFlight(store, minute, recordKey, -count, boundMs)
          continue
        }
        // Its caller still holds it (renewing the lease): left alone.
        if (record.leaseUntil <= Date.now()) due.push(record.request)
      }
    }
    // A few at a time: each may wait for its confirmation up to the settle budget.
    for (let next = 0; next < due.length && !stopped; next += AT_ONCE) {
      await Promise.all(due.slice(next, next + AT_ONCE).map((request) => input.settle(request).catch(input.onError)))
    }
    return due.length
  }

  /** One pass, never two at once. Answers how many settlements it took up. */
  function pass(): Promise<number> {
    running ??= reconcile()
      .catch((error: unknown) => {
        input.onError(error)
        return 0
      })
      .finally(() => {
        running = undefined
      })
    return running
  }

  const timer = setInterval(() => void pass(), intervalMs)
  ;(timer as { unref?: () => void }).unref?.()
  return {
    pass,
    async stop() {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
