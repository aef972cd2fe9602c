/**
 * The send lane of one key against a real anvil behind the fault proxy: the
 * transactions that queue up behind a send go together as one JSON-RPC batch,
 * in nonce order; a refusal or a failed journal write stops what is queued
 * behind it (it would wait behind a gap); a batch without an answer goes again,
 * same bytes; a server that takes no batches gets one transaction at a time.
 */
import { createPublicClient, http, parseTransaction, type Hex, type LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { FacilitatorError } from '../../src/errors/facilitator-error.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import { keepAliveBatchPoster } from '../../src/evm/chain/keep-alive-transport.js'
import { createNonceManager, type NonceManager, type NonceTicket } from '../../src/evm/chain/nonce-manager.js'
import { createSendLane, type LaneOutcome, type SendLane } from '../../src/evm/chain/send-lane.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createConnectionPool } from '../../src/transport/keep-alive-post.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { authorizationsUsed, body } from '../reliability/support.js'

const figures: string[] = []
afterAll(() => console.info(`[send-lane]\n${figures.join('\n')}`))

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

/** The raw transactions of every eth_sendRawTransaction request the proxy saw since `from`, one array per request. */
const sendRequestsSince = (from: number): Hex[][] =>
  proxy.calls
    .slice(from)
    .map((calls) => calls.filter((call) => call.method === 'eth_sendRawTransaction').map((call) => (call.params as [Hex])[0]))
    .filter((raws) => raws.length > 0)

const nonceOf = (raw: Hex) => parseTransaction(raw).nonce!

describe('settles of one key through a distant RPC', () => {
  const payments = async (count: number) => {
    const list = []
    for (let i = 0; i < count; i++) {
      const payer = await world.newPayer()
      const requirements = world.requirementsV2()
      list.push({ payer, request: body(await signExactEvmPayment({ signer: payer, requirements }), requirements) })
    }
    return list
  }

  /** A facilitator on the fixture's one key, through the proxy. */
  const viaProxy = (overrides: Partial<ExactEvmConfig> = {}) =>
    createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url] }], receiptPollIntervalMs: 50, ...overrides }))],
      timeouts: { settleMs: 20_000 },
    })
  const keyNonce = () => world.node.publicClient.getTransactionCount({ address: world.signers[0]!.address })

  it('go as batches in nonce order: 30 concurrent settles all land once, in far fewer send requests than transactions', async () => {
    const f = viaProxy()
    const list = await payments(30)
    const nonceBefore = await keyNonce()
    const from = proxy.calls.length
    proxy.setMode({ kind: 'delay', ms: 20 })
    const answers = await Promise.all(list.map(({ request }) => f.settle(request)))
    proxy.setMode({ kind: 'pass' })
    const requests = sendRequestsSince(from)
    figures.push(`  30 settles of one key, 20 ms RPC: ${requests.length} send requests, sizes ${requests.map((r) => r.length).join(',')}`)
    expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(Array(30).fill('success'))
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(30)
    expect(await keyNonce()).toBe(nonceBefore + 30)
    for (const { payer } of list) expect(await authorizationsUsed(world, payer.address, 0n)).toHaveLength(1)
    // Every transaction was sent once, and the node saw the nonces in order.
    const nonces = requests.flat().map(nonceOf)
    expect(nonces).toEqual(Array.from({ length: 30 }, (_, i) => nonceBefore + i))
    expect(requests.length).toBeLessThan(15)
    expect(Math.max(...requests.map((r) => r.length))).toBeGreaterThan(1)
  })

  it('go one at a time with sendBatchSize 1 or a transport of the user\'s', async () => {
    for (const overrides of [{ sendBatchSize: 1 }, { transport: (url: string) => http(url, { retryCount: 0 }) }]) {
      const f = viaProxy(overrides)
      const list = await payments(8)
      const from = proxy.calls.length
      proxy.setMode({ kind: 'delay', ms: 5 })
      const answers = await Promise.all(list.map(({ request }) => f.settle(request)))
      proxy.setMode({ kind: 'pass' })
      expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(Array(8).fill('success'))
      const requests = sendRequestsSince(from)
      expect(requests.map((r) => r.length)).toEqual(Array(8).fill(1))
      expect(requests.flat().map(nonceOf)).toEqual([...requests.flat().map(nonceOf)].sort((a, b) => a - b))
    }
  })

  it('a signer of the user\'s that answers bytes which are not hex fails that settle and leaves no gap for the next', async () => {
    const [key] = world.signers
    let garbled = 1
    const signer = {
      address: key!.address,
      signTransaction: async (transaction: Parameters<NonNullable<LocalAccount['signTransaction']>>[0]) => {
        const raw = await key!.signTransaction!(transaction)
        return (garbled-- > 0 ? `${raw}zz` : raw) as Hex
      },
    }
    const f = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url] }], signers: [signer as LocalAccount], receiptPollIntervalMs: 50 }))],
      timeouts: { settleMs: 10_000 },
    })
    const [first, second] = await payments(2)
    const nonceBefore = await world.node.publicClient.getTransactionCount({ address: key!.address })
    const failed = await f.settle(first!.request).then(
      (answer) => answer,
      (error: unknown) => error,
    )
    expect(failed).not.toMatchObject({ success: true })
    // The garbled transaction's nonce was never used: the next settle takes it and lands at once.
    expect(await f.settle(second!.request)).toMatchObject({ success: true })
    expect(await world.node.publicClient.getTransactionCount({ address: key!.address })).toBe(nonceBefore + 1)
  })

  it('a batch whose answer is cut goes again, same bytes in the same order, and every payment lands once', async () => {
    const f = viaProxy()
    const list = await payments(10)
    const nonceBefore = await keyNonce()
    const from = proxy.calls.length
    proxy.setMode({ kind: 'delay', ms: 20 })
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'cut-after-forward' }, { times: 1, batches: true })
    const answers = await Promise.all(list.map(({ request }) => f.settle(request)))
    proxy.setMode({ kind: 'pass' })
    const requests = sendRequestsSince(from)
    figures.push(`  10 settles, first batch answer cut: send request sizes ${requests.map((r) => r.length).join(',')}`)
    expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(Array(10).fill('success'))
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(10)
    expect(await keyNonce()).toBe(nonceBefore + 10)
    for (const { payer } of list) expect(await authorizationsUsed(world, payer.address, 0n)).toHaveLength(1)
    // The cut batch is sent again as it was.
    const cut = requests.findIndex((raws) => raws.length > 1)
    expect(requests[cut + 1]).toEqual(requests[cut])
  })

  it.each([
    ['object', 200],
    ['array', 200],
    ['object', 400],
    ['array', 413],
  ] as const)('a server that answers a batch as a whole (one error, %s, HTTP %i) gets the same transactions one at a time, in order', async (shape, status) => {
    const f = viaProxy()
    const list = await payments(10)
    const nonceBefore = await keyNonce()
    const from = proxy.calls.length
    proxy.setMode({ kind: 'refuse-batches', shape, status })
    const answers = await Promise.all(list.map(({ request }) => f.settle(request)))
    // Later bursts go one at a time at once, without a refused batch first.
    const second = await payments(5)
    const fromSecond = proxy.calls.length
    const moreAnswers = await Promise.all(second.map(({ request }) => f.settle(request)))
    proxy.setMode({ kind: 'pass' })
    expect([...answers, ...moreAnswers].map((a) => a.errorReason ?? 'success')).toEqual(Array(15).fill('success'))
    expect(await keyNonce()).toBe(nonceBefore + 15)
    const requests = sendRequestsSince(from)
    const refused = requests.filter((raws) => raws.length > 1)
    expect(refused).toHaveLength(1)
    expect(sendRequestsSince(fromSecond).map((r) => r.length)).toEqual(Array(5).fill(1))
    expect(requests.filter((raws) => raws.length === 1).map((raws) => nonceOf(raws[0]!))).toEqual(Array.from({ length: 15 }, (_, i) => nonceBefore + i))
  })
})

