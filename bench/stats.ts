/**
 * Statistics: the cost of recording one event and the memory held after one
 * million. Runs only when the stats recorder is exported from the core entry
 * (src/index.ts); until then the rows say "not available".
 */
import { progress, row, type Row } from './measure.js'

export const STATS_COUNTS = { events: 1_000_000 }

export async function benchStats(): Promise<Row[]> {
  const core = (await import('../src/index.js')) as Record<string, unknown>
  const create = core.createStatsRecorder
  if (typeof create !== 'function') {
    const note = 'not available: the stats recorder is not exported from src/index.ts yet'
    progress(`statistics: ${note}`)
    return [row('Statistics', 'cost of recording one event', 'µs/event', 'lower', null, null, note), row('Statistics', 'memory held after 1,000,000 events', 'MiB', 'lower', null, null, note)]
  }
  progress(`statistics: recording ${STATS_COUNTS.events.toLocaleString('en-US')} events`)
  const store = (core.createMemoryStore as () => unknown)()
  const recorder = (create as (options: { store: unknown }) => { afterVerify?: (event: unknown) => unknown }) ({ store })
  const event = (i: number) => ({
    operation: 'verify',
    request: { x402Version: 2, paymentPayload: {}, paymentRequirements: { scheme: 'exact', network: 'eip155:8453', amount: '1000', asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', payTo: `0x${(i % 1000).toString(16).padStart(40, '0')}`, maxTimeoutSeconds: 60 } },
    result: { isValid: true, payer: `0x${(i % 5000).toString(16).padStart(40, '0')}` },
    durationMs: (i % 100) / 10,
  })
  global.gc?.()
  const before = process.memoryUsage().heapUsed
  const started = performance.now()
  for (let i = 0; i < STATS_COUNTS.events; i++) {
    const outcome = recorder.afterVerify?.(event(i))
    if (outcome instanceof Promise) await outcome
  }
  const perEvent = ((performance.now() - started) * 1000) / STATS_COUNTS.events
  global.gc?.()
  const held = (process.memoryUsage().heapUsed - before) / 2 ** 20
  return [row('Statistics', 'cost of recording one event', 'µs/event', 'lower', perEvent), row('Statistics', 'memory held after 1,000,000 events', 'MiB', 'lower', held, null, global.gc ? undefined : 'without --expose-gc: an upper bound')]
}
