/**
 * The Solana `exact` adapter against real SPL programs on LiteSVM behind the
 * loopback JSON-RPC, paid by the official x402 clients (v2 @x402/svm, v1 x402)
 * and by our own transaction builder.
 */
import { createSolanaRpc, generateKeyPairSigner, getBase64Encoder, getTransactionDecoder } from '@solana/kit'
import { x402Client } from '@x402/core/client'
import { ExactSvmScheme } from '@x402/svm/exact/client'
import { createPaymentHeader } from 'x402/client'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { createFacilitator, createMemoryStore, type FacilitatorConfig, FacilitatorError, SOLANA_DEVNET, type SettleEvent } from '../../src/index.js'
import { buildExactSvmTransaction, exactSvm, type ExactSvmConfig, SVM_REASON, type SvmRpcTransport, createHttpRpcTransport } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import {
  createPaymentScenario,
  installLighthouseStandIn,
  LIGHTHOUSE_PROGRAM,
  lamportsOf,
  type PaymentScenario,
  startSolanaTestRpc,
  TOKEN_2022_PROGRAM,
  tokenBalance,
  scenarioPaymentBody,
  type ScenarioPaymentOptions,
  scenarioRequirements,
} from '../support/svm-fixtures.js'

let chain: LiteSvmRpc
let spl: PaymentScenario
let t22: PaymentScenario

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  installLighthouseStandIn(chain.svm)
  spl = await createPaymentScenario(chain.svm)
  t22 = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM, feePayer: spl.feePayer })
})
afterAll(async () => {
  await chain?.close()
})

function adapterConfig(s: PaymentScenario, overrides: Partial<ExactSvmConfig> = {}): ExactSvmConfig {
  return { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 2_000, ...overrides }
}
function facilitator(s: PaymentScenario, overrides: Partial<ExactSvmConfig> = {}, extra: Partial<FacilitatorConfig> = {}) {
  return createFacilitator({ schemes: [exactSvm(adapterConfig(s, overrides))], ...extra })
}

const requirementsV2 = scenarioRequirements
function requirementsV1(s: PaymentScenario, amount: bigint) {
  return {
    scheme: 'exact',
    network: 'solana-devnet',
    maxAmountRequired: amount.toString(),
    asset: s.mint,
    payTo: s.payTo,
    resource: 'http://localhost/paid',
    description: 'a paid resource',
    mimeType: 'application/json',
    maxTimeoutSeconds: 60,
    extra: { feePayer: s.feePayer.address },
  }
}

/** A v2 body paid by the official @x402/svm client. */
async function officialV2Body(s: PaymentScenario, amount: bigint, extra: Record<string, unknown> = {}) {
  const requirements = requirementsV2(s, amount, extra)
  const client = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new ExactSvmScheme(s.payer, { rpcUrl: chain.url }))
  const paymentPayload = await client.createPaymentPayload({ x402Version: 2, resource: { url: 'http://localhost/paid' }, accepts: [requirements] })
  return { x402Version: 2, paymentPayload, paymentRequirements: requirements }
}

/** A v2 body paid by our own builder. */
function builderBody(s: PaymentScenario, amount: bigint, options: ScenarioPaymentOptions = {}) {
  return scenarioPaymentBody(chain.url, s, amount, options)
}

describe('supported', () => {
  test('lists v1 and v2 kinds with extra.feePayer and the fee payers under solana:*', async () => {
    const second = await generateKeyPairSigner()
    const f = createFacilitator({
      schemes: [
        exactSvm({
          networks: [
            { network: 'solana-devnet', rpcUrl: chain.url },
            { network: 'solana:8E9rvCKLFQia2Y35HXjjpWzj8weVo44K', rpcUrl: chain.url, feePayer: second.address },
          ],
          feePayers: [spl.feePayer, second],
        }),
      ],
    })
    const answer = await f.supported()
    expect(answer.kinds).toEqual([
      { x402Version: 1, scheme: 'exact', network: 'solana-devnet', extra: { feePayer: spl.feePayer.address } },
      { x402Version: 2, scheme: 'exact', network: SOLANA_DEVNET, extra: { feePayer: spl.feePayer.address } },
      { x402Version: 2, scheme: 'exact', network: 'solana:8E9rvCKLFQia2Y35HXjjpWzj8weVo44K', extra: { feePayer: second.address } },
    ])
    expect(answer.signers).toEqual({ 'solana:*': [spl.feePayer.address, second.address] })
  })

  test('refuses a configuration it cannot serve', () => {
    expect(() => exactSvm({ networks: [{ network: 'base', rpcUrl: chain.url }], feePayers: [spl.feePayer] })).toThrow(FacilitatorError)
    expect(() => exactSvm({ networks: [{ network: 'solana' }], feePayers: [spl.feePayer] })).toThrow(/has no rpcUrls/)
    expect(() => exactSvm({ networks: [{ network: 'solana', rpcUrl: chain.url }], feePayers: [] })).toThrow(/fee payer/)
  })
})

