/**
 * Requests in flight to one RPC URL are bounded; calls made while every one is
 * taken wait and leave together as one JSON-RPC batch. Against a real anvil
 * behind the fault proxy, which counts requests, connections and the most
 * requests it held open at once.
 */
import { BaseError, createPublicClient, RpcRequestError, type Hex } from 'viem'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { FacilitatorError } from '../../src/errors/facilitator-error.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import { keepAliveHttp } from '../../src/evm/chain/keep-alive-transport.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createConnectionPool } from '../../src/transport/keep-alive-post.js'
import { verifyArrivingTogether } from '../support/arrive-together.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { body } from '../reliability/support.js'

const figures: string[] = []
afterAll(() => console.info(`[rpc-coalescing]\n${figures.join('\n')}`))

let world: EvmFixture
let proxy: FaultProxy
beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 1 })
  proxy = await startFaultProxy(world.node.rpcUrl)
})
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})
beforeEach(() => {
  proxy.setMode({ kind: 'pass' })
  proxy.resetPeak()
})

/** A facilitator on the fixture's key, through the proxy. */
const viaProxy = (overrides: Partial<ExactEvmConfig> = {}) =>
  createFacilitator({ schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset] }], ...overrides }))] })

/** `count` valid verify requests of one payer. */
async function verifyBodies(count: number) {
  const payer = await world.newPayer()
  const requirements = world.requirementsV2()
  return Promise.all(Array.from({ length: count }, async () => body(await signExactEvmPayment({ signer: payer, requirements }), requirements)))
}

/** A viem client on our transport to the proxy, with its own pool. */
const clientOf = (maxInFlight: number) =>
  createPublicClient({ transport: keepAliveHttp(proxy.url, { timeoutMs: 4_000, retryCount: 0, pool: createConnectionPool(), maxInFlight }) })

