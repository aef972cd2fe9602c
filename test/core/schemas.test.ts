import { describe, expect, it } from 'vitest'
import { parsePaymentRequest, supportedResponseSchema } from '../../src/index.js'

const v1Body = {
  x402Version: 1,
  paymentPayload: {
    x402Version: 1,
    scheme: 'exact',
    network: 'base',
    payload: { signature: '0xabc', authorization: { from: '0x1', to: '0x2', amount: '1000', asset: '0x3' } },
  },
  paymentRequirements: { scheme: 'exact', network: 'base', maxAmountRequired: '1000', asset: '0x3', payTo: '0x2' },
}

const v2Requirements = { scheme: 'exact', network: 'eip155:8453', amount: '1000', asset: '0x3', payTo: '0x2', maxTimeoutSeconds: 60 }

describe('parsePaymentRequest', () => {
  it('accepts the reduced v1 form shown in the service description', () => {
    const parsed = parsePaymentRequest(v1Body)
    expect(parsed.ok).toBe(true)
  })

  it('keeps unknown fields that real clients send', () => {
    const parsed = parsePaymentRequest({
      ...v1Body,
      paymentRequirements: { ...v1Body.paymentRequirements, resource: 'https://x', description: '', mimeType: 'application/json', outputSchema: { a: 1 }, futureField: 7 },
    })
    expect(parsed.ok && (parsed.request.paymentRequirements as Record<string, unknown>).futureField).toBe(7)
  })

  it('accepts a v2 body with accepted, resource and extensions', () => {
    const parsed = parsePaymentRequest({
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: v2Requirements, payload: { x: 1 }, resource: { url: 'https://r' }, extensions: { bazaar: {} } },
      paymentRequirements: v2Requirements,
    })
    expect(parsed.ok).toBe(true)
  })

  it('names the path of a bad field', () => {
    const parsed = parsePaymentRequest({ ...v1Body, paymentRequirements: { ...v1Body.paymentRequirements, maxAmountRequired: 1000 } })
    expect(parsed).toMatchObject({ ok: false, reason: 'malformed', path: 'paymentRequirements.maxAmountRequired' })
  })

  it('rejects float and negative amounts, keeps huge integers exact', () => {
    for (const bad of ['1.5', '-1', '1e6', '', ' 1']) {
      const parsed = parsePaymentRequest({ ...v1Body, paymentRequirements: { ...v1Body.paymentRequirements, maxAmountRequired: bad } })
      expect(parsed.ok, bad).toBe(false)
    }
    const huge = '115792089237316195423570985008687907853269984665640564039457584007913129639935'
    const parsed = parsePaymentRequest({ ...v1Body, paymentRequirements: { ...v1Body.paymentRequirements, maxAmountRequired: huge } })
    expect(parsed.ok && (parsed.request.paymentRequirements as { maxAmountRequired: string }).maxAmountRequired).toBe(huge)
  })

  it('tells an unsupported version from a malformed body', () => {
    expect(parsePaymentRequest({ ...v1Body, paymentPayload: { ...v1Body.paymentPayload, x402Version: 3 } })).toEqual({
      ok: false,
      reason: 'unsupported_version',
      version: 3,
    })
    expect(parsePaymentRequest({ paymentRequirements: {} })).toMatchObject({ ok: false, reason: 'malformed', path: 'paymentPayload' })
    expect(parsePaymentRequest([])).toMatchObject({ ok: false, path: '(body)' })
    expect(parsePaymentRequest(null)).toMatchObject({ ok: false, path: '(body)' })
  })

  it('rejects a top-level version that contradicts the payload', () => {
    const parsed = parsePaymentRequest({ ...v1Body, x402Version: 2 })
    expect(parsed).toMatchObject({ ok: false, path: 'x402Version' })
  })

  it('describes the supported response shape', () => {
    expect(supportedResponseSchema.safeParse({ kinds: [], extensions: [], signers: { 'eip155:*': ['0x1'] } }).success).toBe(true)
    expect(supportedResponseSchema.safeParse({ kinds: [{ x402Version: 1 }], extensions: [], signers: {} }).success).toBe(false)
  })
})
