/**
 * The channel state cache alone, in memory and over a facilitator-style store: fresh within its TTL,
 * dropped on `forget`, and a read that began before a drop (a verify racing a claim) not remembered.
 */
import { describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createChannelStates } from '../../../src/evm/batch/channel-states.js'
import type { ChannelSnapshot } from '../../../src/evm/batch/codec.js'
import { createMemoryStore } from '../../../src/stores/memory-store.js'

const id: Hex = `0x${'ab'.repeat(32)}`
const state = (totalClaimed: bigint): ChannelSnapshot => ({ channelId: id, balance: 10_000n, totalClaimed, withdrawRequestedAt: 0, refundNonce: 0n })
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

for (const [where, store] of [['memory', () => undefined], ['a store', () => createMemoryStore()]] as const) {
  describe(`channel states in ${where}`, () => {
    it('answers a state within its TTL and none after', async () => {
      const shared = store()
      const states = createChannelStates(200, () => shared)
      await states.remember(84532, state(0n), Date.now())
      expect(await states.fresh(84532, id)).toEqual(state(0n))
      await pause(250)
      expect(await states.fresh(84532, id)).toBeUndefined()
    })

    it('drops a channel, and does not remember a read that began before the drop; settle\'s own read after it is remembered', async () => {
      const shared = store()
      const states = createChannelStates(60_000, () => shared)
      await states.remember(84532, state(0n), Date.now())
      const readAt = Date.now()
      await pause(5)
      await states.forget(84532, [id])
      expect(await states.fresh(84532, id)).toBeUndefined()
      await states.remember(84532, state(0n), readAt)
      expect(await states.fresh(84532, id)).toBeUndefined()
      await pause(5)
      await states.remember(84532, state(3000n), Date.now())
      expect(await states.fresh(84532, id)).toEqual(state(3000n))
      await states.forget(84532, [id])
      await states.remember(84532, state(4000n))
      expect(await states.fresh(84532, id)).toEqual(state(4000n))
    })
  })
}
