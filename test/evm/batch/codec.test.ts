/**
 * Payloads made by the official `@x402/evm` batch-settlement client parse with our schemas, and our
 * channel id and voucher signer recovery agree with the client's (offline: no chain).
 */
import { describe, expect, it } from 'vitest'
import { BatchSettlementEvmScheme, computeChannelId, InMemoryClientChannelStorage } from '@x402/evm/batch-settlement/client'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Address } from 'viem'
import { hashTypedData } from 'viem'
import { batchSettlementDomain, channelConfigTypes } from '../../../src/evm/batch/constants.js'
import { loadKeccak } from '../../../src/evm/crypto/keccak.js'
import { isEoaVoucherSigned } from '../../../src/evm/batch/signature-check.js'
import { channelId, depositPayloadSchema, refundPayloadSchema, voucherDigest, voucherPayloadSchema, voucherTypedData } from '../../../src/evm/batch/codec.js'

const payer = privateKeyToAccount(generatePrivateKey())
const receiverAuthorizer = privateKeyToAccount(generatePrivateKey()).address
const token: Address = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const payTo = privateKeyToAccount(generatePrivateKey()).address
const requirements = (extra: Record<string, unknown> = {}) => ({
  scheme: 'batch-settlement',
  network: 'eip155:84532' as const,
  amount: '1000',
  asset: token,
  payTo,
  maxTimeoutSeconds: 3600,
  extra: { receiverAuthorizer, withdrawDelay: 900, name: 'USD Coin', version: '2', ...extra },
})

describe('batch-settlement codec against the official client', () => {
  it('parses an EIP-3009 deposit payload and computes its channel id', async () => {
    const client = new BatchSettlementEvmScheme(payer)
    const made = await client.createPaymentPayload(2, requirements())
    const parsed = depositPayloadSchema.parse(made.payload)
    const official = computeChannelId(client.buildChannelConfig(requirements()), 'eip155:84532')
    expect(channelId(parsed.channelConfig, 84532)).toBe(official)
    expect(parsed.voucher.channelId).toBe(official.toLowerCase())
    expect(parsed.voucher.maxClaimableAmount).toBe(1000n)
    expect(parsed.deposit.amount).toBe(5000n)
    expect(parsed.deposit.authorization.erc3009Authorization?.validAfter).toBe(0n)
    expect(await isEoaVoucherSigned(parsed.channelConfig, 84532, parsed.voucher.channelId, parsed.voucher.maxClaimableAmount, parsed.voucher.signature)).toBe(true)
    // Another chain, another amount or another authorizer does not verify.
    expect(await isEoaVoucherSigned(parsed.channelConfig, 8453, parsed.voucher.channelId, parsed.voucher.maxClaimableAmount, parsed.voucher.signature)).toBe(false)
    expect(await isEoaVoucherSigned(parsed.channelConfig, 84532, parsed.voucher.channelId, 1001n, parsed.voucher.signature)).toBe(false)
    expect(await isEoaVoucherSigned({ ...parsed.channelConfig, payerAuthorizer: payTo }, 84532, parsed.voucher.channelId, 1000n, parsed.voucher.signature)).toBe(false)
  })

  it('parses a Permit2 deposit payload with its witness', async () => {
    const made = await new BatchSettlementEvmScheme(payer).createPaymentPayload(2, requirements({ assetTransferMethod: 'permit2' }))
    const parsed = depositPayloadSchema.parse(made.payload)
    const auth = parsed.deposit.authorization.permit2Authorization
    expect(auth?.witness.channelId).toBe(parsed.voucher.channelId)
    expect(auth?.spender).toBe('0x4020425FAf3B746C082C2f942b4E5159887B0005')
    expect(auth?.permitted.amount).toBe(parsed.deposit.amount)
  })

  it('parses a voucher payload once the channel has a balance, with a delegated voucher signer', async () => {
    const voucherSigner = privateKeyToAccount(generatePrivateKey())
    const storage = new InMemoryClientChannelStorage()
    const client = new BatchSettlementEvmScheme(payer, { storage, voucherSigner })
    const config = client.buildChannelConfig(requirements())
    const id = computeChannelId(config, 'eip155:84532')
    await storage.set(id, { balance: '100000', chargedCumulativeAmount: '3000' })
    const made = await client.createPaymentPayload(2, requirements())
    const parsed = voucherPayloadSchema.parse(made.payload)
    expect(parsed.channelConfig.payerAuthorizer).toBe(voucherSigner.address)
    expect(parsed.voucher.maxClaimableAmount).toBe(4000n)
    expect(await isEoaVoucherSigned(parsed.channelConfig, 84532, parsed.voucher.channelId, 4000n, parsed.voucher.signature)).toBe(true)
  })

  it('refuses payloads out of shape', () => {
    const good = { type: 'voucher', channelConfig: { payer: payer.address, payerAuthorizer: payer.address, receiver: payTo, receiverAuthorizer, token, withdrawDelay: 900, salt: `0x${'00'.repeat(32)}` }, voucher: { channelId: `0x${'11'.repeat(32)}`, maxClaimableAmount: '1', signature: '0x' } }
    expect(voucherPayloadSchema.safeParse(good).success).toBe(true)
    expect(voucherPayloadSchema.safeParse({ ...good, voucher: { ...good.voucher, maxClaimableAmount: (2n ** 128n).toString() } }).success).toBe(false)
    expect(voucherPayloadSchema.safeParse({ ...good, channelConfig: { ...good.channelConfig, salt: '0x01' } }).success).toBe(false)
    expect(refundPayloadSchema.safeParse({ ...good, type: 'refund', amount: '1500' }).success).toBe(true)
    expect(depositPayloadSchema.safeParse({ ...good, type: 'deposit', deposit: { amount: '1', authorization: {} } }).success).toBe(false)
  })

  it('hashes a voucher as EIP-712 typed data does, on any chain and for any amount, on both keccak backends', async () => {
    const check = () => {
      for (const [chainId, amount] of [[84532, 0n], [8453, 1000n], [1, 2n ** 128n - 1n], [84532, 123456789n], [84532, 2n ** 64n + 7n]] as const) {
        const id = `0x${Math.floor(Math.random() * 2 ** 40).toString(16).padStart(64, '0')}` as const
        expect(voucherDigest(chainId, id, amount)).toBe(hashTypedData(voucherTypedData(chainId, id, amount)))
      }
    }
    check()
    await loadKeccak()
    check()
  })

  it('remembers channel ids per chain and config, each the EIP-712 hash of its config', () => {
    const config = { payer: '0x1111111111111111111111111111111111111111', payerAuthorizer: '0x1111111111111111111111111111111111111111', receiver: '0x2222222222222222222222222222222222222222', receiverAuthorizer: '0x3333333333333333333333333333333333333333', token: '0x4444444444444444444444444444444444444444', withdrawDelay: 900, salt: `0x${'00'.repeat(32)}` } as const
    const typed = (c: typeof config | { salt: `0x${string}` } & Omit<typeof config, 'salt'>, chainId: number) =>
      hashTypedData({ domain: batchSettlementDomain(chainId), types: channelConfigTypes, primaryType: 'ChannelConfig', message: c })
    expect(channelId(config, 84532)).toBe(typed(config, 84532))
    expect(channelId(config, 84532)).toBe(typed(config, 84532))
    expect(channelId(config, 8453)).toBe(typed(config, 8453))
    const salted = { ...config, salt: `0x${'01'.repeat(32)}` as const }
    expect(channelId(salted, 84532)).toBe(typed(salted, 84532))
    expect(channelId(salted, 84532)).not.toBe(channelId(config, 84532))
  })
})