describe('createSendLane', () => {
  /**
   * A lane of a fresh funded key on anvil, through the proxy, and a way to hand it signed transfers in turn.
   * Without `batches`, it sends one at a time (as with a transport of the user's); `transportTimeoutMs` 0 is viem's "never".
   */
  async function laneOf(account: LocalAccount, options: { maxBatch?: number; batches?: boolean; transportTimeoutMs?: number; attemptTimeoutMs?: number } = {}) {
    const client = world.node.publicClient
    const viaProxy = createPublicClient({ transport: http(proxy.url, { retryCount: 0, ...(options.transportTimeoutMs === undefined ? {} : { timeout: options.transportTimeoutMs }) }) })
    const nonces = createNonceManager(() => client.getTransactionCount({ address: account.address, blockTag: 'pending' }))
    const pool = createConnectionPool()
    const lane = createSendLane({
      nonces,
      sendOne: (raw) => viaProxy.request({ method: 'eth_sendRawTransaction', params: [raw] }),
      ...(options.batches === false ? {} : { sendBatch: keepAliveBatchPoster([proxy.url], { timeoutMs: 2_000, pool }) }),
      maxBatch: options.maxBatch ?? 20,
      attemptTimeoutMs: options.attemptTimeoutMs ?? 10_000,
    })
    const fees = await client.estimateFeesPerGas()
    const sign = (ticket: NonceTicket, value = 1n) =>
      account.signTransaction!({ chainId: world.node.chainId, nonce: ticket.nonce, to: account.address, value, gas: 21_000n, type: 'eip1559', ...fees })
    return { nonces, lane, sign, pool }
  }

  /** Takes the next ticket, sends its transfer once its turn came, and releases it: the ticket and the outcome. */
  async function sendNext(nonces: NonceManager, lane: SendLane, sign: (ticket: NonceTicket) => Promise<Hex>) {
    const ticket = await nonces.next()
    expect(await nonces.turn(ticket)).toBe(true)
    const outcome = await lane.send({ ticket, raw: await sign(ticket), record: recorded, signal: new AbortController().signal })
    nonces.release(ticket)
    return { ticket, outcome }
  }

  /** Takes `count` tickets and queues each once its turn came, the first alone on the wire and the rest behind it. */
  async function queueInTurn(nonces: NonceManager, lane: SendLane, raws: ((ticket: NonceTicket) => Promise<Hex>)[], records: (() => Promise<void>)[]) {
    const tickets = await Promise.all(raws.map(() => nonces.next()))
    const signed = await Promise.all(tickets.map((ticket, i) => raws[i]!(ticket)))
    const outcomes: Promise<LaneOutcome>[] = []
    for (const [i, ticket] of tickets.entries()) {
      expect(await nonces.turn(ticket)).toBe(true)
      const outcome = lane.send({ ticket, raw: signed[i]!, record: records[i]!, signal: new AbortController().signal })
      outcomes.push(outcome)
      void outcome.finally(() => nonces.release(ticket)).catch(() => undefined)
    }
    return { tickets, signed, settled: await Promise.allSettled(outcomes) }
  }

  const funded = async () => {
    const account = world.node.accounts[5 + (fundedCount++ % 4)]!
    return account
  }
  let fundedCount = 0
  const recorded = () => Promise.resolve()
  const pending = (address: Hex) => world.node.publicClient.getTransactionCount({ address, blockTag: 'pending' })

  it('only transactions of one shape (gas limit and fees) share a batch; the order is kept across the cuts', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account)
    const start = await pending(account.address)
    const from = proxy.calls.length
    const tickets = await Promise.all(Array.from({ length: 5 }, () => nonces.next()))
    const raws = await Promise.all(tickets.map((ticket) => sign(ticket)))
    const shapes = ['a', 'a', 'a', 'b', 'a']
    const outcomes: Promise<LaneOutcome>[] = []
    for (const [i, ticket] of tickets.entries()) {
      expect(await nonces.turn(ticket)).toBe(true)
      outcomes.push(lane.send({ ticket, raw: raws[i]!, record: recorded, signal: new AbortController().signal, shape: shapes[i]! }))
    }
    expect((await Promise.all(outcomes)).map((outcome) => outcome.kind)).toEqual(Array(5).fill('accepted'))
    for (const ticket of tickets) nonces.release(ticket)
    // The first went alone; the rest queued behind it and left in three requests, cut where the shape changes.
    expect(sendRequestsSince(from).map((raws) => raws.map(nonceOf))).toEqual([[start], [start + 1, start + 2], [start + 3], [start + 4]])
  })

  it('a failed journal write stops its entry, leaves those behind it unwritten and unsent, and the next nonce fills the gap', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account)
    const start = await pending(account.address)
    const from = proxy.calls.length
    const written: number[] = []
    const record = (index: number) => async () => {
      if (index === 2) throw new Error('journal down')
      written.push(index)
    }
    const { settled } = await queueInTurn(nonces, lane, [sign, sign, sign, sign], [0, 1, 2, 3].map(record))
    // The first went alone; the other three queued behind it, journaled in nonce order.
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : (s.reason as Error).message))).toEqual(['accepted', 'accepted', 'journal down', 'withdrawn'])
    expect(written).toEqual([0, 1])
    expect(sendRequestsSince(from).flat().map(nonceOf)).toEqual([start, start + 1])
    expect(await pending(account.address)).toBe(start + 2)
    expect((await nonces.next()).nonce).toBe(start + 2)
  })

  it('a refusal stops the batches queued behind it; an entry after it in its own batch was sent, and the next nonce taken fills the gap', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account, { maxBatch: 2 })
    const start = await pending(account.address)
    const from = proxy.calls.length
    const tooMuch = (ticket: NonceTicket) => sign(ticket, 10n ** 30n) // more than the key holds: insufficient funds
    const { settled } = await queueInTurn(nonces, lane, [sign, tooMuch, sign, sign], [recorded, recorded, recorded, recorded])
    const kinds = settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : 'threw'))
    expect(kinds).toEqual(['accepted', 'refused', 'accepted', 'withdrawn'])
    const refusal = settled[1]!.status === 'fulfilled' && settled[1]!.value.kind === 'refused' ? settled[1]!.value.error : undefined
    expect(String((refusal as Error).message)).toMatch(/insufficient funds/i)
    expect(sendRequestsSince(from).map((raws) => raws.map(nonceOf))).toEqual([[start], [start + 1, start + 2]])
    // The third waits behind the refused nonce; the count, re-read, hands that nonce out again.
    const filled = await sendNext(nonces, lane, sign)
    expect(filled.ticket.nonce).toBe(start + 1)
    expect(filled.outcome.kind).toBe('accepted')
    // The parked third keeps its nonce: the one after the gap is above it.
    const after = await nonces.next()
    nonces.release(after)
    expect(after.nonce).toBe(start + 3)
    await world.node.testClient.mine({ blocks: 1 })
    expect(await world.node.publicClient.getTransactionCount({ address: account.address })).toBe(start + 3)
  })

  it('a batch that never gets an answer fails its entries with rpc faults after three sends of the same bytes, and withdraws what is queued', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account, { maxBatch: 2 })
    const start = await pending(account.address)
    const from = proxy.calls.length
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'cut' }, { batches: true })
    const { settled } = await queueInTurn(nonces, lane, [sign, sign, sign, sign], [recorded, recorded, recorded, recorded])
    proxy.setMode({ kind: 'pass' })
    const kinds = settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : ((s.reason as FacilitatorError).code ?? 'foreign')))
    expect(kinds).toEqual(['accepted', 'rpc_unavailable', 'rpc_unavailable', 'withdrawn'])
    const requests = sendRequestsSince(from)
    expect(requests.map((raws) => raws.map(nonceOf))).toEqual([[start], [start + 1, start + 2], [start + 1, start + 2], [start + 1, start + 2]])
    expect(await pending(account.address)).toBe(start + 1)
  })

  it('bytes the node holds already count as taken, not as a refusal', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account)
    await world.node.testClient.setAutomine(false)
    try {
      const ticket = await nonces.next()
      const raw = await sign(ticket)
      // An earlier send reached the node, its answer was lost.
      await world.node.publicClient.request({ method: 'eth_sendRawTransaction', params: [raw] })
      expect(await nonces.turn(ticket)).toBe(true)
      const outcome = await lane.send({ ticket, raw, record: recorded, signal: new AbortController().signal })
      nonces.release(ticket)
      expect(outcome.kind).toBe('accepted')
      // Nothing was given up: the count goes on without a re-read.
      expect((await nonces.next()).nonce).toBe(ticket.nonce + 1)
    } finally {
      await world.node.testClient.setAutomine(true)
    }
  })

  it('a count reset elsewhere (a higher nonce given up before its turn) withdraws nothing: the queued entries go, the gap above them is filled', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account)
    const start = await pending(account.address)
    const from = proxy.calls.length
    const [first, second, third] = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    const signal = new AbortController().signal
    expect(await nonces.turn(first!)).toBe(true)
    const sending = [lane.send({ ticket: first!, raw: await sign(first!), record: recorded, signal })]
    expect(await nonces.turn(second!)).toBe(true)
    sending.push(lane.send({ ticket: second!, raw: await sign(second!), record: recorded, signal }))
    // The third's signing failed: its nonce is given up, and the one taken next reuses it.
    nonces.reset()
    nonces.release(third!)
    const fresh = await nonces.next()
    expect(fresh.nonce).toBe(start + 2)
    expect(await nonces.turn(fresh)).toBe(true)
    sending.push(lane.send({ ticket: fresh, raw: await sign(fresh), record: recorded, signal }))
    expect((await Promise.all(sending)).map((outcome) => outcome.kind)).toEqual(['accepted', 'accepted', 'accepted'])
    for (const ticket of [first!, second!, fresh]) nonces.release(ticket)
    expect(sendRequestsSince(from).flat().map(nonceOf)).toEqual([start, start + 1, start + 2])
    expect(await pending(account.address)).toBe(start + 3)
  })

  it('an entry whose turn came before a lower nonce was refused is withdrawn when it reaches the lane', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account)
    const start = await pending(account.address)
    const from = proxy.calls.length
    const [first, second] = await Promise.all([nonces.next(), nonces.next()])
    const signal = new AbortController().signal
    expect(await nonces.turn(first!)).toBe(true)
    const refused = lane.send({ ticket: first!, raw: await sign(first!, 10n ** 30n), record: recorded, signal })
    expect(await nonces.turn(second!)).toBe(true)
    const rawSecond = await sign(second!)
    // The second is handed over only after the first's refusal: it would wait behind the gap.
    expect((await refused).kind).toBe('refused')
    nonces.release(first!)
    let wrote = false
    const behind = await lane.send({ ticket: second!, raw: rawSecond, record: async () => void (wrote = true), signal })
    nonces.release(second!)
    expect(behind.kind).toBe('withdrawn')
    expect(wrote).toBe(false)
    expect(sendRequestsSince(from).flat().map(nonceOf)).toEqual([start])
    expect((await nonces.next()).nonce).toBe(start)
  })

  it('without batches, an unanswered send holds back the ones above it; the retry starts from it', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account, { batches: false })
    const start = await pending(account.address)
    const from = proxy.calls.length
    // The first send of the second transaction is cut before it reaches the node.
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'cut' }, { times: 1, matching: (calls) => calls.some((call) => nonceOf((call.params as [Hex])[0]) === start + 1) })
    const { settled } = await queueInTurn(nonces, lane, [sign, sign, sign, sign], [recorded, recorded, recorded, recorded])
    proxy.setMode({ kind: 'pass' })
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : 'threw'))).toEqual(['accepted', 'accepted', 'accepted', 'accepted'])
    expect(sendRequestsSince(from).map((raws) => raws.map(nonceOf))).toEqual([[start], [start + 1], [start + 1], [start + 2], [start + 3]])
    expect(await pending(account.address)).toBe(start + 4)
  })

  it('a transport that never answers holds the lane only for its bound: the send faults, what queued behind it is withdrawn, the next goes', async () => {
    const account = await funded()
    // A transport of the user's without a timeout (viem's 0), in front of a proxy that hangs the first sends.
    const { nonces, lane, sign } = await laneOf(account, { batches: false, transportTimeoutMs: 0, attemptTimeoutMs: 100 })
    const start = await pending(account.address)
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'hang' }, { times: 3 })
    const { settled } = await queueInTurn(nonces, lane, [sign, sign], [recorded, recorded])
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : (s.reason as FacilitatorError).code))).toEqual(['rpc_timeout', 'withdrawn'])
    // The lane is free: the nonce given up is taken again and the transaction lands.
    const next = await sendNext(nonces, lane, sign)
    expect(next.ticket.nonce).toBe(start)
    // The whole outcome: a refusal shows the node's error (this failed once in CI as 'refused', not reproduced since).
    expect(next.outcome).toEqual({ kind: 'accepted' })
    expect(await pending(account.address)).toBe(start + 1)
  })

  it('an entry whose budget ran out is still sent again with the higher ones behind it, so they never overtake it', async () => {
    const account = await funded()
    const { nonces, lane, sign } = await laneOf(account)
    const start = await pending(account.address)
    const from = proxy.calls.length
    const tickets = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    const raws = await Promise.all(tickets.map((ticket) => sign(ticket)))
    const spent = new AbortController()
    spent.abort()
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'cut' }, { times: 2, batches: true })
    const outcomes: Promise<LaneOutcome>[] = []
    for (const [i, ticket] of tickets.entries()) {
      expect(await nonces.turn(ticket)).toBe(true)
      outcomes.push(lane.send({ ticket, raw: raws[i]!, record: recorded, signal: i === 1 ? spent.signal : new AbortController().signal }))
    }
    expect((await Promise.all(outcomes)).map((outcome) => outcome.kind)).toEqual(['accepted', 'accepted', 'accepted'])
    for (const ticket of tickets) nonces.release(ticket)
    expect(sendRequestsSince(from).map((r) => r.map(nonceOf))).toEqual([[start], [start + 1, start + 2], [start + 1, start + 2], [start + 1, start + 2]])
  })
})

describe('exactEvm sendBatchSize', () => {
  it('is refused unless it is an integer from 1 to 1000', () => {
    for (const sendBatchSize of [0, 1.5, 1_001, Number.NaN]) {
      expect(() => exactEvm(world.adapterConfig({ sendBatchSize }))).toThrow(expect.objectContaining({ code: 'misconfigured', message: expect.stringContaining('sendBatchSize') }))
    }
    expect(() => exactEvm(world.adapterConfig({ sendBatchSize: 1 }))).not.toThrow()
  })
})
