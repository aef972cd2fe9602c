/**
 * The voucher payload read without zod (parseBatchPayload's path for nearly every paid request)
 * answers what voucherPayloadSchema answers: the same output for what it accepts, and every input
 * zod refuses still refused with zod's reason.
 */
import { describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { channelId, voucherPayloadSchema } from '../../../src/evm/batch/codec.js'
import { parseBatchPayload } from '../../../src/evm/batch/parse.js'
import { BATCH_REJECTION as R } from '../../../src/evm/batch/reasons.js'

const token = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const lower = (a: string) => a.toLowerCase()
const config = {
  payer: lower(privateKeyToAccount(generatePrivateKey()).address),
  payerAuthorizer: privateKeyToAccount(generatePrivateKey()).address,
  receiver: lower(privateKeyToAccount(generatePrivateKey()).address),
  receiverAuthorizer: privateKeyToAccount(generatePrivateKey()).address,
  token,
  withdrawDelay: 900,
  salt: `0x${'AB'.repeat(32)}`,
}
const id = channelId({ ...config, payer: config.payer as `0x${string}`, receiver: config.receiver as `0x${string}`, salt: config.salt.toLowerCase() as `0x${string}` } as never, 84532)
const signature = `0x${'1b'.repeat(65)}`
const voucher = (fields: Record<string, unknown> = {}, channel: Record<string, unknown> = {}) => ({
  type: 'voucher',
  channelConfig: { ...config, ...channel },
  voucher: { channelId: id.toUpperCase().replace('0X', '0x'), maxClaimableAmount: '5000', signature, ...fields },
})

describe('the voucher payload read without zod', () => {
  const accepted = [
    voucher(),
    voucher({ maxClaimableAmount: 5000 }),
    voucher({ maxClaimableAmount: 0 }),
    voucher({ maxClaimableAmount: (2n ** 128n - 1n).toString() }),
    voucher({ signature: '0x' }),
    voucher({}, { withdrawDelay: 0 }),
    voucher({}, { withdrawDelay: 2 ** 40 - 1 }),
    { ...voucher(), unknown: 'dropped' },
    voucher({ extra: 1 }, { extra: 2 }),
  ]
  it.each(accepted.map((payload, i) => [i, payload]))('reads payload %i as zod does', (_i, payload) => {
    const parsed = parseBatchPayload(payload, 84532, token)
    const zod = voucherPayloadSchema.parse(payload)
    expect('payload' in parsed && parsed.payload).toEqual(zod)
    // Twice: the second read takes the cached config.
    const again = parseBatchPayload(structuredClone(payload), 84532, token)
    expect('payload' in again && again.payload).toEqual(zod)
    expect('key' in again && again.key).toBe(`84532:batch-voucher:${id}:${zod.voucher.maxClaimableAmount}`)
  })

  const refused = [
    voucher({ maxClaimableAmount: (2n ** 128n).toString() }),
    voucher({ maxClaimableAmount: -1 }),
    voucher({ maxClaimableAmount: 1.5 }),
    voucher({ maxClaimableAmount: Number.MAX_SAFE_INTEGER + 1 }),
    voucher({ maxClaimableAmount: '0x10' }),
    voucher({ maxClaimableAmount: ' 5' }),
    voucher({ maxClaimableAmount: '5\n' }),
    voucher({ maxClaimableAmount: undefined }),
    voucher({ signature: '0x1' }),
    voucher({ signature: 5 }),
    voucher({ channelId: `0x${'00'.repeat(31)}` }),
    voucher({}, { withdrawDelay: -1 }),
    voucher({}, { withdrawDelay: 2 ** 40 }),
    voucher({}, { withdrawDelay: '900' }),
    voucher({}, { payer: config.payer.slice(0, 41) }),
    voucher({}, { token: `${token}0` }),
    voucher({}, { salt: '0x00' }),
    { ...voucher(), voucher: null },
    { ...voucher(), channelConfig: [config] },
  ]
  it.each(refused.map((payload, i) => [i, payload]))('refuses payload %i as zod does', (_i, payload) => {
    expect(voucherPayloadSchema.safeParse(payload).success).toBe(false)
    const parsed = parseBatchPayload(payload, 84532, token)
    expect('refusal' in parsed && parsed.refusal.invalidReason).toBe(R.voucherPayload)
  })

  it('hands out a config no caller can change', () => {
    const parsed = parseBatchPayload(voucher(), 84532, token)
    if (!('payload' in parsed) || parsed.payload.type !== 'voucher') throw new Error('not read')
    expect(Object.isFrozen(parsed.payload.channelConfig)).toBe(true)
  })
})
