/**
 * Where statistics live in the store. Counters are bucketed by time so that
 * windows are sums of buckets, old buckets expire on their own, and several
 * facilitators sharing one store add up without coordination:
 *
 * - `stats:all`            all-time usage and latency counters (no expiry)
 * - `stats:d:<YYYY-MM-DD>` usage per UTC day, kept 32 days (daily series)
 * - `stats:h:<hour>`       usage and latency per hour, kept 26 h (last 24 h)
 * - `stats:m:<minute>`     latency per minute, kept 62 min (1 m, 5 m, 1 h windows)
 * - `stats:payers:<scope>:<network>` distinct-payer sketches for the same scopes
 *
 * Field names: `v|<network>|<outcome>`, `s|<network>|<outcome>`,
 * `vol|<network>|<asset>|<hi|lo|n>`, `lat|<operation>|<network>|<bucket>`, and
 * `r|<operation>|<network>|<kind>` for requests refused before the payment checks
 * (see `refusalOf`). `<network>` is always the CAIP-2 id of a network an adapter
 * served, or `unsupported` for requests no adapter served: never a name a
 * client wrote, so junk requests add no field. (Versions before the `r|` fields
 * counted those as `v|unsupported|…` and `s|unsupported|…`; the reader counts
 * such fields as refusals of an unsupported kind.)
 */

export const MINUTE_MS = 60_000
export const HOUR_MS = 3_600_000
export const DAY_MS = 86_400_000

export const STATS_ALL_KEY = 'stats:all'
export const MINUTE_TTL_MS = 62 * MINUTE_MS
export const HOUR_TTL_MS = 26 * HOUR_MS
export const DAY_TTL_MS = 32 * DAY_MS

export const minuteKey = (minute: number) => `stats:m:${minute}`
export const hourKey = (hour: number) => `stats:h:${hour}`
export const dayKey = (day: string) => `stats:d:${day}`
export const payersKey = (scope: string, network: string) => `stats:payers:${scope}:${network}`
export const onceKey = (network: string, transaction: string) => `stats:once:${network}:${transaction}`

/** The UTC date of a time, `YYYY-MM-DD`. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** Network label of events that never reached an adapter: their network is untrusted input. */
export const UNSUPPORTED_NETWORK = 'unsupported'

/** The field counting one refusal before the payment checks. */
export const refusalField = (operation: 'verify' | 'settle', network: string, kind: string) => `r|${operation}|${network}|${kind}`

/**
 * Amounts are kept as two integer counters, `hi` (whole 1e9 units) and `lo`
 * (the remainder), because a store counter is a double: one 53-bit field
 * would lose precision for 18-decimal tokens. The pair is exact until about
 * nine million payments per key and close to it beyond.
 */
export const AMOUNT_SPLIT = 1_000_000_000n

export function splitAmount(amount: bigint): { hi: number; lo: number } {
  return { hi: Number(amount / AMOUNT_SPLIT), lo: Number(amount % AMOUNT_SPLIT) }
}

export function joinAmount(hi: number, lo: number): bigint {
  return BigInt(Math.round(hi)) * AMOUNT_SPLIT + BigInt(Math.round(lo))
}