describe('verify and settle real payments', () => {
  test.each([
    // A passing simulation proves the accounts: a valid spl-token payment reads none; a Token-2022 payment also
    // reads its mint (extensions), in the same batch.
    ['spl-token', () => spl, { getSignatureStatuses: 1, simulateTransaction: 1 }],
    ['token-2022', () => t22, { getSignatureStatuses: 1, simulateTransaction: 1, getMultipleAccounts: 1 }],
  ])('official @x402/svm v2 client, %s: verify in one RPC request, settle moves the tokens', async (_name, scenario, calls) => {
    const s = scenario()
    const f = facilitator(s)
    const body = await officialV2Body(s, 12_345n)
    const feePayerBefore = lamportsOf(chain.svm, s.feePayer.address)
    const before = { payer: tokenBalance(chain.svm, s.payerAta), payTo: tokenBalance(chain.svm, s.payToAta) }

    chain.resetStats()
    const verdict = await f.verify(body)
    expect(verdict).toEqual({ isValid: true, payer: s.payer.address })
    expect(chain.stats.requests).toBe(1)
    expect(chain.stats.calls).toEqual(calls)

    chain.resetStats()
    const settled = await f.settle(body)
    expect(settled).toMatchObject({ success: true, network: SOLANA_DEVNET, payer: s.payer.address })
    expect(settled.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/)
    // Verify's batch, then the send with the first status look in its batch: a node that lands the
    // transaction as it takes it (LiteSVM) answers the outcome there, and no poll round follows.
    expect(chain.stats.requests).toBe(2)
    expect(chain.stats.calls).toEqual({ ...calls, getSignatureStatuses: 2, sendTransaction: 1 })
    expect(tokenBalance(chain.svm, s.payerAta)).toBe(before.payer - 12_345n)
    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before.payTo + 12_345n)
    // The fee payer paid the base fee (2 signatures) and at most the capped priority fee, nothing else.
    const spent = feePayerBefore - lamportsOf(chain.svm, s.feePayer.address)
    expect(spent).toBeGreaterThanOrEqual(10_000n)
    expect(spent).toBeLessThanOrEqual(10_000n + 100_000n)

    // A repeated settle answers the original outcome without moving tokens again.
    const again = await f.settle(body)
    expect(again).toEqual(settled)
    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before.payTo + 12_345n)
  })

  test('official v1 x402 client against the custom RPC URL (solana-devnet)', async () => {
    const f = facilitator(spl)
    const requirements = requirementsV1(spl, 777n)
    const header = await createPaymentHeader(spl.payer as never, 1, requirements as never, { svmConfig: { rpcUrl: chain.url } })
    const paymentPayload: unknown = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
    const body = { x402Version: 1, paymentPayload, paymentRequirements: requirements }
    const before = tokenBalance(chain.svm, spl.payToAta)
    expect(await f.verify(body)).toEqual({ isValid: true, payer: spl.payer.address })
    const settled = await f.settle(body)
    expect(settled).toMatchObject({ success: true, network: 'solana-devnet', payer: spl.payer.address })
    expect(tokenBalance(chain.svm, spl.payToAta)).toBe(before + 777n)
  })

  test('our builder with a required memo and a Lighthouse wallet-guard instruction', async () => {
    const f = facilitator(spl)
    const requirements = requirementsV2(spl, 500n, { memo: 'order-7' })
    const { value: blockhash } = await createSolanaRpc(chain.url).getLatestBlockhash().send()
    const transaction = await buildExactSvmTransaction({
      payer: spl.payer,
      feePayer: spl.feePayer.address,
      mint: spl.mint,
      payTo: spl.payTo,
      amount: 500n,
      decimals: spl.decimals,
      blockhash,
      memo: 'order-7',
      extraInstructions: [{ programAddress: LIGHTHOUSE_PROGRAM, data: new Uint8Array([1, 2, 3]) }],
    })
    const body = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements }
    expect(await f.verify(body)).toEqual({ isValid: true, payer: spl.payer.address })
    expect((await f.settle(body)).success).toBe(true)
  })

  test('a Lighthouse instruction is rejected when the allowlist leaves it out', async () => {
    const f = facilitator(spl, { allowedPrograms: [] })
    const { value: blockhash } = await createSolanaRpc(chain.url).getLatestBlockhash().send()
    const requirements = requirementsV2(spl, 5n)
    const transaction = await buildExactSvmTransaction({
      payer: spl.payer, feePayer: spl.feePayer.address, mint: spl.mint, payTo: spl.payTo, amount: 5n, decimals: spl.decimals, blockhash,
      extraInstructions: [{ programAddress: LIGHTHOUSE_PROGRAM, data: new Uint8Array([1]) }],
    })
    const body = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements }
    expect(await f.verify(body)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.programNotAllowed })
  })

  test('records the confirmation time for the statistics', async () => {
    const events: SettleEvent[] = []
    const f = facilitator(spl, {}, { hooks: [{ afterSettle: (event) => void events.push(event) }] })
    const settled = await f.settle(await builderBody(spl, 3n))
    await f.drain()
    expect(settled.success).toBe(true)
    const timing = events[0]?.context?.timings.confirmationMs
    expect(typeof timing).toBe('number')
    expect(timing).toBeGreaterThanOrEqual(0)
  })

  test('a settle whose floor is refused for another hold on the source reads the balance at once, without the retry waits', async () => {
    // The store's clock ahead of ours: the first settle's closed hold counts against every balance read after it,
    // as the hold of a payer's previous settlement closed in the millisecond the next verify begins does.
    const f = facilitator(spl, {}, { store: createMemoryStore({ now: () => Date.now() + 10_000 }) })
    expect(await f.settle(await builderBody(spl, 5n))).toMatchObject({ success: true })
    const timeout = vi.spyOn(globalThis, 'setTimeout')
    try {
      chain.resetStats()
      expect(await f.settle(await builderBody(spl, 6n))).toMatchObject({ success: true })
      // Verified twice (the floor, then the balance read from the simulation), no 50 ms wait before the second.
      expect(chain.stats.calls.simulateTransaction).toBe(2)
      expect(timeout.mock.calls.filter(([, ms]) => ms === 50)).toEqual([])
    } finally {
      timeout.mockRestore()
    }
  })

  test('a payload that is not {transaction} is rejected with a code, not thrown', async () => {
    const body = await builderBody(spl, 1n)
    const broken = { ...body, paymentPayload: { ...body.paymentPayload, payload: { tx: 'x' } } }
    expect(await facilitator(spl).verify(broken)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.undecodable })
  })
})

