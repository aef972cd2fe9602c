/**
 * createPaywall / withPayment pricing a route with `exact` through Permit2 and with `upto`, on anvil
 * with the real Permit2 and our x402 proxies at their canonical addresses, paid by the official
 * @x402/evm clients from the 402 challenge the paywall answers: 402 → paid → 200, and on chain
 * exactly the price (exact) or the usage the work reports (upto) moves.
 */
import { x402Client, type x402Client as X402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, settleResponseSchema } from '../../src/index.js'
import { createPaywall, withPayment, type MeteredResponse, type PaymentOffer, type Paywall, type VerifiedPayment } from '../../src/resource-server/index.js'
import { createNodeListener } from '../../src/http/index.js'
import { evmSchemes, X402_EXACT_PERMIT2_PROXY, X402_UPTO_PERMIT2_PROXY } from '../../src/evm/index.js'
import { fundPayer, tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { installPermit2, newPermit2Payer } from '../support/permit2-contracts.js'

const PRICE = 3_000n
const MAXIMUM = 5_000n
const URL_BASE = 'https://api.example.test/complete'

let world: EvmFixture
let facilitator: ReturnType<typeof createFacilitator>
let paywall: Paywall
let offers: PaymentOffer[]
let supportedCalls = 0
let settleCalls = 0
const served: VerifiedPayment[] = []

/**
 * The paid work: `?usage=N` reports N (a bigint) for a metered payment, `?usage=none` reports
 * nothing, `?status=N` answers that status. A fixed-price payment answers a plain Response.
 */
async function work(request: Request, payment: VerifiedPayment): Promise<Response | MeteredResponse> {
  served.push(payment)
  const query = new URL(request.url).searchParams
  const response = Response.json({ text: 'done', payer: payment.payer ?? null }, { status: Number(query.get('status') ?? 200) })
  const usage = query.get('usage')
  if (!payment.metered || usage === 'none') return response
  return { response, usage: BigInt(usage ?? '0') }
}

const permit2Payer = (): Promise<LocalAccount> => newPermit2Payer(world)

const exactPermit2Client = (payer: LocalAccount) =>
  new x402Client((_version, accepts) => accepts.find((r) => r.scheme === 'exact' && r.extra?.assetTransferMethod === 'permit2') ?? accepts[0]!)
    .setSpendControls(false)
    .register('eip155:84532', new ExactEvmScheme(payer))
const uptoClient = (payer: LocalAccount) => new x402Client().setSpendControls(false).register('eip155:84532', new UptoEvmScheme(payer))

/** The official client's round: ask, read the 402 challenge, pay, ask again with PAYMENT-SIGNATURE. */
async function payThrough(handler: (request: Request) => Promise<Response>, client: X402Client, query = '') {
  const url = `${URL_BASE}${query}`
  const challenge = await handler(new Request(url))
  expect(challenge.status).toBe(402)
  const paymentRequired = decodePaymentRequiredHeader(challenge.headers.get('PAYMENT-REQUIRED') ?? '')
  const paymentPayload = await client.createPaymentPayload(paymentRequired)
  const paid = await handler(new Request(url, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(paymentPayload) } }))
  return { paid, paymentPayload }
}
const pay = (client: X402Client, query = '') => payThrough((request) => paywall(request, (payment) => work(request, payment)), client, query)

const balanceOf = (address: Hex) => tokenBalance(world.node, world.token, address)
/** How many transactions the facilitator's signers have sent (pending included): unchanged means nothing was sent. */
const sentByFacilitator = async () => {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}
const settlementOf = (response: Response) => settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  facilitator = createFacilitator({ schemes: evmSchemes(world.adapterConfig()) })
  await world.warmUp(facilitator)
  const extra = { name: world.token.name, version: world.token.version }
  offers = [
    // An EIP-3009 and a Permit2 offer of the same token and price: only the payload's shape tells them apart.
    { scheme: 'exact', network: 'eip155:84532', amount: PRICE.toString(), asset: world.token.address, payTo: world.payTo, extra },
    { scheme: 'exact', network: 'eip155:84532', amount: PRICE.toString(), asset: world.token.address, payTo: world.payTo, extra: { ...extra, assetTransferMethod: 'permit2' } },
    { scheme: 'upto', network: 'eip155:84532', amount: MAXIMUM.toString(), asset: world.token.address, payTo: world.payTo, extra },
  ]
  paywall = createPaywall({
    facilitator: {
      verify: facilitator.verify,
      settle: async (body) => (settleCalls++, facilitator.settle(body)),
      supported: async () => (supportedCalls++, facilitator.supported()),
    },
    offers,
    resource: { description: 'A metered completion', mimeType: 'application/json' },
  })
}, 120_000)
afterAll(async () => world?.stop())

