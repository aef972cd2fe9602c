/** The hand-written v2 payload check answers what the schema answers, whenever it answers. */
import { describe, expect, it } from 'vitest'
import { paymentPayloadV2Schema } from '../../src/schemas/payload.js'
import { checkPaymentPayloadV2 } from '../../src/schemas/payload-v2-check.js'

const voucher = {
  x402Version: 2,
  resource: { url: 'http://shop.test/call', description: 'One call', mimeType: 'application/json' },
  accepted: { scheme: 'batch-settlement', network: 'eip155:84532', amount: '1000', asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', payTo: '0x2222222222222222222222222222222222222222', maxTimeoutSeconds: 3600, extra: { name: 'USDC', version: '2' } },
  payload: { type: 'voucher', channelConfig: { payer: '0x1', salt: '0x00' }, voucher: { channelId: '0xab', maxClaimableAmount: '2000', signature: '0x12' } },
}

// Values a field may be swapped for: of every JSON type, at the schema's bounds, and objects that are not records.
const ODD: unknown[] = [undefined, null, '', 'x', 'x'.repeat(2048), 'x'.repeat(2049), 'x'.repeat(257), 'x'.repeat(4097), 0, -1, 1.5, 2 ** 53, '12', '1e3', '-1', '9'.repeat(78), '9'.repeat(79), true, [], [1], {}, { a: 1 }, JSON.parse('{"__proto__":{"polluted":1},"k":1}')]
const PATHS = [[], ['x402Version'], ['accepted'], ['payload'], ['resource'], ['extensions'], ['other'], ...['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds', 'extra', 'other'].map((k) => ['accepted', k]), ...['url', 'description', 'mimeType', 'other'].map((k) => ['resource', k])]

function variant(path: string[], value: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(voucher)) as Record<string, any>
  if (path.length === 0) return value
  let at = copy
  for (const key of path.slice(0, -1)) at = at[key]
  if (value === undefined) delete at[path.at(-1)!]
  else at[path.at(-1)!] = value
  return copy
}

/** The schema's verdict, compared with the check's: the same output (key order included) whenever the check answers. */
function agrees(input: unknown): boolean {
  const checked = checkPaymentPayloadV2(input)
  if (checked === undefined) return false
  const parsed = paymentPayloadV2Schema.safeParse(input)
  expect(parsed.success, JSON.stringify(input)?.slice(0, 200)).toBe(true)
  expect(JSON.stringify(checked)).toBe(JSON.stringify(parsed.data))
  expect(checked).toEqual(parsed.data)
  return true
}

describe('checkPaymentPayloadV2', () => {
  it('answers the schema\'s own output for a voucher as the official client writes it, and in another key order', () => {
    expect(agrees(voucher)).toBe(true)
    const reordered = { payload: voucher.payload, extensions: { a: 1 }, accepted: { extra: null, payTo: 'p', amount: '0', asset: 'a', network: 'n', scheme: 's', zz: 1 }, x402Version: 2, extra: 'kept' }
    expect(agrees(reordered)).toBe(true)
    expect(Object.keys(checkPaymentPayloadV2(reordered)!)).toEqual(['x402Version', 'accepted', 'payload', 'extensions', 'extra'])
  })

  it('never accepts what the schema refuses, and answers what it accepts alike, field by field over odd values', () => {
    let answered = 0
    let refused = 0
    for (const path of PATHS) {
      for (const value of ODD) {
        const input = variant(path, value)
        if (agrees(input)) answered++
        else if (!paymentPayloadV2Schema.safeParse(input).success) refused++
      }
    }
    // Both sides of the check are exercised.
    expect(answered).toBeGreaterThan(40)
    expect(refused).toBeGreaterThan(100)
  })
})