describe('settlement bounds', () => {
  test('a transaction not confirmed within the bound answers settlement_pending with its signature, then resumes', async () => {
    const f = facilitator(spl, { confirmTimeoutMs: 100 })
    const body = await builderBody(spl, 11n)
    const before = tokenBalance(chain.svm, spl.payToAta)
    chain.hold = true
    let pending
    try {
      pending = await f.settle(body)
    } finally {
      chain.hold = false
    }
    expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    expect(pending.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/)
    expect(tokenBalance(chain.svm, spl.payToAta)).toBe(before)

    chain.release()
    const resumed = await f.settle(body)
    expect(resumed).toMatchObject({ success: true, transaction: pending.transaction })
    expect(tokenBalance(chain.svm, spl.payToAta)).toBe(before + 11n)
  })

  test('the request budget (ctx.signal) also ends the wait with settlement_pending', async () => {
    const f = facilitator(spl, { confirmTimeoutMs: 60_000 }, { timeouts: { settleMs: 300 } })
    const body = await builderBody(spl, 12n)
    chain.hold = true
    const started = performance.now()
    const answer = await f.settle(body).finally(() => {
      chain.hold = false
      chain.release()
    })
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(answer).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    expect(answer.transaction).not.toBe('')
  })

  test('a transaction the leader dropped is sent again (same bytes) while its blockhash is valid, and lands', async () => {
    const f = facilitator(spl, { rebroadcastIntervalMs: 200, pollIntervalMs: 50, confirmTimeoutMs: 5_000 })
    const body = await builderBody(spl, 14n)
    const tokensBefore = tokenBalance(chain.svm, spl.payerAta)
    // The first send is accepted and lost; later ones reach the chain.
    chain.drop = true
    const heal = setTimeout(() => (chain.drop = false), 100)
    const answer = await f.settle(body).finally(() => {
      clearTimeout(heal)
      chain.drop = false
    })
    expect(answer).toMatchObject({ success: true, payer: spl.payer.address })
    expect(tokenBalance(chain.svm, spl.payerAta)).toBe(tokensBefore - 14n)
  })

  test('a dropped transaction whose blockhash expires is a definitive failure that keeps the signature', async () => {
    const f = facilitator(spl, { confirmTimeoutMs: 5_000 })
    const body = await builderBody(spl, 13n)
    const feePayerBefore = lamportsOf(chain.svm, spl.feePayer.address)
    const tokensBefore = tokenBalance(chain.svm, spl.payerAta)
    chain.drop = true
    const expire = setTimeout(() => chain.advanceBlocks(151), 50)
    const answer = await f.settle(body).finally(() => {
      clearTimeout(expire)
      chain.drop = false
    })
    expect(answer).toMatchObject({ success: false, errorReason: SVM_REASON.transactionExpired })
    expect(answer.transaction).not.toBe('')
    expect(lamportsOf(chain.svm, spl.feePayer.address)).toBe(feePayerBefore)
    expect(tokenBalance(chain.svm, spl.payerAta)).toBe(tokensBefore)
    // The outcome is recorded: settling again answers the same failure without sending anything.
    expect(await f.settle(body)).toMatchObject({ success: false, errorReason: SVM_REASON.transactionExpired, transaction: answer.transaction })
  })

  test('a send that fails after the broadcast was recorded answers pending, and a later settle resends the recorded bytes', async () => {
    let failSends = true
    const flaky = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: (calls, signal) => {
          if (failSends && calls.some((c) => c.method === 'sendTransaction')) return Promise.reject(new FacilitatorError('rpc_unavailable', 'injected'))
          return inner.request(calls, signal)
        },
      }
    }
    const f = facilitator(spl, { rpc: flaky })
    const body = await builderBody(spl, 14n)
    const before = tokenBalance(chain.svm, spl.payToAta)
    const first = await f.settle(body)
    expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    expect(first.transaction).not.toBe('')
    failSends = false
    const second = await f.settle(body)
    expect(second).toMatchObject({ success: true, transaction: first.transaction })
    expect(tokenBalance(chain.svm, spl.payToAta)).toBe(before + 14n)
  })
})

