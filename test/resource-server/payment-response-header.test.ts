/** The settlement header is the schema's form of the settlement, whichever path encodes it. */
import { describe, expect, it } from 'vitest'
import { settleResponseSchema, type SettleResponse } from '../../src/schemas/messages.js'
import { encodeJsonHeader, encodePaymentResponseHeader } from '../../src/resource-server/index.js'

const viaSchema = (settlement: unknown) => encodeJsonHeader(settleResponseSchema.parse(settlement))

describe('encodePaymentResponseHeader', () => {
  it('answers what parsing by the schema answers: in its form, reordered, with unknown keys, undefined fields or an odd extra', () => {
    const voucher = { success: true, transaction: '', network: 'eip155:84532', payer: '0x1', amount: '', extra: { chargedAmount: '1000', channelState: { channelId: '0xab', balance: '5000' } } }
    const cases: unknown[] = [
      voucher,
      { success: false, errorReason: 'invalid', errorMessage: 'no', transaction: '', network: 'base', payer: '0x1', amount: '1', asset: '0xa', extra: {} },
      { extra: voucher.extra, network: 'eip155:84532', transaction: '0x12', success: true },
      { ...voucher, internal: 'dropped' },
      { ...voucher, payer: undefined },
      { ...voucher, extra: JSON.parse('{"__proto__":{"x":1},"k":1}') },
    ]
    for (const settlement of cases) {
      expect(encodePaymentResponseHeader(2, settlement as SettleResponse)).toEqual({ 'PAYMENT-RESPONSE': viaSchema(settlement) })
      expect(encodePaymentResponseHeader(1, settlement as SettleResponse)).toEqual({ 'X-PAYMENT-RESPONSE': viaSchema(settlement) })
    }
    expect(JSON.parse(atob(encodePaymentResponseHeader(2, cases[3] as SettleResponse)['PAYMENT-RESPONSE']!))).not.toHaveProperty('internal')
  })

  it('refuses a settlement the schema refuses', () => {
    expect(() => encodePaymentResponseHeader(2, { success: 'yes', transaction: '', network: 'n' } as unknown as SettleResponse)).toThrow()
    expect(() => encodePaymentResponseHeader(2, { success: true, network: 'n' } as unknown as SettleResponse)).toThrow()
    expect(() => encodePaymentResponseHeader(2, { success: true, transaction: '', network: 'n', extra: [1] } as unknown as SettleResponse)).toThrow()
  })
})
