/**
 * createNodePaywall over real HTTP on anvil, paid by the official @x402 clients: batch-settlement in
 * an Express route (deposit, vouchers, a client that lost its state recovering through the
 * corrective 402, a refund), exact through Permit2 and upto on a node:http server, and the web
 * paywall (createPaywall behind createNodeListener) and the node one answering the same requests
 * with the same status, headers and body.
 */
import { toClientEvmSigner } from '@x402/evm'
import { x402Client, type x402Client as X402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import express from 'express'
import type { Hex, LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, type Facilitator } from '../../src/facilitator/facilitator.js'
import { evmSchemes } from '../../src/evm/index.js'
import { createNodeListener } from '../../src/http/index.js'
import { createBatchSettlementServer } from '../../src/resource-server/batch/index.js'
import { createNodePaywall, createPaywall, type NodePaidAnswer, type NodePaidWork, type PaymentOffer, type PaywallOptions } from '../../src/resource-server/index.js'
import { installBatchSettlement, readChannelOnChain } from '../support/batch-settlement-contracts.js'
import { signVoucher } from '../support/batch-settlement-signing.js'
import { payVia, challengeOf, tamper, type ShopFetch } from '../support/batch-paywall-shop.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'
import { installPermit2, newPermit2Payer } from '../support/permit2-contracts.js'
import { BatchSettlementEvmScheme as BatchClient } from '@x402/evm/batch-settlement/client'

const NETWORK = 'eip155:84532'
const PRICE = 1_000n
const MAXIMUM = 5_000n
const authorizer = privateKeyToAccount(generatePrivateKey())
const R = 'invalid_batch_settlement_evm_'

let world: EvmFixture
let facilitator: Facilitator
const servers: LoopbackServer[] = []

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  facilitator = createFacilitator({ schemes: evmSchemes(world.adapterConfig(), { batchSettlement: { receiverAuthorizer: authorizer, allowDelegatedRefunds: true } }) })
  await world.warmUp(facilitator)
}, 120_000)
afterAll(async () => {
  for (const server of servers) await server.close()
  await world?.stop()
})

const newReceiver = () => privateKeyToAccount(generatePrivateKey()).address
const batchOffer = (receiver: Hex): PaymentOffer => ({ scheme: 'batch-settlement', network: NETWORK, amount: PRICE.toString(), asset: world.token.address, payTo: receiver, extra: { name: world.token.name, version: world.token.version } })
const serve = async (listener: Parameters<typeof listen>[0]) => {
  const server = await listen(listener)
  servers.push(server)
  return server
}

/** fetch over HTTP that records, as the in-memory shop does, the statuses and headers of paid requests. */
function recording(): ShopFetch {
  const seen: number[] = []
  const headers: string[] = []
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init)
    const header = request.headers.get('PAYMENT-SIGNATURE')
    const response = await fetch(request)
    if (header) {
      seen.push(response.status)
      headers.push(header)
    }
    return response
  }
  return Object.assign(fetcher, { seen, headers, worked: () => 0 })
}

const settlementOf = (response: Response) => decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? '') as { success: boolean; transaction: string; amount?: string; extra?: Record<string, any> }

