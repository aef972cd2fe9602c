import { describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError, settleResponseSchema } from '../../src/index.js'
import { createPaywall, decodePaymentHeader, encodeJsonHeader, PAYMENT_HEADERS, withPayment, type PaymentOffer } from '../../src/resource-server/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const offer: PaymentOffer = { scheme: 'exact', network: 'eip155:8453', amount: '10', asset: 'LEDGER', payTo: '0xshop' }

function setup() {
  const adapter = createLedgerAdapter({ network: 'eip155:8453', v1Name: 'base' })
  adapter.balances.set('0xpayer', 100n)
  const facilitator = createFacilitator({ schemes: [adapter] })
  let served = 0
  const handle = (request: Request, status = 200) =>
    withPayment(request, { facilitator, offers: [offer], resource: { description: 'Weather', mimeType: 'application/json' } }, async (payment) => {
      served++
      return Response.json({ weather: 'sunny', payer: payment.payer }, { status })
    })
  return { adapter, handle, served: () => served }
}

const decode = (value: string | null) => JSON.parse(Buffer.from(value ?? '', 'base64').toString('utf8')) as Record<string, unknown>

describe('withPayment (in-process resource server)', () => {
  it('answers an unpaid request with a 402 that both versions read', async () => {
    const { handle } = setup()
    const response = await handle(new Request('https://api.example.com/weather'))
    expect(response.status).toBe(402)
    const v2 = decode(response.headers.get(PAYMENT_HEADERS.v2Required))
    expect(v2).toMatchObject({ x402Version: 2, resource: { url: 'https://api.example.com/weather' }, accepts: [{ network: 'eip155:8453', amount: '10', maxTimeoutSeconds: 60 }] })
    const v1 = (await response.json()) as Record<string, unknown>
    expect(v1).toMatchObject({ x402Version: 1, accepts: [{ network: 'base', maxAmountRequired: '10', resource: 'https://api.example.com/weather', description: 'Weather' }] })
  })

  it('serves and settles a v2 payment, returning PAYMENT-RESPONSE', async () => {
    const { adapter, handle } = setup()
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'p1' }, 'eip155:8453')
    const response = await handle(new Request('https://api.example.com/weather', { headers: { [PAYMENT_HEADERS.v2Payment]: encodeJsonHeader(body.paymentPayload) } }))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny', payer: '0xpayer' })
    const settlement = settleResponseSchema.parse(decode(response.headers.get(PAYMENT_HEADERS.v2Response)))
    expect(settlement).toMatchObject({ success: true, payer: '0xpayer', network: 'eip155:8453' })
    expect(adapter.applied.has(settlement.transaction)).toBe(true)
  })

  it('serves a v1 payment with X-PAYMENT-RESPONSE', async () => {
    const { adapter, handle } = setup()
    const t = { from: '0xpayer', to: '0xshop', value: '10', nonce: 'p2' }
    const payload = { x402Version: 1, scheme: 'exact', network: 'base', payload: { ...t, signature: adapter.sign(t) } }
    const response = await handle(new Request('https://api.example.com/weather', { headers: { 'X-PAYMENT': encodeJsonHeader(payload) } }))
    expect(response.status).toBe(200)
    expect(decode(response.headers.get(PAYMENT_HEADERS.v1Response))).toMatchObject({ success: true, network: 'base' })
  })

  it('answers 402 with the reason for a bad payment and does not run the work', async () => {
    const { adapter, handle, served } = setup()
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'p3' }, 'eip155:8453')
    body.paymentPayload.payload.signature = 'f'.repeat(64)
    const response = await handle(new Request('https://x/w', { headers: { [PAYMENT_HEADERS.v2Payment]: encodeJsonHeader(body.paymentPayload) } }))
    expect(response.status).toBe(402)
    expect(decode(response.headers.get(PAYMENT_HEADERS.v2Required))).toMatchObject({ error: 'invalid_signature' })
    expect(served()).toBe(0)
  })

  it('refuses a payment for another offer or a garbled header', async () => {
    const { adapter, handle } = setup()
    const cheap = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '1', nonce: 'p4' }, 'eip155:8453')
    const mismatch = await handle(new Request('https://x/w', { headers: { [PAYMENT_HEADERS.v2Payment]: encodeJsonHeader(cheap.paymentPayload) } }))
    expect(mismatch.status).toBe(402)
    const garbled = await handle(new Request('https://x/w', { headers: { 'X-PAYMENT': '%%%not-base64' } }))
    expect(garbled.status).toBe(402)
    expect(((await garbled.json()) as { error: string }).error).toContain('X-PAYMENT')
  })

  it('does not charge when the work fails', async () => {
    const { adapter, handle } = setup()
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'p5' }, 'eip155:8453')
    const request = new Request('https://x/w', { headers: { [PAYMENT_HEADERS.v2Payment]: encodeJsonHeader(body.paymentPayload) } })
    const response = await handle(request, 500)
    expect(response.status).toBe(500)
    expect(adapter.applied.size).toBe(0)
  })

  it('a fixed-price payment charges its price: work reporting another usage is a clear 500 with nothing charged, reporting the price settles', async () => {
    const { adapter } = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const paid = (nonce: string, usage: bigint) => {
      const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce }, 'eip155:8453')
      const request = new Request('https://x/w', { headers: { [PAYMENT_HEADERS.v2Payment]: encodeJsonHeader(body.paymentPayload) } })
      return withPayment(request, { facilitator, offers: [offer] }, async (payment) => {
        expect(payment).toMatchObject({ metered: false, maxAmount: 10n })
        return { response: new Response('ok'), usage }
      })
    }
    const less = await paid('p6', 4n)
    expect(less.status).toBe(500)
    expect(await less.json()).toEqual({ code: 'misconfigured', error: 'the paid work reported a usage of 4 for a fixed-price payment of 10; only upto payments charge their usage' })
    expect(adapter.applied.size).toBe(0)
    const price = await paid('p7', 10n)
    expect(price.status).toBe(200)
    expect(adapter.applied.size).toBe(1)
  })

  it('answers a mistyped offer amount or a usage that is not a bigint (plain JavaScript) with a clear 500, never running or charging', async () => {
    const { adapter } = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const dollars = await withPayment(new Request('https://x/w'), { facilitator, offers: [{ ...offer, amount: '0.01' }] }, async () => new Response('never'))
    expect(dollars.status).toBe(500)
    expect(await dollars.json()).toMatchObject({ code: 'misconfigured', error: expect.stringContaining('"0.01"') })
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'p8' }, 'eip155:8453')
    const request = new Request('https://x/w', { headers: { [PAYMENT_HEADERS.v2Payment]: encodeJsonHeader(body.paymentPayload) } })
    const numeric = await withPayment(request, { facilitator, offers: [offer] }, async () => ({ response: new Response('ok'), usage: 10 as unknown as bigint }))
    expect(numeric.status).toBe(500)
    expect(await numeric.json()).toMatchObject({ error: 'the paid work reported a usage that is not a bigint (number)' })
    expect(adapter.applied.size).toBe(0)
  })

  it('an upto offer on a facilitator that lists no upto kind is a clear 500 naming the fix, never a 402 the client cannot pay', async () => {
    const { adapter } = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const upto: PaymentOffer = { ...offer, scheme: 'upto' }
    const response = await withPayment(new Request('https://x/w'), { facilitator, offers: [upto] }, async () => new Response('never'))
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({
      code: 'misconfigured',
      error: 'the facilitator lists no v2 "upto" kind with extra.facilitatorAddress on eip155:8453 (configure evmSchemes, or set the offer\'s extra.facilitatorAddress)',
    })
  })

  it('refuses an offer without payTo when configured, naming it: never a 402 with "payTo": ""', async () => {
    const { adapter } = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    // What `payTo: process.env.SHOP_ADDRESS ?? ''` gives when the variable is unset, and its cousins.
    for (const payTo of ['', '   ', undefined as unknown as string]) {
      const configure = () => createPaywall({ facilitator, offers: [offer, { ...offer, scheme: 'upto', payTo }] })
      expect(configure).toThrow(FacilitatorError)
      expect(configure).toThrow(expect.objectContaining({ code: 'misconfigured', status: 500, message: expect.stringMatching(/^createPaywall: offers\[1\] \(upto on eip155:8453\) has no payTo \((missing|""|"   ")\): set the address the payment goes to$/) }))
    }
    // An environment variable with a trailing newline would pay an address nobody holds: refused too.
    expect(() => createPaywall({ facilitator, offers: [{ ...offer, payTo: '0xshop\n' }] })).toThrow(/offers\[0\] \(exact on eip155:8453\) has payTo "0xshop\\n" with blanks around it/)
    expect(() => createPaywall({ facilitator, offers: [{ ...offer, asset: '' }] })).toThrow(/offers\[0\] \(exact on eip155:8453\) has no asset/)
    expect(() => createPaywall({ facilitator, offers: [{ ...offer, amount: '0.01' }] })).toThrow(/offers\[0\] \(exact on eip155:8453\) has amount "0.01"/)
    expect(() => createPaywall({ facilitator, offers: [] })).toThrow(/offers is empty/)

    // withPayment, configured on each call, answers the same refusal as a 500, the work never run.
    let ran = false
    const answer = await withPayment(new Request('https://x/w'), { facilitator, offers: [{ ...offer, payTo: '' }] }, async () => ((ran = true), new Response('never')))
    expect(answer.status).toBe(500)
    expect(await answer.json()).toEqual({ code: 'misconfigured', error: 'createPaywall: offers[0] (exact on eip155:8453) has no payTo (""): set the address the payment goes to' })
    expect(ran).toBe(false)
    expect(adapter.applied.size).toBe(0)
  })

  it('decodes headers strictly', () => {
    expect(decodePaymentHeader(new Headers())).toEqual({ ok: false, reason: 'missing_payment' })
    expect(decodePaymentHeader(new Headers({ 'PAYMENT-SIGNATURE': encodeJsonHeader({ x402Version: 2 }) }))).toMatchObject({
      ok: false,
      reason: 'invalid_payment_header',
    })
    expect(decodePaymentHeader(new Headers({ 'X-PAYMENT': encodeJsonHeader('x'.repeat(40_000)) }))).toMatchObject({ ok: false })
  })
})
