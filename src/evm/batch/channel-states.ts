/**
 * The last confirmed read of each channel (never optimistic: a deposit counts once mined), fresh
 * for `ttlMs`: an EOA voucher is checked against it without the chain. Kept in the facilitator's
 * settlement store when one is attached, so every instance on that store sees one channel state and
 * a claim, deposit or refund settled by one instance drops the read for all of them; in memory
 * otherwise. A store fault never fails a verify: a read that fails is a miss (the chain is read),
 * a write or a drop that fails leaves an entry that expires with its `ttlMs`.
 */
import type { Hex } from 'viem'
import type { AdapterStore } from '../../core/adapter.js'
import type { ChannelSnapshot } from './codec.js'

export interface ChannelStates {
  /** The channel's remembered state when younger than the TTL. */
  fresh(chainId: number, id: Hex): Promise<ChannelSnapshot | undefined>
  remember(chainId: number, state: ChannelSnapshot): Promise<void>
  /** Drops what is remembered of `ids` (a transaction that moves them was sent, landed or not yet known). */
  forget(chainId: number, ids: readonly string[]): Promise<void>
}

const MEMORY_SWEEP_AT = 10_000
const keyOf = (chainId: number, id: string) => `batch-channel:${chainId}:${id.toLowerCase()}`

/** Channel states in `store()` (read at each call: the facilitator attaches it after the adapter is built), or in memory without one. */
export function createChannelStates(ttlMs: number, store: () => AdapterStore | undefined): ChannelStates {
  const memory = new Map<string, { state: ChannelSnapshot; at: number }>()
  return {
    async fresh(chainId, id) {
      const shared = store()
      if (!shared) {
        const entry = memory.get(keyOf(chainId, id))
        return entry && Date.now() - entry.at < ttlMs ? entry.state : undefined
      }
      const text = await shared.get(keyOf(chainId, id)).catch(() => undefined)
      return text === undefined ? undefined : decode(text, id, ttlMs)
    },
    async remember(chainId, state) {
      const shared = store()
      if (!shared) {
        // Expired entries are swept now and then, so channels seen once do not pile up.
        if (memory.size >= MEMORY_SWEEP_AT) for (const [key, entry] of memory) if (Date.now() - entry.at >= ttlMs) memory.delete(key)
        memory.set(keyOf(chainId, state.channelId), { state, at: Date.now() })
        return
      }
      await shared.set(keyOf(chainId, state.channelId), encode(state), { ttlMs }).catch(() => undefined)
    },
    async forget(chainId, ids) {
      const shared = store()
      for (const id of new Set(ids.map((i) => i.toLowerCase()))) {
        if (shared) await shared.delete(keyOf(chainId, id)).catch(() => undefined)
        else memory.delete(keyOf(chainId, id))
      }
    },
  }
}

function encode(state: ChannelSnapshot): string {
  return JSON.stringify({ b: state.balance.toString(), c: state.totalClaimed.toString(), w: state.withdrawRequestedAt, n: state.refundNonce.toString(), at: Date.now() })
}

/** A stored entry, or undefined when it is older than the TTL (a store that expires coarsely) or not ours. */
function decode(text: string, id: Hex, ttlMs: number): ChannelSnapshot | undefined {
  try {
    const v = JSON.parse(text) as { b: string; c: string; w: number; n: string; at: number }
    if (typeof v.at !== 'number' || Date.now() - v.at >= ttlMs) return undefined
    return { channelId: id, balance: BigInt(v.b), totalClaimed: BigInt(v.c), withdrawRequestedAt: Number(v.w), refundNonce: BigInt(v.n) }
  } catch {
    return undefined
  }
}
