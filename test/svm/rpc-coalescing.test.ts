/**
 * Requests in flight to a Solana RPC are bounded; requests made while every
 * one is taken wait and leave together, their calls in one JSON-RPC batch.
 * Against LiteSVM's loopback JSON-RPC behind the fault proxy.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError, SOLANA_DEVNET } from '../../src/index.js'
import { createHttpRpcTransport, exactSvm, type ExactSvmConfig } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, type PaymentScenario, scenarioPaymentBody, startSolanaTestRpc } from '../support/svm-fixtures.js'
import { verifyArrivingTogether } from '../support/arrive-together.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'

const figures: string[] = []
afterAll(() => console.info(`[svm rpc-coalescing]\n${figures.join('\n')}`))

let chain: LiteSvmRpc
let spl: PaymentScenario
let proxy: FaultProxy
beforeAll(async () => {
  chain = await startSolanaTestRpc()
  spl = await createPaymentScenario(chain.svm)
  proxy = await startFaultProxy(chain.url)
})
afterAll(async () => {
  await proxy?.close()
  await chain?.close()
})
beforeEach(() => {
  proxy.setMode({ kind: 'pass' })
  proxy.resetPeak()
})

const viaProxy = (overrides: Partial<ExactSvmConfig> = {}) =>
  createFacilitator({
    schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: proxy.url }], feePayers: [spl.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 2_000, ...overrides })],
  })

const bodies = (count: number) => Promise.all(Array.from({ length: count }, () => scenarioPaymentBody(chain.url, spl, 1_000n)))

describe('requests in flight to a Solana RPC', () => {
  it('a burst of verifies through a distant RPC holds at most maxRpcRequestsInFlight requests open and merges the rest into batches', async () => {
    const requests = await bodies(30)
    const facilitator = viaProxy({ maxRpcRequestsInFlight: 2 })
    proxy.setMode({ kind: 'delay', ms: 20 })
    const before = { calls: proxy.calls.length, connections: proxy.connections }
    const answers = await Promise.all(requests.map((request) => facilitator.verify(request)))
    expect(answers.map((answer) => answer.isValid)).toEqual(requests.map(() => true))
    const sent = proxy.calls.slice(before.calls)
    expect(proxy.peakOpen).toBeLessThanOrEqual(2)
    expect(proxy.connections - before.connections).toBeLessThanOrEqual(2)
    // Each verify simulated its transaction once; merged batches carried several verifies' calls.
    expect(sent.flat().filter((call) => call.method === 'simulateTransaction')).toHaveLength(30)
    expect(sent.length).toBeLessThan(15)
    expect(Math.max(...sent.map((calls) => calls.length))).toBeGreaterThan(2)
    figures.push(`30 verifies, 20 ms RPC, 2 in flight: ${sent.length} requests (largest ${Math.max(...sent.map((c) => c.length))} calls), peak open ${proxy.peakOpen}`)
  })

  it('POST /verify requests that arrive together at a node:http server: the first leaves at once, the rest of its turn as one request', async () => {
    const requests = await bodies(4)
    const facilitator = viaProxy()
    await facilitator.verify(requests[0]!) // caches (the mint's decimals, the fee payer) filled first
    const from = proxy.calls.length
    const answers = await verifyArrivingTogether(facilitator, requests.slice(1))
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 200[\s\S]*"isValid":true/)
    const pair = ['getSignatureStatuses', 'simulateTransaction']
    // The first finds the RPC idle and leaves at the end of its microtask; the others wait for the end of the turn.
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method))).toEqual([pair, [...pair, ...pair]])
  })

  it.each(['object', 'array'] as const)('a node that refuses the merged batch (one error, %s) gets each request alone, as it was made, and every verify answers', async (shape) => {
    const requests = await bodies(10)
    const facilitator = viaProxy({ maxRpcRequestsInFlight: 1 })
    // A node that takes a verify's own batch of 2 calls but no more.
    proxy.setModeFor(['simulateTransaction'], { kind: 'refuse-batches', shape }, { batches: true, matching: (calls) => calls.length > 2 })
    const from = proxy.calls.length
    const answers = await Promise.all(requests.map((request) => facilitator.verify(request)))
    expect(answers.map((answer) => answer.isValid)).toEqual(requests.map(() => true))
    const sent = proxy.calls.slice(from)
    expect(sent.some((calls) => calls.length > 2)).toBe(true)
    // The requests sent again alone still went one at a time.
    expect(proxy.peakOpen).toBeLessThanOrEqual(1)
    // Every simulation that got an answer went in a request of its own verify's calls.
    expect(sent.filter((calls) => calls.length <= 2).flat().filter((call) => call.method === 'simulateTransaction')).toHaveLength(10)
  })

  it('a caller whose budget runs out while its request waits for a slot gets a timeout, and the request is never sent', async () => {
    const rpc = createHttpRpcTransport({ urls: [proxy.url], maxInFlight: 1 })
    proxy.setMode({ kind: 'delay', ms: 150 })
    const from = proxy.calls.length
    const [first, impatient, patient] = await Promise.allSettled([
      rpc.request([{ method: 'getSlot', params: [] }]),
      rpc.request([{ method: 'getBlockHeight', params: [] }], AbortSignal.timeout(60)),
      rpc.request([{ method: 'getLatestBlockhash', params: [] }]),
    ])
    expect(first.status).toBe('fulfilled')
    expect((impatient as PromiseRejectedResult).reason).toMatchObject({ code: 'timeout' })
    expect((patient as PromiseFulfilledResult<{ ok: boolean }[]>).value[0]?.ok).toBe(true)
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method))).toEqual([['getSlot'], ['getLatestBlockhash']])
  })

  it('a caller whose budget runs out while its batch is on the wire stops waiting; the others of the batch get their answers', async () => {
    const rpc = createHttpRpcTransport({ urls: [proxy.url], maxInFlight: 1 })
    proxy.setMode({ kind: 'delay', ms: 150 })
    const from = proxy.calls.length
    const started = performance.now()
    const [first, impatient, patient] = await Promise.allSettled([
      rpc.request([{ method: 'getSlot', params: [] }]),
      rpc.request([{ method: 'getBlockHeight', params: [] }], AbortSignal.timeout(220)),
      rpc.request([{ method: 'getLatestBlockhash', params: [] }]),
    ])
    expect(first.status).toBe('fulfilled')
    expect((impatient as PromiseRejectedResult).reason).toMatchObject({ code: 'timeout' })
    expect((patient as PromiseFulfilledResult<{ ok: boolean }[]>).value[0]?.ok).toBe(true)
    expect(performance.now() - started).toBeGreaterThanOrEqual(290) // two round trips: the first alone, then the two that waited
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method))).toEqual([['getSlot'], ['getBlockHeight', 'getLatestBlockhash']])
  })

  it('an aborted budget sends nothing', async () => {
    const rpc = createHttpRpcTransport({ urls: [proxy.url] })
    const from = proxy.calls.length
    const aborted = AbortSignal.abort()
    await expect(rpc.request([{ method: 'getSlot', params: [] }], aborted)).rejects.toMatchObject({ code: 'timeout' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(proxy.calls.length).toBe(from)
  })

  it('one request whose call fails in a merged batch gets its error outcome; the others get their results', async () => {
    const rpc = createHttpRpcTransport({ urls: [proxy.url], maxInFlight: 1 })
    proxy.setMode({ kind: 'delay', ms: 20 })
    const from = proxy.calls.length
    const [, bad, good] = await Promise.all([
      rpc.request([{ method: 'getSlot', params: [] }]),
      rpc.request([{ method: 'getBalance', params: ['not-a-key'] }]),
      rpc.request([{ method: 'getBalance', params: [spl.feePayer.address] }]),
    ])
    expect(bad?.[0]?.ok).toBe(false)
    expect(good?.[0]).toMatchObject({ ok: true })
    expect(proxy.calls.slice(from).map((calls) => calls.length)).toEqual([1, 2])
  })

  it('maxRpcRequestsInFlight is refused unless it is an integer from 1 to 1000', () => {
    for (const bad of [0, 2.5, 1001]) {
      expect(() => viaProxy({ maxRpcRequestsInFlight: bad }), String(bad)).toThrow(FacilitatorError)
    }
    expect(() => viaProxy({ maxRpcRequestsInFlight: 1000 })).not.toThrow()
  })
})