describe('mint allowlist (restrictAssets)', () => {
  const USDC_DEVNET = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'
  const restricted = (s: PaymentScenario, assets?: readonly string[]) =>
    facilitator(s, { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, restrictAssets: true, ...(assets ? { assets } : {}) }] })

  test('a mint outside assets and the built-in USDC is rejected before any RPC call, and settle sends nothing', async () => {
    const f = restricted(spl, [t22.mint])
    const body = await builderBody(spl, 21n)
    const feePayerBefore = lamportsOf(chain.svm, spl.feePayer.address)
    chain.resetStats()
    expect(await f.verify(body)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.mintNotAllowed })
    expect(await f.settle(body)).toMatchObject({ success: false, errorReason: SVM_REASON.mintNotAllowed, transaction: '' })
    expect(chain.stats.requests).toBe(0)
    expect(lamportsOf(chain.svm, spl.feePayer.address)).toBe(feePayerBefore)
  })

  test('a mint listed in assets verifies and settles; the built-in USDC mint passes the allowlist', async () => {
    const f = restricted(spl, [spl.mint])
    const body = await builderBody(spl, 22n)
    expect(await f.verify(body)).toEqual({ isValid: true, payer: spl.payer.address })
    expect((await f.settle(body)).success).toBe(true)

    // Requirements in devnet USDC get past the allowlist with no assets listed: the transaction moving
    // another mint is then refused as a mismatch, not as a mint that is not allowed.
    const usdcBody = await builderBody(spl, 23n)
    usdcBody.paymentRequirements.asset = USDC_DEVNET as typeof spl.mint
    usdcBody.paymentPayload.accepted.asset = USDC_DEVNET as typeof spl.mint
    expect(await restricted(spl).verify(usdcBody)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.mintMismatch })
  })

  test('without restrictAssets any mint is accepted; a malformed mint in assets is a configuration error', async () => {
    const f = facilitator(spl, { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, assets: [] }] })
    expect(await f.verify(await builderBody(spl, 24n))).toMatchObject({ isValid: true })
    expect(() => exactSvm(adapterConfig(spl, { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, assets: ['0xnot-a-mint'], restrictAssets: true }] }))).toThrow(
      /not a Solana mint/,
    )
  })
})

