/**
 * The fingerprint that tells two payments with the same settlement key apart is
 * stored with each settlement and compared by every process sharing the store,
 * whichever runtime it runs on: Node hashes it with node:crypto, other runtimes
 * with WebCrypto, and both must give the same hex.
 */
import { describe, expect, it } from 'vitest'
import type { PaymentContext } from '../../src/core/adapter.js'
import { paymentFingerprint } from '../../src/settlement/payment-fingerprint.js'

const context = (overrides: Partial<PaymentContext> = {}, payload: Record<string, unknown> = {}) =>
  ({
    network: 'eip155:84532',
    asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    amount: 1000n,
    payload: {
      x402Version: 2,
      payload: { signature: '0xAbCd', authorization: { from: '0x1111111111111111111111111111111111111111', value: '1000', nonce: '0xFF' }, ...payload },
    },
    ...overrides,
  }) as unknown as PaymentContext

/** SHA-256 through WebCrypto, as a runtime without node:crypto computes it. */
async function webCryptoHex(text: string) {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return Buffer.from(digest).toString('hex')
}

describe('paymentFingerprint', () => {
  it('is the SHA-256 of the canonical payment, as WebCrypto computes it', async () => {
    const canonical = JSON.stringify({
      amount: '1000',
      asset: '0x036cbd53842c5426634e7929541ec2318f3dcf7e',
      network: 'eip155:84532',
      payTo: '0x209693bc6afc0c5328ba36faf03c514ef312287c',
      payload: { authorization: { from: '0x1111111111111111111111111111111111111111', nonce: '0xff', value: '1000' }, signature: '0xabcd' },
    })
    expect(await paymentFingerprint(context())).toBe(await webCryptoHex(canonical))
  })

  it('ignores hex case and key order, and changes with anything that makes another payment', async () => {
    const base = await paymentFingerprint(context())
    expect(await paymentFingerprint(context({ asset: '0x036cbd53842c5426634e7929541ec2318f3dcf7e' }, { signature: '0xabcd' }))).toBe(base)
    expect(await paymentFingerprint(context({ amount: 1001n }))).not.toBe(base)
    expect(await paymentFingerprint(context({ payTo: '0x0000000000000000000000000000000000000001' }))).not.toBe(base)
    expect(await paymentFingerprint(context({}, { signature: '0xabce' }))).not.toBe(base)
  })
})
