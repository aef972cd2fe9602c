import { describe, expect, it } from 'vitest'
import { createLatencyHistogram, LATENCY_BUCKETS, latencyBucket, latencyBucketValue } from '../../src/stats/latency-histogram.js'

// A deterministic generator, so a failure can be replayed.
function lcg(seed: number) {
  let s = seed >>> 0
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32)
}

function exactQuantile(sorted: number[], q: number) {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!
}

describe('latency histogram', () => {
  it('answers p50/p95/p99 within 4% of the exact quantiles of a long-tailed sample', () => {
    const random = lcg(7)
    // Log-normal-ish response times: a body around 20 ms with a tail into seconds.
    const samples = Array.from({ length: 50_000 }, () => 20 * Math.exp(1.2 * (random() + random() + random() - 1.5) * 1.6))
    const histogram = createLatencyHistogram()
    for (const ms of samples) histogram.record(ms)
    const sorted = [...samples].sort((a, b) => a - b)
    for (const q of [0.5, 0.95, 0.99]) {
      const exact = exactQuantile(sorted, q)
      expect(Math.abs(histogram.quantile(q)! - exact) / exact).toBeLessThan(0.04)
    }
    expect(histogram.summary()?.count).toBe(50_000)
  })

  it('has a fixed number of buckets covering 0.05 ms to 10 minutes', () => {
    expect(LATENCY_BUCKETS).toBeLessThan(250)
    expect(latencyBucket(0)).toBe(0)
    expect(latencyBucket(-5)).toBe(0)
    expect(latencyBucket(Number.NaN)).toBe(0)
    expect(latencyBucket(3_600_000)).toBe(LATENCY_BUCKETS - 1)
    for (let i = 1; i < LATENCY_BUCKETS; i++) expect(latencyBucket(latencyBucketValue(i))).toBe(i)
  })

  it('merges bucket counts read from a store and ignores garbage', () => {
    const histogram = createLatencyHistogram()
    histogram.addBucket(latencyBucket(10), 99)
    histogram.addBucket(latencyBucket(1000), 1)
    histogram.addBucket(-1, 5)
    histogram.addBucket(1.5, 5)
    histogram.addBucket(LATENCY_BUCKETS, 5)
    expect(histogram.count).toBe(100)
    expect(histogram.quantile(0.5)).toBeCloseTo(10, -0.5)
    expect(histogram.quantile(0.995)).toBeCloseTo(1000, -2)
    expect(createLatencyHistogram().summary()).toBeUndefined()
  })
})
