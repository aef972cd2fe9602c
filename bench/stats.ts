/**
 * Statistics: the cost of recording one event and the memory held after one
 * million.
 */
import { createMemoryStore, type PaymentRequest, type VerifyEvent } from '../src/index.js'
import { createStatsRecorder } from '../src/stats/stats-recorder.js'
import { createMetrics } from '../src/ops/metrics.js'
import { progress, row, type Row } from './measure.js'

export const STATS_COUNTS = { events: 1_000_000 }

export async function benchStats(): Promise<Row[]> {
  progress(`statistics: recording ${STATS_COUNTS.events.toLocaleString('en-US')} events`)
  const recorder = createStatsRecorder({ store: createMemoryStore() })
  // Events as a request that never reached an adapter (no context): what this figure has always measured.
  const event = (i: number): VerifyEvent => ({
    operation: 'verify',
    context: undefined,
    request: { x402Version: 2, paymentPayload: {}, paymentRequirements: { scheme: 'exact', network: 'eip155:8453', amount: '1000', asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', payTo: `0x${(i % 1000).toString(16).padStart(40, '0')}`, maxTimeoutSeconds: 60 } } as unknown as PaymentRequest,
    result: { isValid: true, payer: `0x${(i % 5000).toString(16).padStart(40, '0')}` },
    durationMs: (i % 100) / 10,
  })
  global.gc?.()
  const before = process.memoryUsage().heapUsed
  const started = performance.now()
  for (let i = 0; i < STATS_COUNTS.events; i++) {
    await recorder.afterVerify?.(event(i))
  }
  const perEvent = ((performance.now() - started) * 1000) / STATS_COUNTS.events
  global.gc?.()
  const held = (process.memoryUsage().heapUsed - before) / 2 ** 20
  // Prometheus metrics: the hook a verify runs when createMetrics() is installed (a counter and a histogram).
  const metrics = createMetrics()
  const metricEvents = 200_000
  const metricsStarted = performance.now()
  for (let i = 0; i < metricEvents; i++) metrics.hooks.afterVerify?.(event(i))
  const perMetric = ((performance.now() - metricsStarted) * 1000) / metricEvents
  metrics.close()
  return [
    row('Statistics', 'cost of recording one event', 'µs/event', 'lower', perEvent),
    row('Statistics', 'memory held after 1,000,000 events', 'MiB', 'lower', held, null, global.gc ? undefined : 'without --expose-gc: an upper bound'),
    row('Metrics', 'cost of the metrics hook of one verify (prom-client)', 'µs/event', 'lower', perMetric, null, 'target < 2 % of an in-process verify (EVM CPU per verify in the EVM rows)'),
  ]
}
