import type { ReadinessCheck } from '../../core/adapter.js'
import { withDeadline } from '../../core/deadline.js'
import type { NetworkRuntime } from './network-runtime.js'
import { toRpcFault } from './rpc-fault.js'

/**
 * One network's readiness, in one parallel round: the RPC answers with the configured chain id,
 * Multicall3 has code where configured (every verify calls it), each signer holds at least
 * `minBalance` wei. Never throws; never names an RPC URL.
 */
export async function networkReadiness(runtime: NetworkRuntime, minBalance: bigint, signal: AbortSignal): Promise<ReadinessCheck[]> {
  const network = runtime.network.caip2
  const ask = <T>(request: Promise<T>) => withDeadline(request, signal).then((value) => ({ value }), (error: unknown) => ({ error }))
  const [chainId, code, ...balances] = await Promise.all([
    ask(runtime.client.request({ method: 'eth_chainId' })),
    ask(runtime.client.request({ method: 'eth_getCode', params: [runtime.multicall3, 'latest'] })),
    ...runtime.signers.map((slot) => ask(runtime.client.request({ method: 'eth_getBalance', params: [slot.signer.address, 'latest'] }))),
  ])
  const why = (outcome: { error: unknown }) => (signal.aborted ? 'timeout' : toRpcFault(outcome.error, 'checking readiness').code)
  const checks: ReadinessCheck[] = []
  if ('error' in chainId!) {
    checks.push({ name: `rpc ${network}`, ok: false, detail: why(chainId) })
    return checks
  }
  const served = Number(BigInt(chainId.value as string))
  checks.push(served === runtime.chainId ? { name: `rpc ${network}`, ok: true } : { name: `rpc ${network}`, ok: false, detail: `the RPC serves chain ${served}, not ${runtime.chainId}` })
  checks.push(
    'error' in code!
      ? { name: `multicall3 ${network}`, ok: false, detail: why(code) }
      : code.value && code.value !== '0x'
        ? { name: `multicall3 ${network}`, ok: true }
        : { name: `multicall3 ${network}`, ok: false, detail: `no contract at ${runtime.multicall3}: deploy Multicall3 there or set the network's multicall3 option` },
  )
  runtime.signers.forEach((slot, index) => {
    const name = `signer ${slot.signer.address} ${network}`
    const balance = balances[index]!
    if ('error' in balance) return checks.push({ name, ok: false, detail: why(balance) })
    const wei = BigInt(balance.value as string)
    const signer = { network, address: slot.signer.address, balance: wei.toString(), minimum: minBalance.toString() }
    checks.push(wei >= minBalance ? { name, ok: true, detail: `${wei} wei`, signer } : { name, ok: false, detail: `${wei} wei, below ${minBalance}`, signer })
  })
  return checks
}