describe('createNodePaywall: batch-settlement in an Express route, paid by the official client over HTTP', () => {
  it('deposits once, takes vouchers, recovers a client that lost its state through the corrective 402, and refunds', async () => {
    const receiver = newReceiver()
    const batch = createBatchSettlementServer({ facilitator, claimPolicy: false })
    const paid = createNodePaywall({ facilitator, batchSettlement: batch, offers: [batchOffer(receiver)] })
    let worked = 0
    const work: NodePaidWork = async (payment) => {
      worked++
      return { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ok: true, payer: payment.payer }) }
    }
    const app = express()
    app.get('/call', (req, res) => paid(req, res, work))
    const shop = await serve(app)
    const url = `${shop.url}/call`

    const payer = await world.newPayer(1_000_000n)
    const target = recording()
    const client = new BatchClient(payer, { depositPolicy: { depositMultiplier: 10 } })
    const pay = payVia(client, target)
    for (let i = 0; i < 4; i++) {
      const response = await pay(url)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ ok: true, payer: payer.address })
      const settlement = settlementOf(response)
      expect(settlement.extra?.channelState.chargedCumulativeAmount).toBe((BigInt(i + 1) * PRICE).toString())
      if (i === 0) expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/)
      else expect(settlement.transaction).toBe('')
    }
    const [channel] = await batch.store.list()
    expect(channel).toMatchObject({ charged: 4n * PRICE, balance: 10n * PRICE })

    // The last voucher again: the corrective 402 with the channel's state, nothing charged.
    const replay = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': target.headers.at(-1)! } })
    expect(replay.status).toBe(402)
    expect(challengeOf(replay).error).toBe(`${R}cumulative_amount_mismatch`)
    expect(challengeOf(replay).accepts[0]!.extra.channelState).toMatchObject({ channelId: channel!.channelId, chargedCumulativeAmount: '4000' })

    const workedBefore = worked

    // A second client of the same payer without local state recovers through the corrective 402.
    const reader = toClientEvmSigner(payer, world.node.publicClient as never)
    const fresh = new BatchClient(reader)
    const before = target.seen.length
    expect((await payVia(fresh, target)(url)).status).toBe(200)
    expect(target.seen.slice(before)).toEqual([402, 200])
    expect(worked).toBe(workedBefore + 1)
    expect((await batch.store.get(channel!.channelId))?.charged).toBe(5n * PRICE)

    // The refund: what is left goes back, what was charged is claimed in the same transaction.
    const refund = await fresh.refund(url, { fetch: target as typeof fetch })
    expect(refund).toMatchObject({ success: true, amount: (10n * PRICE - 5n * PRICE).toString() })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 5n * PRICE)
    expect((await readChannelOnChain(world.node, channel!.channelId)).totalClaimed).toBe(5n * PRICE)
    expect(await batch.store.get(channel!.channelId)).toBeUndefined()
  }, 180_000)

  it('charges nothing when the work answers >= 400 or answers what HTTP cannot carry (500 misconfigured)', async () => {
    const receiver = newReceiver()
    const batch = createBatchSettlementServer({ facilitator, claimPolicy: false })
    const paid = createNodePaywall({ facilitator, batchSettlement: batch, offers: [batchOffer(receiver)] })
    let mode: 'ok' | 'error' | 'bad-header' | 'bad-status' = 'ok'
    const shop = await serve((req, res) =>
      void paid(req, res, async (): Promise<NodePaidAnswer> => {
        if (mode === 'error') return { status: 503, headers: { 'retry-after': '1' }, body: 'down' }
        if (mode === 'bad-header') return { headers: { 'x-note': 'two\nlines' }, body: 'x' }
        if (mode === 'bad-status') return { status: 99, body: 'x' }
        return { body: 'ok' }
      }),
    )
    const target = recording()
    const client = new BatchClient(await world.newPayer(1_000_000n))
    const pay = payVia(client, target)
    expect((await pay(`${shop.url}/call`)).status).toBe(200)
    const [channel] = await batch.store.list()
    for (const [which, status] of [['error', 503], ['bad-header', 500], ['bad-status', 500]] as const) {
      mode = which
      const response = await pay(`${shop.url}/call`)
      expect(response.status, which).toBe(status)
      if (status === 500) expect(await response.json()).toMatchObject({ code: 'misconfigured' })
      else expect(await response.text()).toBe('down')
      expect(response.headers.get('PAYMENT-RESPONSE')).toBeNull()
      expect((await batch.store.get(channel!.channelId))?.charged, which).toBe(PRICE)
    }
  }, 120_000)
})

