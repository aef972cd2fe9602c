import { lamports } from '@solana/kit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError, REJECTION } from '../../src/index.js'
import { exactEvm, signExactEvmPayment, type ExactEvmConfig } from '../../src/evm/index.js'
import { evmAdapterConfig } from '../../src/evm/exact-evm-options.js'
import { createHttpRpcTransport, exactSvm, type ExactSvmConfig } from '../../src/svm/index.js'
import { svmAdapterConfig } from '../../src/svm/exact-svm-options.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { fundedSigner, startSolanaTestRpc } from '../support/svm-fixtures.js'

// exactEvm and exactSvm share a name where an option means the same on both chains; the old
// names still work (deprecated), and the two set to different values are refused.
const misconfigured = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return error instanceof FacilitatorError ? error.code : error
  }
  return 'no error'
}

describe('shared option names: the mapping', () => {
  it('exactEvm reads confirmTimeoutMs and confirmPollIntervalMs, and their old names receiptTimeoutMs and receiptPollIntervalMs', () => {
    const base = { networks: [] } satisfies ExactEvmConfig
    expect(evmAdapterConfig({ ...base, confirmTimeoutMs: 1_234, confirmPollIntervalMs: 56 })).toEqual({ ...base, receiptTimeoutMs: 1_234, receiptPollIntervalMs: 56 })
    expect(evmAdapterConfig({ ...base, receiptTimeoutMs: 1_234, receiptPollIntervalMs: 56 })).toEqual({ ...base, receiptTimeoutMs: 1_234, receiptPollIntervalMs: 56 })
    expect(evmAdapterConfig({ ...base, confirmTimeoutMs: 7, receiptTimeoutMs: 7 })).toEqual({ ...base, receiptTimeoutMs: 7 })
    expect(evmAdapterConfig(base)).toEqual(base)
    expect(misconfigured(() => evmAdapterConfig({ ...base, confirmTimeoutMs: 1, receiptTimeoutMs: 2 }))).toBe('misconfigured')
    expect(misconfigured(() => evmAdapterConfig({ ...base, confirmPollIntervalMs: 1, receiptPollIntervalMs: 2 }))).toBe('misconfigured')
  })

  it('exactSvm reads confirmPollIntervalMs, minSignerBalance and transport, and their old names pollIntervalMs, minFeePayerLamports and rpc', () => {
    const transport = (network: { urls: readonly string[] }) => createHttpRpcTransport({ urls: network.urls })
    const base = { networks: [], feePayers: [] } satisfies ExactSvmConfig
    const mapped = { ...base, pollIntervalMs: 5, minFeePayerLamports: 9n, rpc: transport }
    expect(svmAdapterConfig({ ...base, confirmPollIntervalMs: 5, minSignerBalance: 9n, transport })).toEqual(mapped)
    expect(svmAdapterConfig({ ...base, pollIntervalMs: 5, minFeePayerLamports: 9n, rpc: transport })).toEqual(mapped)
    expect(svmAdapterConfig({ ...base, confirmTimeoutMs: 100 })).toEqual({ ...base, confirmTimeoutMs: 100 })
    expect(misconfigured(() => svmAdapterConfig({ ...base, confirmPollIntervalMs: 1, pollIntervalMs: 2 }))).toBe('misconfigured')
    expect(misconfigured(() => svmAdapterConfig({ ...base, minSignerBalance: 1n, minFeePayerLamports: 2n }))).toBe('misconfigured')
    expect(misconfigured(() => svmAdapterConfig({ ...base, transport, rpc: (network) => transport(network) }))).toBe('misconfigured')
  })
})

describe('shared option names on a chain', () => {
  let world: EvmFixture
  let chain: LiteSvmRpc
  beforeAll(async () => {
    ;[world, chain] = await Promise.all([startEvmFixture(), startSolanaTestRpc()])
  })
  afterAll(async () => {
    await Promise.all([world?.stop(), chain?.close()])
  })

  it.each([
    ['confirmTimeoutMs', { confirmTimeoutMs: 300 }],
    ['receiptTimeoutMs (deprecated)', { receiptTimeoutMs: 300 }],
  ] as const)('exactEvm answers settlement_pending once %s has passed without a receipt', async (_name, option) => {
    const facilitator = createFacilitator({ schemes: [exactEvm({ ...world.adapterConfig(), ...option })] })
    const payer = await world.newPayer()
    const paymentRequirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements: paymentRequirements })
    await world.node.testClient.setAutomine(false)
    const started = performance.now()
    let answer
    try {
      answer = await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements })
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    // The default bound is 30 s: well past the 10 s here.
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(answer).toMatchObject({ success: false, errorReason: REJECTION.settlementPending, payer: payer.address })
    await world.node.testClient.mine({ blocks: 1 })
    expect(await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements })).toMatchObject({ success: true, transaction: answer.transaction })
  })

  it.each([
    ['minSignerBalance and transport', (minimum: bigint, transport: ExactSvmConfig['transport']) => ({ minSignerBalance: minimum, transport })],
    ['minFeePayerLamports and rpc (deprecated)', (minimum: bigint, transport: ExactSvmConfig['transport']) => ({ minFeePayerLamports: minimum, rpc: transport })],
  ] as const)('exactSvm reads %s: the readiness bound of a fee payer, through the transport given', async (_names, options) => {
    const feePayer = await fundedSigner(chain.svm, 0n)
    chain.svm.airdrop(feePayer.address, lamports(5_000_000n))
    let requests = 0
    const transport: ExactSvmConfig['transport'] = (network) => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return { ...inner, request: (calls, ...rest) => ((requests += calls.length), inner.request(calls, ...rest)) }
    }
    const check = async (minimum: bigint) => {
      const adapter = exactSvm({ networks: [{ network: 'solana-devnet', rpcUrl: chain.url }], feePayers: [feePayer], ...options(minimum, transport) })
      const report = await createFacilitator({ schemes: [adapter] }).readiness()
      return report.checks.find((entry) => entry.name.startsWith('fee payer'))
    }
    expect(await check(1_000_000n)).toMatchObject({ ok: true, detail: '5000000 lamports' })
    expect(await check(6_000_000n)).toMatchObject({ ok: false, detail: '5000000 lamports, below 6000000' })
    expect(requests).toBeGreaterThan(0)
  })
})
