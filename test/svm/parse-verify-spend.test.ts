/**
 * The Solana adapter's steps as the core runs them: `parse` decodes the payload once and names its
 * replay domain; a verify that answered valid hands back the signed payment and what settling it
 * takes from which balance (`Verdict.spend`): alone on its source, its amount as the floor the
 * simulation proved; with another settle of the source in flight, the balance before the transfer read
 * from the simulation's post-state of the source (no extra round trip).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import type { SettleReservation } from '../../src/core/adapter.js'
import { createFacilitator, type PaymentContext, type SchemeAdapter, SOLANA_DEVNET } from '../../src/index.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import { createHttpRpcTransport, exactSvm, type ExactSvmConfig, SVM_REASON, type SvmRpcTransport } from '../../src/svm/index.js'
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

/** One request as the core runs it: its context, the adapter's parse of it, and a fee payer reserved as settle does before its verify. */
interface Request {
  readonly ctx: PaymentContext
  readonly payload: unknown
  readonly key: string
  readonly reservation: SettleReservation | undefined
}

function contextOf(adapter: SchemeAdapter, body: unknown): PaymentContext {
  const parsed = parsePaymentRequest(body)
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(createRegistry([adapter]), parsed.request, AbortSignal.timeout(30_000))
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  return routed.context
}

function requestOf(adapter: SchemeAdapter, body: unknown, settling = true): Request {
  const ctx = contextOf(adapter, body)
  const parsed = adapter.parse(ctx)
  if ('refusal' in parsed) throw new Error(`parse refused: ${parsed.refusal.invalidReason}`)
  return { ctx, payload: parsed.payload, key: parsed.key, reservation: settling ? adapter.reserveSettlement?.(ctx, parsed.payload) : undefined }
}

const verifyOf = (adapter: SchemeAdapter, r: Request) => adapter.verify(r.ctx, r.payload, r.reservation)

/**
 * A settle of the scenario's source kept in flight (verified, its reservation held): alone on its
 * source, it holds its amount as the floor of the balance; the verifies of settles after it read the balance.
 */
async function settleInFlight(adapter: SchemeAdapter, s: PaymentScenario = spl): Promise<Request> {
  const request = requestOf(adapter, await scenarioPaymentBody(chain.url, s, 1n))
  const verdict = await verifyOf(adapter, request)
  expect(verdict.spend).toEqual({ account: `${SOLANA_DEVNET}:${s.payerAta}`, amount: 1n, balance: 1n, since: expect.any(Number), floor: true })
  return request
}

describe('parse', () => {
  test('names the replay domain by network and message, offline; a re-signed copy of the message is the same payment', async () => {
    const adapter = adapterFor(spl)
    const body = await scenarioPaymentBody(chain.url, spl, 1_234n)
    chain.resetStats()
    const first = requestOf(adapter, body)
    first.reservation?.release()
    expect(chain.stats.requests).toBe(0)
    expect(first.key).toMatch(new RegExp(`^${SOLANA_DEVNET}:[A-Za-z0-9_-]{43}$`))
    // The fee payer's slot filled with bytes of its own: the message, hence the key, is unchanged.
    const bytes = Buffer.from(body.paymentPayload.payload.transaction, 'base64')
    bytes.fill(7, 1, 65)
    const resigned = structuredClone(body)
    resigned.paymentPayload.payload.transaction = bytes.toString('base64')
    expect(requestOf(adapter, resigned, false).key).toBe(first.key)
    const other = requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_235n), false)
    expect(other.key).not.toBe(first.key)
  })

  test('refuses a payload with no transaction to decode with verify\'s codes (an unaccepted mint first)', async () => {
    const adapter = adapterFor(spl)
    const body = await scenarioPaymentBody(chain.url, spl, 1n)
    const refusalOf = (a: SchemeAdapter, transaction: unknown, extra?: unknown) => {
      const broken = structuredClone(body) as { paymentPayload: { payload: Record<string, unknown> }; paymentRequirements: Record<string, unknown> }
      broken.paymentPayload.payload = { transaction }
      if (extra !== undefined) {
        broken.paymentRequirements.extra = extra
        ;(broken.paymentPayload as unknown as { accepted: Record<string, unknown> }).accepted.extra = extra
      }
      const parsed = a.parse(contextOf(a, broken))
      return 'refusal' in parsed ? parsed.refusal : undefined
    }
    expect(refusalOf(adapter, 42)).toMatchObject({ isValid: false, invalidReason: SVM_REASON.undecodable })
    expect(refusalOf(adapter, 'AAAA')).toMatchObject({ isValid: false, invalidReason: SVM_REASON.undecodable })
    expect(refusalOf(adapter, 'AAAA', { feePayer: 7 })).toMatchObject({ isValid: false, invalidReason: SVM_REASON.invalidPayload, invalidMessage: 'paymentRequirements.extra.feePayer and .memo must be strings' })
    const restricted = adapterFor(spl, { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, restrictAssets: true }] })
    expect(refusalOf(restricted, 'AAAA')).toMatchObject({ isValid: false, invalidReason: SVM_REASON.mintNotAllowed })
  })
})