describe('requests in flight to one RPC URL', () => {
  it('a burst of verifies through a distant RPC holds at most maxRpcRequestsInFlight requests open, on as many connections, and batches the rest', async () => {
    const requests = await verifyBodies(40)
    const facilitator = viaProxy({ maxRpcRequestsInFlight: 3 })
    proxy.setMode({ kind: 'delay', ms: 20 })
    const before = { requests: proxy.requests, calls: proxy.calls.length, connections: proxy.connections }
    // A verify every 2 ms, spread over turns of the event loop: those of one turn would leave as one batch anyway.
    const answers = await Promise.all(
      requests.map((request, i) => new Promise<void>((resolve) => setTimeout(resolve, 2 * i)).then(() => facilitator.verify(request))),
    )
    expect(answers.map((answer) => answer.isValid)).toEqual(requests.map(() => true))
    const sent = proxy.calls.slice(before.calls)
    expect(proxy.peakOpen).toBeLessThanOrEqual(3)
    expect(proxy.connections - before.connections).toBeLessThanOrEqual(3)
    // Every verify's eth_call went, each once; batches carried the ones that queued up.
    expect(sent.flat().filter((call) => call.method === 'eth_call')).toHaveLength(40)
    expect(sent.length).toBeLessThan(20)
    expect(Math.max(...sent.map((calls) => calls.length))).toBeGreaterThan(1)
    figures.push(`40 verifies, 20 ms RPC, 3 in flight: ${sent.length} requests (largest ${Math.max(...sent.map((c) => c.length))} calls), peak open ${proxy.peakOpen}, new connections ${proxy.connections - before.connections}`)
  })

  it('verifies one after another each leave at once, as one request of their two calls', async () => {
    const requests = await verifyBodies(5)
    const facilitator = viaProxy({ maxRpcRequestsInFlight: 1 })
    await facilitator.verify(requests[0]!) // the chain id and fee caches are filled first
    const from = proxy.calls.length
    for (const request of requests.slice(1)) expect((await facilitator.verify(request)).isValid).toBe(true)
    // The chain check and the payer's code (see checkChainState), nobody else's calls.
    const pair = ['eth_call', 'eth_getCode']
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method))).toEqual([pair, pair, pair, pair])
  })

  it('POST /verify requests that arrive together at a node:http server: the first leaves at once, the rest of its turn as one request', async () => {
    const requests = await verifyBodies(4)
    const facilitator = viaProxy()
    await facilitator.verify(requests[0]!) // the chain id and fee caches are filled first
    const from = proxy.calls.length
    const answers = await verifyArrivingTogether(facilitator, requests.slice(1))
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 200[\s\S]*"isValid":true/)
    const pair = ['eth_call', 'eth_getCode']
    // The first finds the RPC idle and leaves at the end of its microtask; the others wait for the end of the turn.
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method))).toEqual([pair, [...pair, ...pair]])
  })

  it('a server that refuses batches gets the waiting calls alone, still at most maxRpcRequestsInFlight at once, and every verify answers', async () => {
    const requests = await verifyBodies(12)
    const facilitator = viaProxy({ maxRpcRequestsInFlight: 2 })
    proxy.setMode({ kind: 'refuse-batches', shape: 'array' })
    proxy.resetPeak()
    const from = proxy.calls.length
    const answers = await Promise.all(requests.map((request) => facilitator.verify(request)))
    expect(answers.map((answer) => answer.isValid)).toEqual(requests.map(() => true))
    const sent = proxy.calls.slice(from)
    // At least one batch was tried and refused; every eth_call then went alone once more.
    const batches = sent.filter((calls) => calls.length > 1)
    expect(batches.length).toBeGreaterThan(0)
    const alone = sent.filter((calls) => calls.length === 1).flat()
    expect(alone.filter((call) => call.method === 'eth_call')).toHaveLength(12)
    expect(proxy.peakOpen).toBeLessThanOrEqual(2)
  })

  it('with several RPC URLs the bound and the batches hold for the URL in use (viem builds the transport again per request)', async () => {
    const second = await startFaultProxy(world.node.rpcUrl)
    try {
      const requests = await verifyBodies(30)
      const facilitator = createFacilitator({
        schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url, second.url] }], maxRpcRequestsInFlight: 2 }))],
      })
      proxy.setMode({ kind: 'delay', ms: 20 })
      proxy.resetPeak()
      const from = proxy.calls.length
      const answers = await Promise.all(requests.map((request) => facilitator.verify(request)))
      expect(answers.map((answer) => answer.isValid)).toEqual(requests.map(() => true))
      const sent = proxy.calls.slice(from)
      expect(proxy.peakOpen).toBeLessThanOrEqual(2)
      expect(sent.length).toBeLessThan(15)
      expect(second.requests).toBe(0)
    } finally {
      await second.close()
    }
  })

  it('one call that fails in a batch fails alone; the others in its batch get their answers', async () => {
    const client = clientOf(1)
    proxy.setMode({ kind: 'delay', ms: 20 })
    const from = proxy.calls.length
    const [first, bad, good] = await Promise.allSettled([
      client.getBlockNumber(),
      client.request({ method: 'eth_getBalance', params: ['0xnot-an-address' as Hex, 'latest'] }),
      client.getBalance({ address: world.signers[0]!.address }),
    ])
    expect(first.status).toBe('fulfilled')
    expect(bad.status).toBe('rejected')
    // The node's own JSON-RPC error for that call (viem names it by its code).
    expect((bad as PromiseRejectedResult).reason).toMatchObject({ code: -32602 })
    expect(((bad as PromiseRejectedResult).reason as BaseError).walk((cause) => cause instanceof RpcRequestError)).toBeInstanceOf(RpcRequestError)
    expect(good.status).toBe('fulfilled')
    expect((good as PromiseFulfilledResult<bigint>).value).toBeGreaterThan(0n)
    // The first left alone; the two that waited went together.
    expect(proxy.calls.slice(from).map((calls) => calls.length)).toEqual([1, 2])
  })

  it('calls of a batch method made in the same event-loop turn leave as one batch even while requests are free; others leave alone', async () => {
    const client = createPublicClient({
      transport: keepAliveHttp(proxy.url, { timeoutMs: 4_000, retryCount: 0, pool: createConnectionPool(), batchMethods: new Set(['eth_getTransactionReceipt']) }),
    })
    const from = proxy.calls.length
    const missing = (i: number) => `0x${i.toString(16).padStart(64, '0')}` as Hex
    await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => client.request({ method: 'eth_getTransactionReceipt', params: [missing(i + 1)] })),
      client.request({ method: 'eth_blockNumber' }),
      client.request({ method: 'eth_chainId' }),
    ])
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method)).sort((a, b) => a.length - b.length)).toEqual([
      ['eth_blockNumber'],
      ['eth_chainId'],
      Array.from({ length: 5 }, () => 'eth_getTransactionReceipt'),
    ])
  })

  it('a send leaves at once even while every request is taken, so it never waits behind reads', async () => {
    const client = createPublicClient({ transport: keepAliveHttp(proxy.url, { timeoutMs: 1_500, retryCount: 0, pool: createConnectionPool(), maxInFlight: 1 }) })
    proxy.setModeFor(['eth_blockNumber'], { kind: 'hang' }, { times: 1 })
    const read = client.getBlockNumber()
    const started = performance.now()
    // Bytes that are no transaction: the node answers with an error at once.
    await expect(client.request({ method: 'eth_sendRawTransaction', params: ['0x02'] })).rejects.toThrow()
    expect(performance.now() - started).toBeLessThan(1_000)
    await expect(read).rejects.toMatchObject({ name: 'TimeoutError' })
  })

  it('a group never carries more than 100 calls', async () => {
    const client = clientOf(1)
    proxy.setMode({ kind: 'delay', ms: 20 })
    const from = proxy.calls.length
    // Raw requests: viem's getChainId would fold identical concurrent calls into one.
    const ids = await Promise.all(Array.from({ length: 251 }, () => client.request({ method: 'eth_chainId' })))
    expect(new Set(ids.map(Number))).toEqual(new Set([world.node.chainId]))
    expect(proxy.calls.slice(from).map((calls) => calls.length)).toEqual([1, 100, 100, 50])
  })

  it('a group that gets no answer fails each of its calls with the transport error; the next calls go', async () => {
    const client = clientOf(1)
    const slow = createPublicClient({ transport: keepAliveHttp(proxy.url, { timeoutMs: 300, retryCount: 0, pool: createConnectionPool(), maxInFlight: 1 }) })
    proxy.setMode({ kind: 'hang' })
    const from = proxy.calls.length
    // Raw requests: viem's getChainId would fold identical concurrent calls into one.
    const outcomes = await Promise.allSettled([slow.getBlockNumber(), slow.request({ method: 'eth_chainId' }), slow.request({ method: 'eth_gasPrice' })])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected'])
    for (const outcome of outcomes) expect((outcome as PromiseRejectedResult).reason.name).toBe('TimeoutError')
    // The two that waited went together; each error quotes its own call only.
    expect(proxy.calls.slice(from).map((calls) => calls.map((call) => call.method))).toEqual([['eth_blockNumber'], ['eth_chainId', 'eth_gasPrice']])
    expect(String((outcomes[1] as PromiseRejectedResult).reason.message)).toContain('eth_chainId')
    expect(String((outcomes[1] as PromiseRejectedResult).reason.message)).not.toContain('eth_gasPrice')
    proxy.setMode({ kind: 'pass' })
    expect(await slow.getChainId()).toBe(world.node.chainId)
    expect(await client.getChainId()).toBe(world.node.chainId)
  })
})

describe('exactEvm maxRpcRequestsInFlight', () => {
  it('is refused unless it is an integer from 1 to 1000', () => {
    for (const bad of [0, -1, 1.5, 1001, Number.NaN]) {
      expect(() => exactEvm(world.adapterConfig({ maxRpcRequestsInFlight: bad })), String(bad)).toThrow(FacilitatorError)
    }
    for (const good of [1, 1000]) expect(() => exactEvm(world.adapterConfig({ maxRpcRequestsInFlight: good }))).not.toThrow()
  })
})
