/**
 * RPC faults between the facilitator and a real chain: the fault proxy sits in
 * front of anvil and of the LiteSVM JSON-RPC and delays, hangs, errors or cuts
 * connections. Verify must fail fast with a clear code, a settle after
 * broadcast must keep its transaction id, a second RPC URL must take over,
 * and nothing may wait past the configured budgets.
 */
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { FacilitatorError } from '../../src/errors/facilitator-error.js'
import { REJECTION } from '../../src/errors/reasons.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { exactSvm } from '../../src/svm/exact/exact-svm.js'
import { tokenBalance as evmTokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultMode, type FaultProxy } from '../support/fault-proxy.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, type PaymentScenario, scenarioPaymentBody, startSolanaTestRpc, tokenBalance } from '../support/svm-fixtures.js'
import { authorizationsUsed, body, nonceSum, timed } from './support.js'

const VERIFY_MS = 1_000
const SETTLE_MS = 2_000
/** Scheduling slack on a loaded 2-core CI machine. */
const SLACK_MS = 400

const MODES: readonly [string, FaultMode][] = [
  ['pass', { kind: 'pass' }],
  ['delay 200 ms', { kind: 'delay', ms: 200 }],
  ['delay 3000 ms', { kind: 'delay', ms: 3_000 }],
  ['hang', { kind: 'hang' }],
  ['error 503', { kind: 'error', status: 503 }],
  ['error 500', { kind: 'error', status: 500 }],
  ['cut', { kind: 'cut' }],
  ['cut after forward', { kind: 'cut-after-forward' }],
]

const figures: string[] = []
afterAll(() => console.info(`[rpc-faults]\n${figures.join('\n')}`))

function outcomeOf(result: { value?: unknown; error?: unknown }): string {
  if (result.error instanceof FacilitatorError) return `${result.error.code} (HTTP ${result.error.status})`
  if (result.error) return `foreign error ${String(result.error)}`
  const value = result.value as { isValid?: boolean; success?: boolean; errorReason?: string; invalidReason?: string }
  if ('isValid' in value) return value.isValid ? 'isValid' : `invalid ${value.invalidReason}`
  return value.success ? 'success' : `success:false ${value.errorReason}`
}

/** What each mode must lead to when verify meets it. */
function expectVerifyOutcome(mode: string, result: { ms: number; value?: unknown; error?: unknown }) {
  expect(result.ms).toBeLessThan(VERIFY_MS + SLACK_MS)
  if (mode === 'pass' || mode === 'delay 200 ms') {
    expect(result.value).toMatchObject({ isValid: true })
  } else if (mode === 'delay 3000 ms' || mode === 'hang') {
    // The call's budget (timeout) or, when shorter, the transport's own per-request bound (rpc_timeout).
    expect(result.error).toBeInstanceOf(FacilitatorError)
    expect((result.error as FacilitatorError).code).toMatch(/^(rpc_)?timeout$/)
    expect((result.error as FacilitatorError).status).toBe(504)
  } else {
    expect(result.error).toBeInstanceOf(FacilitatorError)
    expect((result.error as FacilitatorError).code).toMatch(/^rpc_(unavailable|error)$/)
    expect((result.error as FacilitatorError).status).toBeGreaterThanOrEqual(502)
  }
}