describe('the verdict\'s spend', () => {
  test('a settle alone on its source holds its amount as the floor of the balance (proven by the simulation), without reading the account', async () => {
    const sent: { method: string; params: unknown }[] = []
    const adapter = adapterFor(spl, {
      rpc: (network) => {
        const inner = createHttpRpcTransport({ urls: network.urls })
        return { request: (calls, signal) => (sent.push(...calls), inner.request(calls, signal)) }
      },
    })
    const alone = requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_234n))
    const verdict = await verifyOf(adapter, alone)
    expect(verdict.response).toEqual({ isValid: true, payer: spl.payer.address })
    expect(verdict.spend).toEqual({ account: `${SOLANA_DEVNET}:${spl.payerAta}`, amount: 1_234n, balance: 1_234n, since: expect.any(Number), floor: true })
    expect((sent.find((call) => call.method === 'simulateTransaction')!.params as [string, Record<string, unknown>])[1]).not.toHaveProperty('accounts')
    // Verified again under its reservation (the core's retry after a refused hold): the balance is read.
    const again = await verifyOf(adapter, alone)
    expect(again.spend?.balance).toBe(tokenBalance(chain.svm, spl.payerAta))
    // Once its settle call ends (the reservation released), the next settle of the source is alone again.
    alone.reservation!.release()
    const next = await verifyOf(adapter, requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 7n)))
    expect(next.spend?.balance).toBe(7n)
  })

  test('with another settle of the source in flight: the source token account, the amount and its real balance before the transfer, in the same one request', async () => {
    const adapter = adapterFor(spl)
    await settleInFlight(adapter)
    const body = await scenarioPaymentBody(chain.url, spl, 1_234n)
    const balance = tokenBalance(chain.svm, spl.payerAta)
    chain.resetStats()
    // Parsing and reserving ask nothing of the node.
    const request = requestOf(adapter, body)
    expect(chain.stats.requests).toBe(0)
    const verdict = await verifyOf(adapter, request)
    expect(verdict.response).toEqual({ isValid: true, payer: spl.payer.address })
    expect(chain.stats.requests).toBe(1)
    expect(chain.stats.calls).toEqual({ getSignatureStatuses: 1, simulateTransaction: 1 })
    expect(verdict.spend).toEqual({ account: `${SOLANA_DEVNET}:${spl.payerAta}`, amount: 1_234n, balance, since: expect.any(Number) })
    // What settle takes: the payment as this verify checked and co-signed it.
    expect(verdict.payment).toBeDefined()
  })

  test('a plain /verify (no settle reserved) does not ask the node for the source account, and holds nothing', async () => {
    const sent: { method: string; params: unknown }[] = []
    const adapter = adapterFor(spl, {
      rpc: (network) => {
        const inner = createHttpRpcTransport({ urls: network.urls })
        return { request: (calls, signal) => (sent.push(...calls), inner.request(calls, signal)) }
      },
    })
    const plain = await verifyOf(adapter, requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_234n), false))
    expect(plain.response).toEqual({ isValid: true, payer: spl.payer.address })
    expect(plain.spend).toBeUndefined()
    const simulation = sent.find((call) => call.method === 'simulateTransaction')!
    expect((simulation.params as [string, Record<string, unknown>])[1]).not.toHaveProperty('accounts')
    // A settle's verify asks for it, once another settle of the source is in flight.
    await settleInFlight(adapter)
    sent.length = 0
    const settling = await verifyOf(adapter, requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 1_234n)))
    expect((sent.find((call) => call.method === 'simulateTransaction')!.params as [string, Record<string, unknown>])[1]).toHaveProperty('accounts')
    expect(settling.spend?.amount).toBe(1_234n)
  })

  test('follows the chain: after a settled payment the next verify reports the lower balance', async () => {
    const f = createFacilitator({ schemes: [adapterFor(spl)] })
    expect((await f.settle(await scenarioPaymentBody(chain.url, spl, 2_000n))).success).toBe(true)
    const adapter = adapterFor(spl)
    await settleInFlight(adapter)
    const verdict = await verifyOf(adapter, requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 5n)))
    expect(verdict.spend?.balance).toBe(tokenBalance(chain.svm, spl.payerAta))
  })

  test('settles racing from one source share one balance read (and its moment); a request verified again reads afresh', async () => {
    const sent: { method: string; params: unknown }[] = []
    // Armed, the next request waits for `release` (a read kept under way); `onHeld` says it was sent.
    let hold: Promise<void> | undefined
    let onHeld = () => {}
    const adapter = adapterFor(spl, {
      rpc: (network) => {
        const inner = createHttpRpcTransport({ urls: network.urls })
        return {
          request: async (calls, signal) => {
            sent.push(...calls)
            const held = hold
            hold = undefined
            if (held) (onHeld(), await held)
            return inner.request(calls, signal)
          },
        }
      },
    })
    const asksAccounts = () => sent.filter((call) => call.method === 'simulateTransaction' && 'accounts' in (call.params as [string, Record<string, unknown>])[1]).length
    await settleInFlight(adapter)
    sent.length = 0
    const requests = await Promise.all([1n, 2n, 3n, 4n].map(async (amount) => requestOf(adapter, await scenarioPaymentBody(chain.url, spl, amount))))
    const balance = tokenBalance(chain.svm, spl.payerAta)
    const verdicts = await Promise.all(requests.map((r) => verifyOf(adapter, r)))
    expect(verdicts.every((v) => v.response.isValid)).toBe(true)
    expect(sent.filter((call) => call.method === 'simulateTransaction')).toHaveLength(4)
    expect(asksAccounts()).toBe(1)
    const spends = verdicts.map((verdict) => verdict.spend)
    expect(spends.map((spend) => spend?.amount)).toEqual([1n, 2n, 3n, 4n])
    expect(new Set(spends.map((spend) => spend?.balance))).toEqual(new Set([balance]))
    // The moment of the shared read: what lands after it counts against it (core holds).
    expect(new Set(spends.map((spend) => spend?.since)).size).toBe(1)

    // Verified again under its reservation (the core's retry after a refused hold), while another
    // request's read of the same account is under way: it does not share that read, it reads its own.
    let release!: () => void
    hold = new Promise<void>((resolve) => (release = resolve))
    const heldSent = new Promise<void>((resolve) => (onHeld = resolve))
    const racing = verifyOf(adapter, requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 5n)))
    await heldSent
    const againing = verifyOf(adapter, requests[3]!)
    // A verify that shared the held read would wait for it: give it time to finish on its own.
    await Promise.race([againing, new Promise((resolve) => setTimeout(resolve, 2_000))])
    expect(asksAccounts()).toBe(3)
    release()
    const [again, raced] = await Promise.all([againing, racing])
    expect(raced.spend?.amount).toBe(5n)
    expect(again.spend?.amount).toBe(4n)
    expect(again.spend?.since).toBeGreaterThanOrEqual(spends[0]!.since!)
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
    await settleInFlight(adapter)
    sent.length = 0
    const failing = requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 10n ** 12n))
    const fine = requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 9n))
    // The failing payment's verify reads the balance; the other one, started once that read is out, shares it.
    const bad = verifyOf(adapter, failing)
    await simulating
    const good = await verifyOf(adapter, fine)
    expect((await bad).response.isValid).toBe(false)
    expect(good.response).toEqual({ isValid: true, payer: spl.payer.address })
    const withAccounts = sent.filter((call) => call.method === 'simulateTransaction' && 'accounts' in (call.params as [string, Record<string, unknown>])[1])
    // The failing read; the sharer's simulation without accounts; then its own read once the shared one gave nothing.
    expect(sent.filter((call) => call.method === 'simulateTransaction')).toHaveLength(3)
    expect(withAccounts).toHaveLength(2)
    expect(good.spend).toMatchObject({ amount: 9n, balance: tokenBalance(chain.svm, spl.payerAta) })
  })

  test('none after a verify that answered invalid, or when the node leaves the simulated accounts out', async () => {
    const adapter = adapterFor(spl)
    const tooMuch = await verifyOf(adapter, requestOf(adapter, await scenarioPaymentBody(chain.url, spl, 10n ** 12n)))
    expect(tooMuch.response.isValid).toBe(false)
    expect(tooMuch.spend).toBeUndefined()
    expect(tooMuch.payment).toBeUndefined()

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
    await settleInFlight(blind)
    const verdict = await verifyOf(blind, requestOf(blind, await scenarioPaymentBody(chain.url, spl, 7n)))
    expect(verdict.response).toEqual({ isValid: true, payer: spl.payer.address })
    expect(verdict.spend).toBeUndefined()
  })

  test('a Token-2022 payment with an allowed transfer fee spends what it moves (fee included)', async () => {
    const s = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM, mintExtensions: [transferFeeExtension({ basisPoints: 1_000, maximumFee: 10n ** 12n })] })
    const adapter = adapterFor(s, { networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, allowedMintExtensions: ['transferFee'] }] })
    const body = await scenarioPaymentBody(chain.url, s, 10_000n)
    // Alone on its source: the amount it moves, fee included, as the floor.
    const alone = await verifyOf(adapter, requestOf(adapter, structuredClone({ ...body, paymentRequirements: { ...body.paymentRequirements, amount: '9000' }, paymentPayload: { ...body.paymentPayload, accepted: { ...body.paymentPayload.accepted, amount: '9000' } } })))
    expect(alone.spend).toEqual({ account: `${SOLANA_DEVNET}:${s.payerAta}`, amount: 10_000n, balance: 10_000n, since: expect.any(Number), floor: true })
    body.paymentRequirements.amount = '9000'
    body.paymentPayload.accepted.amount = '9000'
    const verdict = await verifyOf(adapter, requestOf(adapter, body))
    expect(verdict.response).toEqual({ isValid: true, payer: s.payer.address })
    expect(verdict.spend).toEqual({ account: `${SOLANA_DEVNET}:${s.payerAta}`, amount: 10_000n, balance: s.balance, since: expect.any(Number) })
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
