import { isPendingSettlement } from '../errors/reasons.js'
import { chargedAmount, type FacilitatorHooks, type RefusalEvent, type SettleEvent, type VerifyEvent } from '../core/hooks.js'
import { requireStoreRole } from '../stores/store-roles.js'
import type { StatsStore } from '../stores/store.js'
import { latencyBucket } from './latency-histogram.js'
import { refusalOf } from './refusals.js'
import {
  DAY_TTL_MS,
  dayKey,
  HOUR_MS,
  HOUR_TTL_MS,
  hourKey,
  MINUTE_MS,
  MINUTE_TTL_MS,
  minuteKey,
  onceKey,
  payersKey,
  refusalField,
  splitAmount,
  STATS_ALL_KEY,
  UNSUPPORTED_NETWORK,
  utcDay,
} from './stats-keys.js'

/** Options of the statistics recorder. */
export interface StatsRecorderOptions {
  /** Where counters live, a `StatsStore`; share it between instances so their statistics add up. */
  store: StatsStore
  /** Clock in milliseconds. @default Date.now */
  now?: () => number
  /**
   * How long a settled transaction is remembered so that a repeated settle of
   * the same payment (which answers the recorded transaction) is not counted
   * twice. Match your settlement record lifetime. @default 7 days
   */
  dedupeTtlMs?: number
}

const isEmpty = (fields: Record<string, number>) => {
  for (const _ in fields) return false
  return true
}

// Assets end up in field names: anything else is not an address or mint.
const ASSET_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * After-hooks that count verifications and settlements, volume, distinct
 * payers and response times into time-bucketed counters in the store. One
 * event costs four hash increments (plus, for a successful settle, one claim
 * and three sketch updates), all started at once and never awaited by the
 * payment answer.
 *
 * A request refused before the payment checks (see `refusalOf`: an unsupported
 * kind or version, a mismatched or malformed body) is counted apart, as one
 * refusal of its kind (three increments, no response time): it is in no
 * verification or settlement count and in no success rate. Fields are keyed by
 * the network an adapter served, or `unsupported`: never by a name a client
 * wrote, so memory stays bounded whatever requests arrive.
 *
 * @example
 * // partial
 * const store = createMemoryStore()
 * const facilitator = createFacilitator({ schemes, store, hooks: [createStatsRecorder({ store })] })
 */
export function createStatsRecorder(options: StatsRecorderOptions): FacilitatorHooks {
  requireStoreRole(options.store, 'statistics', 'createStatsRecorder')
  const { store } = options
  const now = options.now ?? Date.now
  const dedupeTtlMs = options.dedupeTtlMs ?? 7 * 86_400_000

  // The day changes once a day: remember it per hour instead of formatting a date per event.
  let buckets = { hour: -1, day: '', dayKey: '' }
  const bucketsOf = (time: number) => {
    const hour = Math.floor(time / HOUR_MS)
    if (buckets.hour !== hour) {
      const day = utcDay(time)
      buckets = { hour, day, dayKey: dayKey(day) }
    }
    return buckets
  }

  /** Writes one event's usage and latency fields into every time bucket, all at once. */
  function write(time: number, usage: Record<string, number>, latency: Record<string, number>): Promise<unknown> {
    const { hour, dayKey: dayBucket } = bucketsOf(time)
    const both = Object.assign({}, usage, latency)
    const writes = [store.incrementFields(STATS_ALL_KEY, both), store.incrementFields(hourKey(hour), both, { ttlMs: HOUR_TTL_MS })]
    if (!isEmpty(latency)) writes.push(store.incrementFields(minuteKey(Math.floor(time / MINUTE_MS)), latency, { ttlMs: MINUTE_TTL_MS }))
    if (!isEmpty(usage)) writes.push(store.incrementFields(dayBucket, usage, { ttlMs: DAY_TTL_MS }))
    return Promise.all(writes)
  }

  /** Counts a refusal before the payment checks, if the event is one (then answers its writes). */
  function refused(event: VerifyEvent | SettleEvent | RefusalEvent): Promise<unknown> | undefined {
    const kind = refusalOf(event)
    if (!kind) return undefined
    const network = ('context' in event && event.context?.network) || UNSUPPORTED_NETWORK
    return write(now(), { [refusalField(event.operation, network, kind)]: 1 }, {})
  }

  return {
    async afterRefusal(event: RefusalEvent) {
      await refused(event)
    },

    async afterVerify(event: VerifyEvent) {
      const refusal = refused(event)
      if (refusal) return void (await refusal)
      const network = event.context?.network ?? UNSUPPORTED_NETWORK
      const outcome = event.fault ? 'error' : event.result.isValid ? 'valid' : 'invalid'
      await write(now(), { [`v|${network}|${outcome}`]: 1 }, { [`lat|verify|${network}|${latencyBucket(event.durationMs)}`]: 1 })
    },

    async afterSettle(event: SettleEvent) {
      const refusal = refused(event)
      if (refusal) return void (await refusal)
      const time = now()
      const context = event.context
      const network = context?.network ?? UNSUPPORTED_NETWORK
      const { result } = event
      const latency: Record<string, number> = { [`lat|settle|${network}|${latencyBucket(event.durationMs)}`]: 1 }
      const confirmationMs = context?.timings.confirmationMs
      if (result.success && typeof confirmationMs === 'number' && Number.isFinite(confirmationMs)) {
        latency[`lat|confirm|${network}|${latencyBucket(confirmationMs)}`] = 1
      }

      const usage: Record<string, number> = {}
      let payer: string | undefined
      if (event.fault) usage[`s|${network}|error`] = 1
      else if (!result.success && isPendingSettlement(result.errorReason)) usage[`s|${network}|pending`] = 1
      else if (event.origin === 'recorded' && !(result.success && result.transaction)) {
        // Answered from another call's record (a refusal, a failure): that call counts the outcome.
        // A success answered from the record is counted below, once per transaction, by whichever
        // hook comes first: the call that settled it may have died (`kill -9`) before its own hook ran.
      } else if (result.transaction && !(await store.set(onceKey(network, result.transaction), '1', { ifAbsent: true, ttlMs: dedupeTtlMs }))) {
        // A repeated settle answered from the record: this payment is already counted.
      } else if (result.success) {
        usage[`s|${network}|ok`] = 1
        if (context && ASSET_PATTERN.test(context.asset)) {
          const { hi, lo } = splitAmount(chargedAmount(result, context))
          const base = `vol|${network}|${context.asset}`
          usage[`${base}|hi`] = hi
          usage[`${base}|lo`] = lo
          usage[`${base}|n`] = 1
        }
        payer = result.payer
      } else {
        usage[`s|${network}|fail`] = 1
      }

      const writes: Promise<unknown>[] = [write(time, usage, latency)]
      if (payer && context) {
        // EVM addresses are case-insensitive; the sketch keeps no address, only register maxima.
        const member = network.startsWith('eip155:') ? payer.toLowerCase() : payer
        const { hour, day } = bucketsOf(time)
        writes.push(
          store.addDistinct(payersKey('all', network), [member]),
          store.addDistinct(payersKey(`h:${hour}`, network), [member], { ttlMs: HOUR_TTL_MS }),
          store.addDistinct(payersKey(`d:${day}`, network), [member], { ttlMs: DAY_TTL_MS }),
        )
      }
      await Promise.all(writes)
    },
  }
}
