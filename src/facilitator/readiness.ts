import type { ReadinessCheck, SchemeAdapter } from '../core/adapter.js'
import { withDeadline } from '../core/deadline.js'
import type { SettlementStore } from '../stores/store.js'

/**
 * Whether a facilitator can serve payments now (see `Facilitator.readiness`): the store answers a
 * write and a read, and each adapter's own checks pass, all within `timeoutMs`.
 */
export async function readiness(
  store: SettlementStore,
  adapters: readonly SchemeAdapter[],
  timeoutMs: number,
  closed: () => boolean,
): Promise<{ ready: boolean; checks: ReadinessCheck[] }> {
  const signal = AbortSignal.timeout(timeoutMs)
  const storeCheck = async (): Promise<ReadinessCheck[]> => {
    const key = `readiness:${process.pid}:${Math.random().toString(36).slice(2)}`
    try {
      await withDeadline(store.set(key, '1', { ttlMs: 10_000 }), signal)
      const read = await withDeadline(store.get(key), signal)
      return [{ name: 'store', ok: read === '1', ...(read === '1' ? {} : { detail: 'a value written was not read back' }) }]
    } catch {
      return [{ name: 'store', ok: false, detail: signal.aborted ? `no answer within ${timeoutMs} ms` : 'the store failed a write or a read' }]
    }
  }
  // Adapters stop a little before the deadline, so that a hung RPC is reported under the adapter's own check
  // names (`rpc <network>`), as a refused one is; past the deadline, each network's `rpc` check fails.
  const adapterSignal = AbortSignal.timeout(Math.max(1, timeoutMs - Math.min(250, timeoutMs / 10)))
  const adapterChecks = (adapter: SchemeAdapter): Promise<ReadinessCheck[]> =>
    adapter.readiness
      ? withDeadline(adapter.readiness(adapterSignal), signal).catch(() =>
          adapter.networks.map((network) => ({ name: `rpc ${network.caip2}`, ok: false, detail: `no answer within ${timeoutMs} ms` })),
        )
      : Promise.resolve([])
  const checks = (await Promise.all([storeCheck(), ...adapters.map(adapterChecks)])).flat()
  return { ready: !closed() && checks.every((check) => check.ok), checks }
}
