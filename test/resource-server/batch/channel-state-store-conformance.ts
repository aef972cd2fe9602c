import { beforeEach, describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createChannelStateStore, type ChannelState, type ChannelStateStore } from '../../../src/resource-server/batch/index.js'
import type { KeyValueStore } from '../../../src/stores/store.js'
import type { StoreFactory } from '../../stores/key-value-cases.js'

const id = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex

export function sampleChannel(n: number, overrides: Partial<ChannelState> = {}): ChannelState {
  return {
    channelId: id(n),
    network: 'eip155:84532',
    config: { payer: '0x1111111111111111111111111111111111111111', payerAuthorizer: '0x1111111111111111111111111111111111111111', receiver: '0x2222222222222222222222222222222222222222', receiverAuthorizer: '0x3333333333333333333333333333333333333333', token: '0x4444444444444444444444444444444444444444', withdrawDelay: 900, salt: `0x${'00'.repeat(32)}` },
    charged: 2n ** 100n + BigInt(n),
    signedMaxClaimable: 2n ** 100n + 1000n,
    signature: `0x${'ab'.repeat(65)}`,
    balance: 10n ** 30n,
    totalClaimed: 0n,
    withdrawRequestedAt: 0,
    refundNonce: 3n,
    onchainSyncedAt: 1_700_000_000_000,
    lastRequestAt: 1_700_000_000_001,
    ...overrides,
  }
}

/** The channel state store on a backend: what the batch-settlement server relies on. */
export function channelStateStoreConformance(name: string, factory: StoreFactory<KeyValueStore>): void {
  describe(`channel state store on the ${name}`, () => {
    let backend: KeyValueStore
    let store: ChannelStateStore
    beforeEach(async () => {
      backend = await factory.create()
      store = createChannelStateStore(backend)
      return async () => {
        await backend.close?.()
      }
    })

    it('keeps channel states with their amounts exact, lists them, and forgets deleted ones', async () => {
      expect(await store.get(id(1))).toBeUndefined()
      expect(await store.list()).toEqual([])
      await store.put(sampleChannel(1))
      await store.put(sampleChannel(2))
      expect(await store.get(id(1))).toEqual(sampleChannel(1))
      await store.put(sampleChannel(1, { charged: 5n }))
      expect((await store.list()).map((c) => [c.channelId, c.charged]).sort()).toEqual([[id(1), 5n], [id(2), 2n ** 100n + 2n]])
      await store.delete(id(1))
      await store.delete(id(1))
      expect(await store.get(id(1))).toBeUndefined()
      expect((await store.list()).map((c) => c.channelId)).toEqual([id(2)])
      await store.put(sampleChannel(1))
      expect(await store.list()).toHaveLength(2)
    })

    it('reads a channel id in any case as the same channel', async () => {
      await store.put(sampleChannel(10, { channelId: id(0xabc).toUpperCase().replace('0X', '0x') as Hex }))
      expect(await store.get(id(0xabc))).toBeDefined()
    })

    it('gives a lease to one holder at a time, releases only its holder\'s, and lets one of many racing holders win', async () => {
      expect(await store.acquire(id(1), 'a', 60_000)).toBe(true)
      expect(await store.acquire(id(1), 'b', 60_000)).toBe(false)
      expect(await store.holds(id(1), 'a')).toBe(true)
      expect(await store.holds(id(1), 'b')).toBe(false)
      await store.release(id(1), 'b')
      expect(await store.holds(id(1), 'a')).toBe(true)
      await store.release(id(1), 'a')
      expect(await store.acquire(id(1), 'b', 60_000)).toBe(true)
      const racing = await Promise.all(Array.from({ length: 30 }, (_, i) => store.acquire(id(2), `r${i}`, 60_000)))
      expect(racing.filter(Boolean)).toHaveLength(1)
    })

    it('lets a lease lapse after its lifetime (a crashed holder)', async () => {
      expect(await store.acquire(id(3), 'crashed', 50)).toBe(true)
      await factory.advance(120)
      expect(await store.holds(id(3), 'crashed')).toBe(false)
      expect(await store.acquire(id(3), 'next', 60_000)).toBe(true)
    })

    it('records claimed totals that only rise, and the policy\'s marks', async () => {
      expect(await store.claimed(id(1))).toBe(0n)
      await store.recordClaimed(id(1), 2n ** 90n)
      await store.recordClaimed(id(1), 5n)
      expect(await store.claimed(id(1))).toBe(2n ** 90n)
      expect(await store.readMark('last-claim')).toBeUndefined()
      await store.writeMark('last-claim', '123')
      expect(await store.readMark('last-claim')).toBe('123')
    })

    it('shares state between two stores on one backend, and keeps prefixes apart', async () => {
      const other = createChannelStateStore(backend)
      const apart = createChannelStateStore(backend, { prefix: 'elsewhere' })
      await store.put(sampleChannel(4))
      expect(await other.get(id(4))).toEqual(sampleChannel(4))
      expect(await store.acquire(id(4), 'a', 60_000)).toBe(true)
      expect(await other.acquire(id(4), 'b', 60_000)).toBe(false)
      expect(await apart.get(id(4))).toBeUndefined()
      expect(await apart.list()).toEqual([])
    })
  })
}