describe('a failed simulation names the account at fault', () => {
  test('short funds read after the simulation answer insufficient_funds; a failed read still answers simulation_failed', async () => {
    const body = await builderBody(spl, spl.balance + 1n)
    expect(await facilitator(spl).verify(body)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.insufficientFunds })
    const failingReads = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: (calls, signal) =>
          calls.some((c) => c.method === 'getMultipleAccounts') ? Promise.reject(new FacilitatorError('rpc_unavailable', 'injected')) : inner.request(calls, signal),
      }
    }
    const verdict = await facilitator(spl, { rpc: failingReads }).verify(body)
    expect(verdict).toMatchObject({ isValid: false, invalidReason: SVM_REASON.simulationFailed })
    expect(verdict.invalidMessage).toMatch(/simulation failed/)
  })
})

describe('simulate before signing', () => {
  test('verify shows the RPC only the payer-signed transaction: no fee payer signature, nothing it could send', async () => {
    const simulated: string[] = []
    const asked: unknown[] = []
    const recording = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: (calls, signal) => {
          if (calls.some((c) => c.method === 'simulateTransaction')) {
            for (const call of calls) {
              if (call.method === 'simulateTransaction') simulated.push(String(call.params[0]))
              if (call.method === 'getSignatureStatuses') asked.push(...(call.params[0] as unknown[]))
            }
          }
          return inner.request(calls, signal)
        },
      }
    }
    const f = facilitator(spl, { rpc: recording })
    const body = await builderBody(spl, 31n)
    expect(await f.verify(body)).toEqual({ isValid: true, payer: spl.payer.address })
    expect(simulated).toHaveLength(1)
    const seen = getTransactionDecoder().decode(getBase64Encoder().encode(simulated[0]!))
    expect(seen.signatures[spl.feePayer.address]).toBeNull()
    expect(seen.signatures[spl.payer.address]).not.toBeNull()
    // Whoever holds what verify sent cannot land it.
    await expect(createSolanaRpc(chain.url).sendTransaction(simulated[0]! as never, { encoding: 'base64' }).send()).rejects.toThrow()

    // The replay check asked about the id settle then answers: the signature of the locally co-signed transaction.
    const settled = await f.settle(body)
    expect(settled.success).toBe(true)
    expect(new Set(asked)).toEqual(new Set([settled.transaction]))
  })

  test('a payer signature that does not verify is rejected, whatever the chain answers, and nothing is sent', async () => {
    const f = facilitator(spl)
    const body = await builderBody(spl, 32n, { memo: 'aaaa' })
    const wire = new Uint8Array(getBase64Encoder().encode(body.paymentPayload.payload.transaction))
    wire[wire.lastIndexOf('a'.charCodeAt(0))] = 'b'.charCodeAt(0)
    const tampered = { ...body, paymentPayload: { ...body.paymentPayload, payload: { transaction: Buffer.from(wire).toString('base64') } } }
    chain.resetStats()
    // The check runs beside verify's one batch (a simulation without sigVerify would pass): its code decides.
    expect(await f.verify(tampered)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.signatureInvalid, payer: spl.payer.address })
    expect(chain.stats.requests).toBeLessThanOrEqual(1)
    // A settle checks the signature before its batch: no RPC call at all, nothing sent.
    const afterVerify = chain.stats.requests
    expect(await f.settle(tampered)).toMatchObject({ success: false, errorReason: SVM_REASON.signatureInvalid, transaction: '' })
    expect(chain.stats.requests).toBe(afterVerify)
    expect(chain.stats.calls.sendTransaction ?? 0).toBe(0)
    // A chain that fails the batch (or is out of reach) does not change the answer.
    const failing = (): SvmRpcTransport => ({ request: () => Promise.reject(new FacilitatorError('rpc_unavailable', 'injected')) })
    const offline = facilitator(spl, { rpc: failing })
    expect(await offline.verify(tampered)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.signatureInvalid, payer: spl.payer.address })
    expect(await offline.settle(tampered)).toMatchObject({ success: false, errorReason: SVM_REASON.signatureInvalid, transaction: '' })
    await expect(offline.verify(body)).rejects.toMatchObject({ code: 'rpc_unavailable' })
  })
})