describe('createNodePaywall: exact through Permit2 and upto on node:http, paid by the official clients', () => {
  let shop: LoopbackServer
  beforeAll(async () => {
    const extra = { name: world.token.name, version: world.token.version }
    const paid = createNodePaywall({
      facilitator,
      offers: [
        { scheme: 'exact', network: NETWORK, amount: '3000', asset: world.token.address, payTo: world.payTo, extra: { ...extra, assetTransferMethod: 'permit2' } },
        { scheme: 'upto', network: NETWORK, amount: MAXIMUM.toString(), asset: world.token.address, payTo: world.payTo, extra },
      ],
    })
    // ?usage=N reports N for a metered payment, ?usage=none nothing.
    shop = await serve((req, res) =>
      void paid(req, res, async (payment) => {
        const usage = new URL(req.url ?? '/', 'http://x').searchParams.get('usage')
        const response = { headers: { 'content-type': 'text/plain' }, body: new TextEncoder().encode(`paid by ${payment.payer}`) }
        return !payment.metered || usage === 'none' ? response : { response, usage: BigInt(usage ?? '0') }
      }),
    )
  })

  async function payThrough(client: X402Client, query = '') {
    const url = `${shop.url}/complete${query}`
    const challenge = await fetch(url)
    expect(challenge.status).toBe(402)
    const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(challenge.headers.get('PAYMENT-REQUIRED')!))
    return fetch(url, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payload) } })
  }
  const exactClient = (payer: LocalAccount) =>
    new x402Client((_v, accepts) => accepts.find((r) => r.scheme === 'exact')!).setSpendControls(false).register(NETWORK, new ExactEvmScheme(payer))
  const uptoClient = (payer: LocalAccount) => new x402Client((_v, accepts) => accepts.find((r) => r.scheme === 'upto')!).setSpendControls(false).register(NETWORK, new UptoEvmScheme(payer))

  it('exact: 402 → paid → 200 with the bytes the work answered, the price moved', async () => {
    const payer = await newPermit2Payer(world)
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const paid = await payThrough(exactClient(payer))
    expect(paid.status).toBe(200)
    expect(await paid.text()).toBe(`paid by ${payer.address}`)
    expect(paid.headers.get('content-length')).toBe(String(`paid by ${payer.address}`.length))
    expect(settlementOf(paid)).toMatchObject({ success: true, transaction: expect.stringMatching(/^0x/) })
    expect((await tokenBalance(world.node, world.token, world.payTo)) - before).toBe(3000n)
  }, 120_000)

  it('upto: settles exactly the usage; a metered answer without a usage is 500 misconfigured, nothing moved', async () => {
    const payer = await newPermit2Payer(world)
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const paid = await payThrough(uptoClient(payer), '?usage=1234')
    expect(paid.status).toBe(200)
    expect(settlementOf(paid)).toMatchObject({ success: true, amount: '1234' })
    expect((await tokenBalance(world.node, world.token, world.payTo)) - before).toBe(1234n)
    const unmetered = await payThrough(uptoClient(await newPermit2Payer(world)), '?usage=none')
    expect(unmetered.status).toBe(500)
    expect(await unmetered.json()).toMatchObject({ code: 'misconfigured', error: expect.stringMatching(/without a usage/) })
    expect((await tokenBalance(world.node, world.token, world.payTo)) - before).toBe(1234n)
  }, 120_000)
})

