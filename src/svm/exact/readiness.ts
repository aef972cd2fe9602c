import type { ReadinessCheck } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { resultOf } from '../rpc/solana-rpc.js'
import type { ExactSvmRuntime } from './runtime.js'

/** Per network: the RPC answers with the expected genesis hash; each fee payer holds enough lamports. */
export async function readiness(rt: ExactSvmRuntime, signal: AbortSignal): Promise<ReadinessCheck[]> {
  const checks = await Promise.all(
    [...rt.networks.values()].map(async (runtime): Promise<ReadinessCheck[]> => {
      const network = runtime.info.caip2
      const payers = [...rt.feePayers]
      try {
        const outcomes = await runtime.rpc.request(
          [{ method: 'getGenesisHash', params: [] }, ...payers.map((payer) => ({ method: 'getBalance', params: [payer, { commitment: 'confirmed' }] }))],
          signal,
        )
        const genesis = resultOf(outcomes[0], 'getGenesisHash')
        // A CAIP-2 Solana id is the first 32 characters of the genesis hash.
        const expected = network.slice('solana:'.length)
        const rpcCheck: ReadinessCheck =
          typeof genesis === 'string' && genesis.startsWith(expected)
            ? { name: `rpc ${network}`, ok: true }
            : { name: `rpc ${network}`, ok: false, detail: 'the RPC serves another chain (genesis hash differs)' }
        const payerChecks = payers.map((payer, index): ReadinessCheck => {
          const answer = resultOf(outcomes[index + 1], 'getBalance') as { value?: unknown } | undefined
          const lamports = typeof answer?.value === 'number' ? BigInt(answer.value) : undefined
          if (lamports === undefined) return { name: `fee payer ${payer} ${network}`, ok: false, detail: 'the balance could not be read' }
          const signer = { network, address: payer, balance: lamports.toString(), minimum: rt.minFeePayerLamports.toString() }
          return lamports >= rt.minFeePayerLamports
            ? { name: `fee payer ${payer} ${network}`, ok: true, detail: `${lamports} lamports`, signer }
            : { name: `fee payer ${payer} ${network}`, ok: false, detail: `${lamports} lamports, below ${rt.minFeePayerLamports}`, signer }
        })
        return [rpcCheck, ...payerChecks]
      } catch (error) {
        return [{ name: `rpc ${network}`, ok: false, detail: error instanceof FacilitatorError ? error.code : 'the RPC did not answer' }]
      }
    }),
  )
  return checks.flat()
}
