/**
 * `spendOf(ctx)` of the Solana adapter: after a verify that answered valid, what
 * the settlement takes from which balance, with the balance before the transfer
 * read from the simulation's post-state of the source (no extra round trip).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import { createFacilitator, type SchemeAdapter, SOLANA_DEVNET } from '../../src/index.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import { createHttpRpcTransport, exactSvm, type ExactSvmConfig, type SvmRpcTransport } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, type PaymentScenario, scenarioPaymentBody, startSolanaTestRpc, TOKEN_2022_PROGRAM, tokenBalance } from '../support/svm-fixtures.js'
import { transferFeeExtension } from '../support/token-2022-extensions.js'

let chain: LiteSvmRpc
let spl: PaymentScenario

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  spl = await createPaymentScenario(chain.svm, { balance: 50_000n })
})
afterAll(async () => {
  await chain?.close()
})

const adapterFor = (s: PaymentScenario, overrides: Partial<ExactSvmConfig> = {}) =>
  exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 2_000, ...overrides })

/** The context the core would hand the adapter for `body`, reserved for a settle as the core does before its verify. */
function contextOf(adapter: SchemeAdapter, body: unknown, settling = true) {
  const parsed = parsePaymentRequest(body)
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(createRegistry([adapter]), parsed.request, AbortSignal.timeout(30_000))
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  if (settling) adapter.reserveSettlement?.(routed.context)
  return routed.context
}

describe('spendOf', () => {
  test('after a valid verify: the source token account, the amount and its real balance before the transfer, in the same one request', async () => {
    const adapter = adapterFor(spl)
    const ctx = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_234n))
    expect(adapter.spendOf?.(ctx)).toBeUndefined()
    const balance = tokenBalance(chain.svm, spl.payerAta)
    chain.resetStats()
    expect(await adapter.verify(ctx)).toEqual({ isValid: true, payer: spl.payer.address })
    expect(chain.stats.requests).toBe(1)
    expect(chain.stats.calls).toEqual({ getSignatureStatuses: 1, simulateTransaction: 1 })
    expect(adapter.spendOf?.(ctx)).toEqual({ account: `${SOLANA_DEVNET}:${spl.payerAta}`, amount: 1_234n, balance, since: expect.any(Number) })
  })

  test('a plain /verify (no settle reserved) does not ask the node for the source account, and holds nothing', async () => {
    const sent: { method: string; params: unknown }[] = []
    const adapter = adapterFor(spl, {
      rpc: (network) => {
        const inner = createHttpRpcTransport({ urls: network.urls })
        return { request: (calls, signal) => (sent.push(...calls), inner.request(calls, signal)) }
      },
    })
    const plain = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_234n), false)
    expect(await adapter.verify(plain)).toEqual({ isValid: true, payer: spl.payer.address })
    expect(adapter.spendOf?.(plain)).toBeUndefined()
    const simulation = sent.find((call) => call.method === 'simulateTransaction')!
    expect((simulation.params as [string, Record<string, unknown>])[1]).not.toHaveProperty('accounts')
    // A settle's verify asks for it.
    sent.length = 0
    const settling = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_234n))
    await adapter.verify(settling)
    expect((sent.find((call) => call.method === 'simulateTransaction')!.params as [string, Record<string, unknown>])[1]).toHaveProperty('accounts')
    expect(adapter.spendOf?.(settling)?.amount).toBe(1_234n)
  })

  test('follows the chain: after a settled payment the next verify reports the lower balance', async () => {
    const f = createFacilitator({ schemes: [adapterFor(spl)] })
    expect((await f.settle(await scenarioPaymentBody(chain.url, spl, 2_000n))).success).toBe(true)
    const adapter = adapterFor(spl)
    const ctx = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 5n))
    await adapter.verify(ctx)
    expect(adapter.spendOf?.(ctx)?.balance).toBe(tokenBalance(chain.svm, spl.payerAta))
  })

  test('settles racing from one source share one balance read (and its moment); a context verified again reads afresh', async () => {
    const sent: { method: string; params: unknown }[] = []
    const adapter = adapterFor(spl, {
      rpc: (network) => {
        const inner = createHttpRpcTransport({ urls: network.urls })
        return { request: (calls, signal) => (sent.push(...calls), inner.request(calls, signal)) }
      },
    })
    const asksAccounts = () => sent.filter((call) => call.method === 'simulateTransaction' && 'accounts' in (call.params as [string, Record<string, unknown>])[1]).length
    const contexts = await Promise.all([1n, 2n, 3n, 4n].map(async (amount) => contextOf(adapter, await scenarioPaymentBody(chain.url, spl, amount))))
    const balance = tokenBalance(chain.svm, spl.payerAta)
    const verdicts = await Promise.all(contexts.map((ctx) => adapter.verify(ctx)))
    expect(verdicts.every((v) => v.isValid)).toBe(true)
    expect(sent.filter((call) => call.method === 'simulateTransaction')).toHaveLength(4)
    expect(asksAccounts()).toBe(1)
    const spends = contexts.map((ctx) => adapter.spendOf?.(ctx))
    expect(spends.map((spend) => spend?.amount)).toEqual([1n, 2n, 3n, 4n])
    expect(new Set(spends.map((spend) => spend?.balance))).toEqual(new Set([balance]))
    // The moment of the shared read: what lands after it counts against it (core holds).
    expect(new Set(spends.map((spend) => spend?.since)).size).toBe(1)
    // Verified again (the core's retry after a refused hold): a read of its own.
    await adapter.verify(contexts[3]!)
    expect(asksAccounts()).toBe(2)
    expect(adapter.spendOf?.(contexts[3]!)?.since).toBeGreaterThanOrEqual(spends[0]!.since!)
  })

  test('a shared read whose own payment fails leaves its sharers to read for themselves', async () => {
    const sent: { method: string; params: unknown }[] = []
    let firstSent!: () => void
    const simulating = new Promise<void>((resolve) => (firstSent = resolve))
    const adapter = adapterFor(spl, {
      rpc: (network) => {
        const inner = createHttpRpcTransport({ urls: network.urls })
        return { request: (calls, signal) => (sent.push(...calls), firstSent(), inner.request(calls, signal)) }
      },
    })
    const failing = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 10n ** 12n))
    const fine = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 9n))
    // The failing payment's verify reads the balance; the other one, started once that read is out, shares it.
    const bad = adapter.verify(failing)
    await simulating
    const good = await adapter.verify(fine)
    expect((await bad).isValid).toBe(false)
    expect(good).toEqual({ isValid: true, payer: spl.payer.address })
    const withAccounts = sent.filter((call) => call.method === 'simulateTransaction' && 'accounts' in (call.params as [string, Record<string, unknown>])[1])
    // The failing read; the sharer's simulation without accounts; then its own read once the shared one gave nothing.
    expect(sent.filter((call) => call.method === 'simulateTransaction')).toHaveLength(3)
    expect(withAccounts).toHaveLength(2)
    expect(adapter.spendOf?.(fine)).toMatchObject({ amount: 9n, balance: tokenBalance(chain.svm, spl.payerAta) })
  })

  test('unknown after a verify that answered invalid, or when the node leaves the simulated accounts out', async () => {
    const adapter = adapterFor(spl)
    const tooMuch = contextOf(adapter, await scenarioPaymentBody(chain.url, spl, 10n ** 12n))
    expect((await adapter.verify(tooMuch)).isValid).toBe(false)
    expect(adapter.spendOf?.(tooMuch)).toBeUndefined()

    const withoutAccounts = (network: { urls: readonly string[] }): SvmRpcTransport => {
      const inner = createHttpRpcTransport({ urls: network.urls })
      return {
        request: async (calls, signal) =>
          (await inner.request(calls, signal)).map((outcome, i) => {
            if (calls[i]?.method !== 'simulateTransaction' || !outcome.ok) return outcome
            const result = outcome.result as { value: Record<string, unknown> }
            return { ok: true, result: { ...result, value: { ...result.value, accounts: null } } }
          }),
      }
    }
    const blind = adapterFor(spl, { rpc: withoutAccounts })
    const ctx = contextOf(blind, await scenarioPaymentBody(chain.url, spl, 7n))
    expect(await blind.verify(ctx)).toEqual({ isValid: true, payer: spl.payer.address })
    expect(blind.spendOf?.(ctx)).toBeUndefined()
  })

  test('a Token-2022 payment with an allowed transfer fee spends what it moves (fee included)', async () => {
    const s = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM, mintExtensions: [transferFeeExtension({ basisPoints: 1_000, maximumFee: 10n ** 12n })] })
    const adapter = adapterFor(s, { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, allowedMintExtensions: ['transferFee'] }] })
    const body = await scenarioPaymentBody(chain.url, s, 10_000n)
    body.paymentRequirements.amount = '9000'
    body.paymentPayload.accepted.amount = '9000'
    const ctx = contextOf(adapter, body)
    expect(await adapter.verify(ctx)).toEqual({ isValid: true, payer: s.payer.address })
    expect(adapter.spendOf?.(ctx)).toEqual({ account: `${SOLANA_DEVNET}:${s.payerAta}`, amount: 10_000n, balance: s.balance, since: expect.any(Number) })
  })
})

