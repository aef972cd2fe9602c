import { describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { channelId, voucherDigest } from '../../../src/evm/batch/codec.js'
import { loadKeccak } from '../../../src/evm/crypto/keccak.js'
import { cachedChannelId, fastVoucherDigest } from '../../../src/resource-server/batch/voucher-hashes.js'

const config = { payer: '0x1111111111111111111111111111111111111111', payerAuthorizer: '0x1111111111111111111111111111111111111111', receiver: '0x2222222222222222222222222222222222222222', receiverAuthorizer: '0x3333333333333333333333333333333333333333', token: '0x4444444444444444444444444444444444444444', withdrawDelay: 900, salt: `0x${'00'.repeat(32)}` } as const

describe('voucher hashes', () => {
  it('builds the same voucher digest as the generic EIP-712 encoder, on both keccak backends, for amounts up to uint128', async () => {
    const id = `0x${'ab'.repeat(32)}` as Hex
    const amounts = [0n, 1n, 1000n, 2n ** 64n + 7n, 2n ** 128n - 1n]
    for (const chainId of [1, 8453, 84532]) for (const amount of amounts) expect(fastVoucherDigest(chainId, id, amount)).toBe(voucherDigest(chainId, id, amount))
    await loadKeccak()
    for (const amount of amounts) expect(fastVoucherDigest(84532, id, amount)).toBe(voucherDigest(84532, id, amount))
  })

  it('caches channel ids per chain and config', () => {
    expect(cachedChannelId(config, 84532)).toBe(channelId(config, 84532))
    expect(cachedChannelId(config, 84532)).toBe(channelId(config, 84532))
    expect(cachedChannelId(config, 8453)).toBe(channelId(config, 8453))
    expect(cachedChannelId({ ...config, salt: `0x${'01'.repeat(32)}` }, 84532)).toBe(channelId({ ...config, salt: `0x${'01'.repeat(32)}` }, 84532))
  })
})