describe('createPaywall: exact through Permit2 and upto, paid by the official @x402/evm clients on anvil', () => {
  it('challenges with the Permit2 exact offer and the upto maximum, facilitatorAddress read once from supported(); v1 is not offered upto', async () => {
    const challenge = await paywall(new Request(URL_BASE), (payment) => work(new Request(URL_BASE), payment))
    expect(challenge.status).toBe(402)
    const v2 = decodePaymentRequiredHeader(challenge.headers.get('PAYMENT-REQUIRED') ?? '')
    const upto = v2.accepts.find((a) => a.scheme === 'upto')
    expect(upto).toMatchObject({ amount: '5000', extra: { assetTransferMethod: 'permit2', facilitatorAddress: world.signers[0]!.address } })
    expect(v2.accepts.filter((a) => a.extra?.assetTransferMethod === 'permit2').map((a) => a.scheme)).toEqual(['exact', 'upto'])
    const v1 = (await challenge.json()) as { accepts: { scheme: string }[] }
    expect(v1.accepts.map((a) => a.scheme)).toEqual(['exact', 'exact'])
    await paywall(new Request(URL_BASE), (payment) => work(new Request(URL_BASE), payment))
    expect(supportedCalls).toBe(1)
  })

  it('exact through Permit2: 402 → paid → 200, the price moves through the exact proxy, PAYMENT-RESPONSE carries the settlement', async () => {
    const payer = await permit2Payer()
    const before = await balanceOf(world.payTo)
    const { paid, paymentPayload } = await pay(exactPermit2Client(payer))
    expect(paymentPayload.payload).toHaveProperty('permit2Authorization.spender', X402_EXACT_PERMIT2_PROXY)
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ text: 'done', payer: payer.address })
    // Matched to the Permit2 offer, not to the EIP-3009 one of the same token and price.
    expect(served.at(-1)).toMatchObject({ metered: false, maxAmount: PRICE, requirements: { scheme: 'exact', extra: { assetTransferMethod: 'permit2' } } })
    const settlement = settlementOf(paid)
    expect(settlement).toMatchObject({ success: true, network: 'eip155:84532', payer: payer.address })
    const tx = await world.node.publicClient.getTransaction({ hash: settlement.transaction as Hex })
    expect(tx.to?.toLowerCase()).toBe(X402_EXACT_PERMIT2_PROXY.toLowerCase())
    expect(await balanceOf(world.payTo)).toBe(before + PRICE)
    expect(await balanceOf(payer.address)).toBe(1_000_000n - PRICE)
  })

  it('upto: the work reports 1234 of the 5000 maximum; exactly 1234 moves, sent by the facilitatorAddress, and PAYMENT-RESPONSE says amount "1234"', async () => {
    const payer = await permit2Payer()
    const before = await balanceOf(world.payTo)
    const { paid, paymentPayload } = await pay(uptoClient(payer), '?usage=1234')
    expect(paymentPayload.payload).toHaveProperty('permit2Authorization.permitted.amount', '5000')
    expect(paid.status).toBe(200)
    expect(served.at(-1)).toMatchObject({ metered: true, maxAmount: MAXIMUM, requirements: { scheme: 'upto', amount: '5000' } })
    const settlement = settlementOf(paid)
    expect(settlement).toMatchObject({ success: true, payer: payer.address, amount: '1234' })
    const tx = await world.node.publicClient.getTransaction({ hash: settlement.transaction as Hex })
    expect(tx.to?.toLowerCase()).toBe(X402_UPTO_PERMIT2_PROXY.toLowerCase())
    expect(tx.from.toLowerCase()).toBe(world.signers[0]!.address.toLowerCase())
    expect(await balanceOf(world.payTo)).toBe(before + 1234n)
    expect(await balanceOf(payer.address)).toBe(1_000_000n - 1234n)
  })

  it('a payer who has not approved Permit2 gets 412 (permit2_allowance_required) as from the official server, and the work does not run', async () => {
    const payer = privateKeyToAccount(generatePrivateKey())
    await fundPayer(world.node, world.token, payer.address, 1_000_000n)
    const servedBefore = served.length
    const sent = await sentByFacilitator()
    for (const client of [exactPermit2Client(payer), uptoClient(payer)]) {
      const { paid } = await pay(client, '?usage=10')
      expect(paid.status).toBe(412)
      expect(decodePaymentRequiredHeader(paid.headers.get('PAYMENT-REQUIRED') ?? '')).toMatchObject({ error: 'permit2_allowance_required' })
    }
    expect(served.length).toBe(servedBefore)
    expect(await sentByFacilitator()).toBe(sent)
  })

  it('upto: the whole maximum can be charged', async () => {
    const payer = await permit2Payer()
    const { paid } = await pay(uptoClient(payer), '?usage=5000')
    expect(paid.status).toBe(200)
    expect(settlementOf(paid)).toMatchObject({ success: true, amount: '5000' })
    expect(await balanceOf(payer.address)).toBe(1_000_000n - MAXIMUM)
  })

  it('upto: zero usage answers 200 with a settlement of amount "0" and no transaction; nothing moves, nothing is sent', async () => {
    const payer = await permit2Payer()
    const sent = await sentByFacilitator()
    const before = await balanceOf(world.payTo)
    const { paid } = await pay(uptoClient(payer), '?usage=0')
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ text: 'done', payer: payer.address })
    expect(settlementOf(paid)).toEqual({ success: true, transaction: '', network: 'eip155:84532', payer: payer.address, amount: '0' })
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(world.payTo)).toBe(before)
    expect(await balanceOf(payer.address)).toBe(1_000_000n)
  })

  it('upto: a usage above the maximum is a clear 500 (misconfigured), the response withheld, nothing settled or sent', async () => {
    const payer = await permit2Payer()
    const sent = await sentByFacilitator()
    const settles = settleCalls
    const { paid } = await pay(uptoClient(payer), '?usage=5001')
    expect(paid.status).toBe(500)
    expect(await paid.json()).toEqual({ code: 'misconfigured', error: 'the paid work reported a usage of 5001, above the maximum of 5000 the payer authorized' })
    expect(paid.headers.get('PAYMENT-RESPONSE')).toBeNull()
    expect(settleCalls).toBe(settles)
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(1_000_000n)
  })

  it('upto: work that reports no usage is a clear 500 and charges nothing (neither the maximum nor zero is guessed)', async () => {
    const payer = await permit2Payer()
    const sent = await sentByFacilitator()
    const { paid } = await pay(uptoClient(payer), '?usage=none')
    expect(paid.status).toBe(500)
    expect(await paid.json()).toMatchObject({ code: 'misconfigured', error: expect.stringContaining('without a usage') })
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(1_000_000n)
  })

  it('a work error status charges nothing, for upto with a usage and for exact through Permit2', async () => {
    const payer = await permit2Payer()
    const sent = await sentByFacilitator()
    const settles = settleCalls
    const upto = await pay(uptoClient(payer), '?usage=1000&status=503')
    expect(upto.paid.status).toBe(503)
    expect(upto.paid.headers.get('PAYMENT-RESPONSE')).toBeNull()
    const exact = await pay(exactPermit2Client(payer), '?status=500')
    expect(exact.paid.status).toBe(500)
    expect(settleCalls).toBe(settles)
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(1_000_000n)
  })

  it('refuses an upto payment for another maximum, or an EIP-3009 payment against a Permit2-only offer, with 402 and no work', async () => {
    const payer = await permit2Payer()
    const narrow = createPaywall({ facilitator, offers: [offers[1]!, { ...offers[2]!, extra: { ...offers[2]!.extra, facilitatorAddress: world.signers[0]!.address } }] })
    const ran: VerifiedPayment[] = []
    const handler = (request: Request) => narrow(request, async (payment) => (ran.push(payment), { response: new Response('x'), usage: 1n }))
    // The client signs a 9000 maximum that the paywall never offered.
    const challenge = decodePaymentRequiredHeader((await handler(new Request(URL_BASE))).headers.get('PAYMENT-REQUIRED') ?? '')
    const larger = { ...challenge, accepts: challenge.accepts.map((a) => (a.scheme === 'upto' ? { ...a, amount: '9000' } : a)) }
    const uptoPayload = await uptoClient(payer).createPaymentPayload(larger)
    const refused = await handler(new Request(URL_BASE, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(uptoPayload) } }))
    expect(refused.status).toBe(402)
    expect(decodePaymentRequiredHeader(refused.headers.get('PAYMENT-REQUIRED') ?? '').error).toContain('matches none')
    // An EIP-3009 payload for the same token and price: only a Permit2 one is offered.
    const eip3009 = { ...challenge, accepts: challenge.accepts.filter((a) => a.scheme === 'exact').map((a) => ({ ...a, extra: { name: world.token.name, version: world.token.version } })) }
    const exactPayload = await new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmScheme(payer)).createPaymentPayload(eip3009)
    expect(exactPayload.payload).toHaveProperty('authorization')
    const wrongMethod = await handler(new Request(URL_BASE, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(exactPayload) } }))
    expect(wrongMethod.status).toBe(402)
    expect(ran).toHaveLength(0)
    expect(await balanceOf(payer.address)).toBe(1_000_000n)
  })

  it('withPayment (one call) honours an offer that sets its own facilitatorAddress, and a payer naming the second signer is charged by it', async () => {
    const payer = await permit2Payer()
    const second = world.signers[1]!.address
    const own: PaymentOffer = { ...offers[2]!, extra: { ...offers[2]!.extra, facilitatorAddress: second } }
    // No supported(): the offer carries everything.
    const handler = (request: Request) =>
      withPayment(request, { facilitator: { verify: facilitator.verify, settle: facilitator.settle }, offers: [own] }, async () => ({ response: new Response('ok'), usage: 77n }))
    const { paid } = await payThrough(handler, uptoClient(payer))
    expect(paid.status).toBe(200)
    const settlement = settlementOf(paid)
    expect(settlement).toMatchObject({ success: true, amount: '77' })
    const tx = await world.node.publicClient.getTransaction({ hash: settlement.transaction as Hex })
    expect(tx.from.toLowerCase()).toBe(second.toLowerCase())
    expect(await balanceOf(payer.address)).toBe(1_000_000n - 77n)
  })

  it('over real HTTP (node:http), @x402/fetch pays the upto offer and reads the usage back from PAYMENT-RESPONSE', async () => {
    const payer = await permit2Payer()
    const server = createServer(createNodeListener((request) => paywall(request, (payment) => work(request, payment))))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const before = await balanceOf(world.payTo)
      const response = await wrapFetchWithPayment(fetch, uptoClient(payer))(`http://127.0.0.1:${port}/complete?usage=321`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ text: 'done', payer: payer.address })
      expect(settlementOf(response)).toMatchObject({ success: true, payer: payer.address, amount: '321' })
      expect(await balanceOf(world.payTo)).toBe(before + 321n)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it('an upto offer without facilitatorAddress and a facilitator without supported() is a clear 500, not a stack', async () => {
    const response = await withPayment(new Request(URL_BASE), { facilitator: { verify: facilitator.verify, settle: facilitator.settle }, offers: [offers[2]!] }, async () => new Response('never'))
    expect(response.status).toBe(500)
    expect(await response.json()).toMatchObject({ code: 'misconfigured', error: expect.stringContaining('facilitatorAddress') })
  })
})