describe('the loopback RPC answers simulateTransaction accounts as Agave does', () => {
  const simulate = async (transaction: string, addresses: string[]) => {
    const response = await fetch(chain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'simulateTransaction',
        params: [transaction, { encoding: 'base64', sigVerify: false, accounts: { encoding: 'base64', addresses } }],
      }),
    })
    return (await response.json()) as { result?: { value: { err: unknown; accounts: ({ data: [string, string]; owner: string } | null)[] | null } }; error?: { code: number } }
  }

  test('post-simulation state of each address (untouched ones as they are), nulls when the simulation fails, base58 refused', async () => {
    const body = await scenarioPaymentBody(chain.url, spl, 100n)
    const before = tokenBalance(chain.svm, spl.payerAta)
    const answer = await simulate(body.paymentPayload.payload.transaction, [spl.payerAta, spl.mint])
    const [source, mint] = answer.result!.value.accounts!
    expect(Buffer.from(source!.data[0], 'base64').readBigUInt64LE(64)).toBe(before - 100n)
    expect(mint!.owner).toBe(spl.tokenProgram)
    // Nothing was written: the simulation leaves the chain as it was.
    expect(tokenBalance(chain.svm, spl.payerAta)).toBe(before)

    const failing = await scenarioPaymentBody(chain.url, spl, 10n ** 12n)
    const failed = await simulate(failing.paymentPayload.payload.transaction, [spl.payerAta])
    expect(failed.result!.value.err).not.toBeNull()
    expect(failed.result!.value.accounts).toEqual([null])

    const response = await fetch(chain.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'simulateTransaction', params: [body.paymentPayload.payload.transaction, { encoding: 'base64', accounts: { encoding: 'base58', addresses: [spl.payerAta] } }] }),
    })
    expect(((await response.json()) as { error?: { code: number } }).error?.code).toBe(-32602)
  })
})