describe('confirmation polling', () => {
  test('an expired blockhash gets one more full poll interval: a landed transaction a lagging node reports late settles', async () => {
    const pollIntervalMs = 250
    let statusesHiddenUntilExpiry = true
    const lagging = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: async (calls, signal) => {
          const outcomes = await inner.request(calls, signal)
          // The transaction has landed; the node still hides its status, and its blockhash expires meanwhile.
          if (calls.some((c) => c.method === 'sendTransaction')) chain.advanceBlocks(151)
          const index = calls.findIndex((c) => c.method === 'isBlockhashValid')
          const answer = outcomes[index]
          if (statusesHiddenUntilExpiry && answer?.ok && (answer.result as { value?: unknown }).value === false) {
            // The node catches up shortly after the first look saw an expired blockhash, well within an interval.
            statusesHiddenUntilExpiry = false
            setTimeout(() => {
              chain.hideStatuses = false
            }, 60)
          }
          return outcomes
        },
      }
    }
    const f = facilitator(spl, { rpc: lagging, pollIntervalMs, confirmTimeoutMs: 5_000 })
    const body = await builderBody(spl, 33n)
    const before = tokenBalance(chain.svm, spl.payToAta)
    chain.hideStatuses = true
    const answer = await f.settle(body).finally(() => {
      chain.hideStatuses = false
    })
    expect(answer).toMatchObject({ success: true })
    expect(answer.transaction).not.toBe('')
    expect(tokenBalance(chain.svm, spl.payToAta)).toBe(before + 33n)
  })

  test('the wait after an expired blockhash ends with settlement_pending when the request budget runs out', async () => {
    const expiringAfterSend = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: async (calls, signal) => {
          const outcomes = await inner.request(calls, signal)
          if (calls.some((c) => c.method === 'sendTransaction')) chain.advanceBlocks(151)
          return outcomes
        },
      }
    }
    const f = facilitator(spl, { rpc: expiringAfterSend, pollIntervalMs: 5_000, confirmTimeoutMs: 60_000 }, { timeouts: { settleMs: 600 } })
    const body = await builderBody(spl, 34n)
    chain.drop = true
    const started = performance.now()
    const answer = await f.settle(body).finally(() => {
      chain.drop = false
    })
    expect(performance.now() - started).toBeLessThan(3_000)
    expect(answer).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    expect(answer.transaction).not.toBe('')
  })


  test('concurrent settlements share status polls: one getSignatureStatuses asks about all of them', async () => {
    const polled: number[] = []
    const counting = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: (calls, signal) => {
          // Verify's replay check sits in a batch with simulateTransaction; the polls are the other batches.
          if (!calls.some((c) => c.method === 'simulateTransaction')) {
            for (const call of calls) {
              const signatures = call.params[0]
              if (call.method === 'getSignatureStatuses' && Array.isArray(signatures)) polled.push(signatures.length)
            }
          }
          return inner.request(calls, signal)
        },
      }
    }
    // Sends of one burst spread over tens of ms on a loaded machine; waiters due within half an interval
    // share a round, so the interval must exceed twice that spread for the rounds to converge.
    const f = facilitator(spl, { rpc: counting, pollIntervalMs: 100 })
    const bodies = await Promise.all(Array.from({ length: 8 }, (_, i) => builderBody(spl, BigInt(40 + i))))
    chain.hold = true
    const settling = Promise.all(bodies.map((body) => f.settle(body)))
    await new Promise((resolve) => setTimeout(resolve, 450))
    chain.hold = false
    chain.release()
    const answers = await settling
    expect(answers.every((answer) => answer.success)).toBe(true)
    expect(Math.max(...polled)).toBe(bodies.length)
  })
})