describe('EVM behind the fault proxy (anvil)', () => {
  let world: EvmFixture
  let proxy: FaultProxy
  let second: FaultProxy
  beforeAll(async () => {
    world = await startEvmFixture({ signerCount: 1 })
    ;[proxy, second] = await Promise.all([startFaultProxy(world.node.rpcUrl), startFaultProxy(world.node.rpcUrl)])
  })
  afterAll(async () => {
    await Promise.all([proxy?.close(), second?.close()])
    await world?.stop()
  })

  const facilitatorVia = (rpcUrls: string[]) =>
    createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls }], receiptTimeoutMs: 1_500, receiptPollIntervalMs: 50 }))],
      timeouts: { verifyMs: VERIFY_MS, settleMs: SETTLE_MS },
    })
  const payment = async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    return { payer, request: body(await signExactEvmPayment({ signer: payer, requirements }), requirements) }
  }

  it('verify answers within its budget under every fault mode, with a clear code', async () => {
    const f = facilitatorVia([proxy.url])
    const { request } = await payment()
    for (const [name, mode] of MODES) {
      proxy.setMode(mode)
      const result = await timed(f.verify(request))
      proxy.setMode({ kind: 'pass' })
      figures.push(`  evm verify, ${name.padEnd(18)} ${result.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(result)}`)
      expectVerifyOutcome(name, result)
    }
  })

  it('an eth_call answer that is not a Multicall3 aggregate3 result is an rpc_error naming it, for verify and settle', async () => {
    const f = facilitatorVia([proxy.url])
    const { request } = await payment()
    // Truncated, a result count pointing past the end, and a well-formed answer with no results (a gateway's empty answer).
    const word = (n: number) => n.toString(16).padStart(64, '0')
    for (const result of ['0x1234', `0x${word(32)}${word(255)}`, `0x${word(32)}${word(0)}`]) {
      proxy.setModeFor(['eth_call'], { kind: 'result', result })
      for (const attempt of [() => f.verify(request), () => f.settle(request)]) {
        const error = await attempt().then(() => undefined, (e: unknown) => e)
        expect(error).toBeInstanceOf(FacilitatorError)
        expect((error as FacilitatorError).code).toBe('rpc_error')
        expect((error as FacilitatorError).message).toMatch(/not an aggregate3 result/)
      }
      proxy.setMode({ kind: 'pass' })
    }
    // Nothing was sent: the same payment still verifies.
    expect(await f.verify(request)).toMatchObject({ isValid: true })
  })

  it('a settle whose send answer is cut (the node got it, then a viem retry) answers the one transaction that landed', async () => {
    const f = facilitatorVia([proxy.url])
    const { payer, request } = await payment()
    const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
    const signers = world.signers.map((s) => s.address)
    const noncesBefore = await nonceSum(world, signers)
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'cut-after-forward' }, { times: 1 })
    const result = await timed(f.settle(request))
    proxy.setMode({ kind: 'pass' })
    figures.push(`  evm settle, send answer cut once   ${result.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(result)}`)
    const answer = result.value as { success: boolean; transaction: string }
    expect(answer.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    const used = await authorizationsUsed(world, payer.address, fromBlock)
    expect(used).toHaveLength(1)
    // The answer names the transaction that moved the money, and nothing else was sent.
    expect(answer).toMatchObject({ success: true, transaction: used[0]!.transactionHash })
    expect(await nonceSum(world, signers)).toBe(noncesBefore + 1)
  })

  /** Ten payments settled at once on the one key, with the first `cuts` send requests cut before reaching anvil. */
  async function settleTenWithCutSends(cuts: number) {
    const f = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url] }], receiptPollIntervalMs: 50 }))],
      timeouts: { settleMs: 20_000 },
    })
    const [signer] = world.signers
    const payments: Awaited<ReturnType<typeof payment>>[] = []
    for (let i = 0; i < 10; i++) payments.push(await payment()) // one funding transaction at a time from the deployer
    const nonceBefore = await world.node.publicClient.getTransactionCount({ address: signer!.address })
    const sendsBefore = proxy.methods.filter((m) => m === 'eth_sendRawTransaction').length
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'cut' }, { times: cuts })
    const started = performance.now()
    const answers = await Promise.all(payments.map(({ request }) => f.settle(request)))
    const ms = performance.now() - started
    proxy.setMode({ kind: 'pass' })
    const sends = proxy.methods.filter((m) => m === 'eth_sendRawTransaction').length - sendsBefore
    figures.push(`  evm settle, 10 at once, ${cuts} sends cut ${ms.toFixed(0).padStart(6)} ms  ${answers.filter((a) => a.success).length}/10 success, ${sends} send requests`)
    const count = (blockTag: 'latest' | 'pending') => world.node.publicClient.getTransactionCount({ address: signer!.address, blockTag })
    return { f, payments, answers, nonceBefore, count }
  }

  it('a send the node never got is sent again (same bytes): 10 concurrent settles on one key all land', async () => {
    // The key's sends go one at a time in nonce order: the first payment's send and viem's own
    // retry, then its second send and that retry, are cut; its third send gets through.
    const { payments, answers, nonceBefore, count } = await settleTenWithCutSends(4)
    expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(Array(10).fill('success'))
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(10)
    expect(await count('latest')).toBe(nonceBefore + 10)
    expect(await count('pending')).toBe(nonceBefore + 10)
    for (const { payer } of payments) expect(await authorizationsUsed(world, payer.address, 0n)).toHaveLength(1)
  })

  it('a gateway error on the send (rate limit as JSON-RPC -32005, upstream failure -32603) is no answer: the same bytes go again and land', async () => {
    for (const fault of [{ status: 429, code: -32005 }, { status: 200, code: -32603 }]) {
      const f = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url] }], receiptPollIntervalMs: 50 }))] })
      const { payer, request } = await payment()
      const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
      // The send and viem's own retry get the gateway's error; the re-send reaches anvil.
      proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'gateway-error', ...fault }, { times: 2 })
      const answer = await f.settle(request)
      proxy.setMode({ kind: 'pass' })
      figures.push(`  evm settle, send gets gateway error ${fault.code} (HTTP ${fault.status}) twice: ${answer.success ? 'success' : answer.errorReason}`)
      expect(answer).toMatchObject({ success: true, payer: payer.address })
      expect((await authorizationsUsed(world, payer.address, fromBlock)).map((log) => log.transactionHash)).toEqual([answer.transaction])
    }
  })

  it('a send given up on leaves no gap: the settles behind it take fresh nonces and land, nothing stays parked', async () => {
    // Every send of the first payment is cut (3 sends, each retried once by viem): it answers pending with its hash.
    const { f, payments, answers, nonceBefore, count } = await settleTenWithCutSends(6)
    const given = answers.filter((a) => !a.success)
    expect(given).toHaveLength(1)
    expect(given[0]).toMatchObject({ errorReason: REJECTION.settlementPending, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
    expect(answers.filter((a) => a.success)).toHaveLength(9)
    // The nine others took the nonces from the given-up one on: none waits behind a gap.
    expect(await count('latest')).toBe(nonceBefore + 9)
    expect(await count('pending')).toBe(nonceBefore + 9)
    // Settling the given-up payment again: its transaction can no longer land (its nonce was used), and its
    // authorization was never used: the payment is checked again and sent anew, once.
    const index = answers.indexOf(given[0]!)
    const again = await f.settle(payments[index]!.request)
    expect(again).toMatchObject({ success: true })
    expect(again.transaction).not.toBe(given[0]!.transaction)
    expect(await authorizationsUsed(world, payments[index]!.payer.address, 0n)).toHaveLength(1)
    expect(await evmTokenBalance(world.node, world.token, payments[index]!.payer.address)).toBe(1_000_000n - 1000n)
  })

  it.each([
    ['send answer always cut', ['eth_sendRawTransaction'], { kind: 'cut-after-forward' }],
    ['send refused with 503', ['eth_sendRawTransaction'], { kind: 'error', status: 503 }],
    ['send hangs', ['eth_sendRawTransaction'], { kind: 'hang' }],
    ['receipt polls hang', ['eth_getTransactionReceipt'], { kind: 'hang' }],
    ['receipt polls cut', ['eth_getTransactionReceipt'], { kind: 'cut' }],
  ] as [string, string[], FaultMode][])('after broadcast, %s: a pending answer that keeps the hash, within the budget; a later settle finishes it', async (name, methods, mode) => {
    const f = facilitatorVia([proxy.url])
    const { payer, request } = await payment()
    const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
    const signers = world.signers.map((s) => s.address)
    const noncesBefore = await nonceSum(world, signers)
    proxy.setModeFor(methods, mode)
    const first = await timed(f.settle(request))
    proxy.setMode({ kind: 'pass' })
    figures.push(`  evm settle, ${name.padEnd(22)} ${first.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(first)}`)
    expect(first.error).toBeUndefined()
    expect(first.ms).toBeLessThan(SETTLE_MS + SLACK_MS)
    const pending = first.value!
    expect(pending).toMatchObject({ success: false, errorReason: REJECTION.settlementPending, payer: payer.address })
    expect(pending.transaction).toMatch(/^0x[0-9a-f]{64}$/)

    const again = await timed(f.settle(request))
    figures.push(`  evm settle, ${name.padEnd(22)} retry ${again.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(again)}`)
    expect(again.value).toMatchObject({ success: true, transaction: pending.transaction })
    const used = await authorizationsUsed(world, payer.address, fromBlock)
    expect(used.map((log) => log.transactionHash)).toEqual([pending.transaction as Hex])
    expect(await nonceSum(world, signers)).toBe(noncesBefore + 1)
  })

  it('a settle that meets a hung RPC before anything is sent gives up at its budget and claims nothing', async () => {
    const f = facilitatorVia([proxy.url])
    const { payer, request } = await payment()
    proxy.setMode({ kind: 'hang' })
    const result = await timed(f.settle(request))
    proxy.setMode({ kind: 'pass' })
    figures.push(`  evm settle, everything hangs      ${result.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(result)}`)
    expect(result.error).toMatchObject({ code: 'timeout', status: 504 })
    expect(result.ms).toBeLessThan(SETTLE_MS + SLACK_MS)
    // Nothing was claimed: the same payment settles at once when the RPC is back, without joining
    // a read the hang left stalled (a fee read waits out its own rpcTimeoutMs).
    const again = await timed(f.settle(request))
    figures.push(`  evm settle, after the hang ends      ${again.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(again)}`)
    expect(again.value).toMatchObject({ success: true, payer: payer.address })
  })

  it('a second RPC URL takes over while the first is down', async () => {
    const f = facilitatorVia([proxy.url, second.url])
    for (const [name, mode] of MODES.filter(([n]) => n === 'cut' || n === 'error 503' || n === 'error 500')) {
      const { payer, request } = await payment()
      proxy.setMode(mode)
      const verified = await timed(f.verify(request))
      const settled = await timed(f.settle(request))
      proxy.setMode({ kind: 'pass' })
      figures.push(`  evm fallback, first URL ${name.padEnd(10)} verify ${verified.ms.toFixed(0)} ms ${outcomeOf(verified)}, settle ${settled.ms.toFixed(0)} ms ${outcomeOf(settled)}`)
      expect(verified.value).toEqual({ isValid: true, payer: payer.address })
      expect(settled.value).toMatchObject({ success: true })
      expect(verified.ms).toBeLessThan(VERIFY_MS)
    }
    expect(await evmTokenBalance(world.node, world.token, world.payTo)).toBeGreaterThan(0n)
  })
})

