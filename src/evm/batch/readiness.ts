/** `GET /readyz` lines of one batch-settlement network: the RPC's chain, the three contracts, the signers' gas money. */
import type { ReadinessCheck } from '../../core/adapter.js'
import type { BatchChain, BatchSettlementSigner } from './chain.js'
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from './constants.js'

const CONTRACTS = [
  ['x402BatchSettlement', BATCH_SETTLEMENT_ADDRESS],
  ['erc3009 deposit collector', ERC3009_DEPOSIT_COLLECTOR_ADDRESS],
  ['permit2 deposit collector', PERMIT2_DEPOSIT_COLLECTOR_ADDRESS],
] as const

export async function batchReadiness(network: string, chain: BatchChain, signers: readonly BatchSettlementSigner[]): Promise<ReadinessCheck[]> {
  const why = (error: unknown) => (error instanceof Error ? error.name : 'failed')
  const served = await chain.client.getChainId().catch((error: unknown) => ({ error }))
  if (typeof served !== 'number') return [{ name: `rpc ${network}`, ok: false, detail: why(served.error) }]
  const checks: ReadinessCheck[] = [served === chain.chainId ? { name: `rpc ${network}`, ok: true } : { name: `rpc ${network}`, ok: false, detail: `the RPC serves chain ${served}, not ${chain.chainId}` }]
  for (const [label, address] of CONTRACTS) {
    const code = await chain.client.getCode({ address }).catch(() => undefined)
    checks.push(code && code !== '0x' ? { name: `${label} ${network}`, ok: true } : { name: `${label} ${network}`, ok: false, detail: `no contract at ${address}` })
  }
  for (const signer of signers) {
    const name = `signer ${signer.address} ${network}`
    const wei = await chain.client.getBalance({ address: signer.address }).catch(() => undefined)
    if (wei === undefined) checks.push({ name, ok: false, detail: 'the balance could not be read' })
    else checks.push({ name, ok: wei > 0n, detail: `${wei} wei`, signer: { network, address: signer.address, balance: wei.toString(), minimum: '1' } })
  }
  return checks
}