describe('RPC faults', () => {
  test('an unreachable RPC throws rpc_unavailable without quoting the URL', async () => {
    const secretUrl = 'http://127.0.0.1:9/v1/secret-api-key-1234'
    const f = facilitator(spl, { networks: [{ network: SOLANA_DEVNET, rpcUrl: secretUrl }] })
    const body = await builderBody(spl, 1n)
    const error = await f.verify(body).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorError)
    expect((error as FacilitatorError).code).toBe('rpc_unavailable')
    expect(JSON.stringify((error as FacilitatorError).toBody())).not.toMatch(/secret|127\.0\.0\.1:9/)
    expect((error as FacilitatorError).message).not.toMatch(/secret|127\.0\.0\.1/)
  })

  test('fails over to the next RPC URL', async () => {
    const f = facilitator(spl, { networks: [{ network: SOLANA_DEVNET, rpcUrls: ['http://127.0.0.1:9', chain.url] }] })
    expect(await f.verify(await builderBody(spl, 2n))).toMatchObject({ isValid: true })
  })

  test('an RPC answering 503 throws rpc_unavailable; one that hangs throws rpc_timeout', async () => {
    const f = facilitator(spl)
    const body = await builderBody(spl, 3n)
    chain.failNext(1)
    await expect(f.verify(body)).rejects.toMatchObject({ code: 'rpc_unavailable' })

    const { createServer } = await import('node:http')
    const hanging = createServer(() => undefined)
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
    const port = (hanging.address() as { port: number }).port
    try {
      const slow = facilitator(spl, { networks: [{ network: SOLANA_DEVNET, rpcUrl: `http://127.0.0.1:${port}` }], rpcTimeoutMs: 100 })
      await expect(slow.verify(body)).rejects.toMatchObject({ code: 'rpc_timeout' })
    } finally {
      hanging.closeAllConnections()
      hanging.close()
    }
  })
})

describe('performance', () => {
  test('verify latency and settle timing on the loopback chain', async () => {
    const f = facilitator(spl)
    const bodies = await Promise.all(Array.from({ length: 30 }, (_, i) => builderBody(spl, BigInt(100 + i))))
    chain.resetStats()
    const started = performance.now()
    for (const body of bodies) expect((await f.verify(body)).isValid).toBe(true)
    const verifyMs = (performance.now() - started) / bodies.length
    const verifyRequests = chain.stats.requests / bodies.length
    expect(verifyRequests).toBe(1)
    chain.resetStats()

    const events: SettleEvent[] = []
    const g = facilitator(spl, {}, { hooks: [{ afterSettle: (e) => void events.push(e) }] })
    const settleStarted = performance.now()
    for (const body of bodies.slice(0, 10)) expect((await g.settle(body)).success).toBe(true)
    const settleMs = (performance.now() - settleStarted) / 10
    await g.drain()
    const confirmations = events.map((e) => e.context?.timings.confirmationMs ?? NaN)
    console.info(
      `[svm perf] verify: ${verifyMs.toFixed(2)} ms avg, ${verifyRequests} RPC request(s) each; ` +
        `settle: ${settleMs.toFixed(2)} ms avg, ${chain.stats.requests / 10} RPC requests each (verify included); ` +
        `confirmation ${Math.max(...confirmations).toFixed(2)} ms max`,
    )
    expect(confirmations.every((ms) => Number.isFinite(ms))).toBe(true)
  })
})