describe('the web and node paywalls answer alike', () => {
  /** Status, headers (names lowercased; date and connection apart) and body of an answer. */
  const answerOf = async (response: Response) => {
    const headers: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      if (!['date', 'connection', 'keep-alive'].includes(name)) headers[name] = value
    })
    return { status: response.status, headers, body: await response.text() }
  }

  it('answers the same status, headers and body to the same requests: challenges, refusals, a corrective 402, a paid voucher, mistakes and error statuses', async () => {
    const receiver = newReceiver()
    const extra = { name: world.token.name, version: world.token.version }
    const offers: PaymentOffer[] = [
      batchOffer(receiver),
      { scheme: 'exact', network: NETWORK, amount: '3000', asset: world.token.address, payTo: world.payTo, extra },
    ]
    const webBatch = createBatchSettlementServer({ facilitator, claimPolicy: false })
    const nodeBatch = createBatchSettlementServer({ facilitator, claimPolicy: false })
    const options = (batchSettlement: typeof webBatch): PaywallOptions => ({ facilitator, batchSettlement, offers, resource: { url: 'https://shop.test/call', description: 'parity', mimeType: 'application/json' } })
    // The work: ?status=N answers N, ?usage=N reports a usage; the same on both sides.
    const reply = (url: string) => {
      const query = new URL(url, 'http://x').searchParams
      if (query.has('throw')) throw new Error('the work failed')
      const status = Number(query.get('status') ?? 200)
      const body = JSON.stringify({ ok: status < 400 })
      return { status, body, usage: query.get('usage') }
    }
    const paywall = createPaywall(options(webBatch))
    const web = await serve(
      createNodeListener((request) =>
        paywall(request, async () => {
          const { status, body, usage } = reply(request.url)
          const response = new Response(body, { status, headers: { 'content-type': 'application/json', 'x-work': 'yes' } })
          return usage === null ? response : { response, usage: BigInt(usage) }
        }),
      ),
    )
    const reported: unknown[] = []
    const paid = createNodePaywall({ ...options(nodeBatch), onError: (error) => reported.push(error) })
    const node = await serve((req, res) =>
      void paid(req, res, async () => {
        const { status, body, usage } = reply(req.url ?? '/')
        const response = { status, headers: { 'content-type': 'application/json', 'x-work': 'yes' }, body }
        return usage === null ? response : { response, usage: BigInt(usage) }
      }),
    )
    const both = async (path: string, headers: Record<string, string> = {}) => {
      const [a, b] = await Promise.all([
        fetch(`${web.url}${path}`, { headers }).then(answerOf),
        fetch(`${node.url}${path}`, { headers }).then(answerOf),
      ])
      expect(b, path).toEqual(a)
      return a
    }

    // A channel opened through the web side, its state copied to the node side's store.
    const target = recording()
    const payer = await world.newPayer(1_000_000n)
    const client = new BatchClient(payer, { depositPolicy: { depositMultiplier: 20 } })
    for (let i = 0; i < 2; i++) expect((await payVia(client, target)(`${web.url}/call`)).status).toBe(200)
    const [channel] = await webBatch.store.list()
    await nodeBatch.store.put(channel!)
    const last = target.headers.at(-1)!
    const signed = async (max: bigint) => {
      const signature = await signVoucher(payer, 84532, channel!.channelId, max)
      return tamper(last, (p) => Object.assign(p.voucher, { maxClaimableAmount: max.toString(), signature }))
    }

    expect((await both('/call')).status).toBe(402)
    expect((await both('/call?x=1', { 'PAYMENT-SIGNATURE': 'not base64!' })).status).toBe(402)
    expect((await both('/call', { 'PAYMENT-SIGNATURE': btoa('{"x402Version":2}') })).status).toBe(402)
    expect((await both('/call', { 'X-PAYMENT': btoa(JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'base-sepolia', payload: {} })) })).status).toBe(402)
    // The last voucher again: the corrective 402.
    expect((await both('/call', { 'PAYMENT-SIGNATURE': last })).status).toBe(402)
    // The next voucher: paid on both, the same settlement header (the same state on both).
    const paidAnswer = await both('/call', { 'PAYMENT-SIGNATURE': await signed(3n * PRICE) })
    expect(paidAnswer.status).toBe(200)
    expect(paidAnswer.headers['payment-response']).toBeDefined()
    // An error status of the work: passed on, nothing charged; a usage above the price: 500 misconfigured.
    expect((await both('/call?status=503', { 'PAYMENT-SIGNATURE': await signed(4n * PRICE) })).status).toBe(503)
    expect((await both('/call?usage=5000', { 'PAYMENT-SIGNATURE': await signed(4n * PRICE) })).status).toBe(500)
    // A work that throws: 500 internal_error on both, nothing charged.
    expect(await both('/call?throw=1', { 'PAYMENT-SIGNATURE': await signed(4n * PRICE) })).toMatchObject({ status: 500, body: '{"error":"internal error","code":"internal_error"}' })
    // The node path tells the operator what the client was not told.
    expect(reported.map((error) => (error as Error).message)).toEqual(['the work failed'])
    expect((await both('/call?usage=500', { 'PAYMENT-SIGNATURE': await signed(4n * PRICE) })).status).toBe(200)
    expect((await webBatch.store.get(channel!.channelId))?.charged).toBe(3n * PRICE + 500n)
    expect((await nodeBatch.store.get(channel!.channelId))?.charged).toBe(3n * PRICE + 500n)
  }, 180_000)
})
