/**
 * A fixed-size latency histogram with logarithmic buckets: bucket `i` holds
 * durations up to `MIN_MS * GROWTH^i`. 8% growth gives quantiles within ±4%
 * of the true value from 0.05 ms to 10 minutes with 214 buckets, however many
 * samples are recorded: memory never grows with traffic, and buckets add up
 * across processes (they are plain counters in the store).
 */

/** Durations at or below this land in bucket 0. */
export const LATENCY_MIN_MS = 0.05
/** Ratio between the upper bounds of two neighbouring buckets. */
export const LATENCY_GROWTH = 1.08
/** Number of buckets; the last one also holds anything slower than ~10 minutes. */
export const LATENCY_BUCKETS = Math.ceil(Math.log(600_000 / LATENCY_MIN_MS) / Math.log(LATENCY_GROWTH)) + 1

const LOG_GROWTH = Math.log(LATENCY_GROWTH)

/**
 * The bucket of a duration.
 *
 * @example
 * import { latencyBucket } from './latency-histogram.js'
 *
 * latencyBucket(0.01) // 0
 * latencyBucket(12)   // 72
 */
export function latencyBucket(ms: number): number {
  if (!(ms > LATENCY_MIN_MS)) return 0
  const index = Math.ceil(Math.log(ms / LATENCY_MIN_MS) / LOG_GROWTH)
  return index >= LATENCY_BUCKETS ? LATENCY_BUCKETS - 1 : index
}

/** The duration a bucket stands for: the geometric middle of its bounds. */
export function latencyBucketValue(index: number): number {
  if (index <= 0) return LATENCY_MIN_MS
  return LATENCY_MIN_MS * LATENCY_GROWTH ** (index - 0.5)
}

/** Median and tail of a set of durations, in milliseconds. */
export interface LatencySummary {
  count: number
  p50Ms: number
  p95Ms: number
  p99Ms: number
}

/** A histogram being merged or queried in memory. */
export interface LatencyHistogram {
  /** Adds `count` samples to a bucket (from the store). */
  addBucket(index: number, count: number): void
  /** Adds one measured duration. */
  record(ms: number): void
  readonly count: number
  /** The q-quantile (0..1) in ms, or undefined when empty. */
  quantile(q: number): number | undefined
  /** Count and p50/p95/p99, or undefined when empty. */
  summary(): LatencySummary | undefined
}

/**
 * An empty histogram.
 *
 * @example
 * import { createLatencyHistogram } from './latency-histogram.js'
 *
 * const h = createLatencyHistogram()
 * for (const ms of [3, 5, 8, 400]) h.record(ms)
 * h.quantile(0.5) // ≈ 5
 */
export function createLatencyHistogram(): LatencyHistogram {
  const counts = new Float64Array(LATENCY_BUCKETS)
  let total = 0
  const quantile = (q: number) => {
    if (total === 0) return undefined
    // Nearest-rank: the smallest bucket whose cumulative count reaches q of the total.
    const rank = Math.max(1, Math.ceil(q * total))
    let seen = 0
    for (let i = 0; i < LATENCY_BUCKETS; i++) {
      seen += counts[i]!
      if (seen >= rank) return round(latencyBucketValue(i))
    }
    return round(latencyBucketValue(LATENCY_BUCKETS - 1))
  }
  return {
    addBucket(index, count) {
      if (!Number.isInteger(index) || index < 0 || index >= LATENCY_BUCKETS || !(count > 0)) return
      counts[index]! += count
      total += count
    },
    record(ms) {
      counts[latencyBucket(ms)]! += 1
      total += 1
    },
    get count() {
      return total
    },
    quantile,
    summary() {
      if (total === 0) return undefined
      return { count: total, p50Ms: quantile(0.5)!, p95Ms: quantile(0.95)!, p99Ms: quantile(0.99)! }
    },
  }
}

// Two decimals of a millisecond is finer than the buckets themselves.
const round = (ms: number) => Math.round(ms * 100) / 100