describe('Solana behind the fault proxy (LiteSVM RPC)', () => {
  let chain: LiteSvmRpc
  let s: PaymentScenario
  let proxy: FaultProxy
  let second: FaultProxy
  beforeAll(async () => {
    chain = await startSolanaTestRpc()
    s = await createPaymentScenario(chain.svm)
    ;[proxy, second] = await Promise.all([startFaultProxy(chain.url), startFaultProxy(chain.url)])
  })
  afterAll(async () => {
    await Promise.all([proxy?.close(), second?.close()])
    await chain?.close()
  })

  const facilitatorVia = (rpcUrls: string[]) =>
    createFacilitator({
      schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrls }], feePayers: [s.feePayer], pollIntervalMs: 20, confirmTimeoutMs: 1_500, rpcTimeoutMs: 600 })],
      timeouts: { verifyMs: VERIFY_MS, settleMs: SETTLE_MS },
    })
  const payment = (amount = 1_000n) => scenarioPaymentBody(chain.url, s, amount)


  it('verify answers within its budget under every fault mode, with a clear code', async () => {
    const f = facilitatorVia([proxy.url])
    const request = await payment()
    for (const [name, mode] of MODES) {
      proxy.setMode(mode)
      const result = await timed(f.verify(request))
      proxy.setMode({ kind: 'pass' })
      figures.push(`  svm verify, ${name.padEnd(18)} ${result.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(result)}`)
      expectVerifyOutcome(name, result)
    }
  })

  it('a settle whose send answer is cut still confirms and answers the signature', async () => {
    const f = facilitatorVia([proxy.url])
    const request = await payment()
    const before = tokenBalance(chain.svm, s.payToAta)
    proxy.setModeFor(['sendTransaction'], { kind: 'cut-after-forward' })
    const result = await timed(f.settle(request))
    proxy.setMode({ kind: 'pass' })
    figures.push(`  svm settle, send answer cut       ${result.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(result)}`)
    expect(result.value).toMatchObject({ success: true })
    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before + 1_000n)
    expect(result.ms).toBeLessThan(SETTLE_MS + SLACK_MS)
  })

  it.each([
    // The confirmation batch is [getSignatureStatuses, isBlockhashValid]; verify's batch has no isBlockhashValid.
    ['status polls hang', ['isBlockhashValid'], { kind: 'hang' }],
    ['status polls cut', ['isBlockhashValid'], { kind: 'cut' }],
    ['send refused with 503', ['sendTransaction'], { kind: 'error', status: 503 }],
  ] as [string, string[], FaultMode][])('after broadcast, %s: pending with the signature within the budget; a later settle finishes it', async (name, methods, mode) => {
    const f = facilitatorVia([proxy.url])
    const request = await payment(7n)
    const before = tokenBalance(chain.svm, s.payToAta)
    // The send's batch reads the status too, and LiteSVM lands a transaction as it takes it: a node
    // lagging behind at the send leaves the outcome to the polls, which are what fails here.
    const polls = methods.includes('isBlockhashValid')
    chain.hideStatuses = polls
    proxy.setModeFor(methods, mode)
    const first = await timed(f.settle(request))
    proxy.setMode({ kind: 'pass' })
    chain.hideStatuses = false
    figures.push(`  svm settle, ${name.padEnd(22)} ${first.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(first)}`)
    expect(first.error).toBeUndefined()
    expect(first.ms).toBeLessThan(SETTLE_MS + SLACK_MS)
    const pending = first.value!
    expect(pending).toMatchObject({ success: false, errorReason: REJECTION.settlementPending })
    expect(pending.transaction.length).toBeGreaterThan(80)
    const again = await timed(f.settle(request))
    figures.push(`  svm settle, ${name.padEnd(22)} retry ${again.ms.toFixed(0).padStart(5)} ms  ${outcomeOf(again)}`)
    expect(again.value).toMatchObject({ success: true, transaction: pending.transaction })
    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before + 7n)
  })

  it('a second RPC URL takes over while the first is down', async () => {
    const f = facilitatorVia([proxy.url, second.url])
    for (const [name, mode] of MODES.filter(([n]) => n === 'cut' || n === 'error 503' || n === 'error 500')) {
      const request = await payment(3n)
      proxy.setMode(mode)
      const verified = await timed(f.verify(request))
      const settled = await timed(f.settle(request))
      proxy.setMode({ kind: 'pass' })
      figures.push(`  svm fallback, first URL ${name.padEnd(10)} verify ${verified.ms.toFixed(0)} ms ${outcomeOf(verified)}, settle ${settled.ms.toFixed(0)} ms ${outcomeOf(settled)}`)
      // A cut connection is not a 5xx: the transport fails over on both.
      expect(verified.value).toMatchObject({ isValid: true })
      expect(settled.value).toMatchObject({ success: true })
      expect(verified.ms).toBeLessThan(VERIFY_MS)
    }
  })
})

