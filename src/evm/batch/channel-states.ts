/**
 * The last confirmed read of each channel (never optimistic: a deposit counts once mined), fresh
 * for `ttlMs`: an EOA voucher is checked against it without the chain. Kept in the facilitator's
 * settlement store when one is attached, so every instance on that store sees one channel state and
 * a claim, deposit or refund settled by one instance drops the read for all of them; in memory
 * otherwise. A store fault never fails a verify: a read that fails is a miss (the chain is read),
 * a write or a drop that fails leaves an entry that expires with its `ttlMs`. A drop leaves a mark
 * for `ttlMs`, so that a read that started before it (a verify racing a claim) is not remembered.
 */
import type { Hex } from 'viem'
import type { AdapterStore } from '../../core/adapter.js'
import type { ChannelSnapshot } from './codec.js'

export interface ChannelStates {
  /** The channel's remembered state when younger than the TTL. */
  fresh(chainId: number, id: Hex): Promise<ChannelSnapshot | undefined>
  /**
   * Remembers `state`, read from the chain at `readAt` (ms), unless the channel was dropped since
   * that read began. Without `readAt`: a read made after the transaction that dropped it landed (settle's own).
   */
  remember(chainId: number, state: ChannelSnapshot, readAt?: number): Promise<void>
  /** Drops what is remembered of `ids` (a transaction that moves them was sent, landed or not yet known). */
  forget(chainId: number, ids: readonly string[]): Promise<void>
}

const MEMORY_SWEEP_AT = 10_000
const keyOf = (chainId: number, id: string) => `batch-channel:${chainId}:${id.toLowerCase()}`

/** Channel states in `store()` (read at each call: the facilitator attaches it after the adapter is built), or in memory without one. */
export function createChannelStates(ttlMs: number, store: () => AdapterStore | undefined): ChannelStates {
  const memory = new Map<string, string>()
  const sweep = () => {
    // Expired entries are swept now and then, so channels seen once do not pile up.
    if (memory.size >= MEMORY_SWEEP_AT) for (const [key, text] of memory) if (expired(text, ttlMs)) memory.delete(key)
  }
  const kv: () => Pick<AdapterStore, 'get' | 'set'> = () =>
    store() ?? {
      get: async (key) => memory.get(key),
      set: async (key, value) => {
        sweep()
        memory.set(key, value)
        return true
      },
    }
  return {
    async fresh(chainId, id) {
      const text = await kv().get(keyOf(chainId, id)).catch(() => undefined)
      return text === undefined ? undefined : decode(text, id, ttlMs)
    },
    async remember(chainId, state, readAt) {
      const key = keyOf(chainId, state.channelId)
      if (readAt !== undefined) {
        const current = await kv().get(key).catch(() => undefined)
        const dropped = current === undefined ? undefined : droppedAt(current, ttlMs)
        if (dropped !== undefined && dropped >= readAt) return
      }
      await kv().set(key, encode(state, readAt ?? Date.now()), { ttlMs }).catch(() => undefined)
    },
    async forget(chainId, ids) {
      const mark = JSON.stringify({ gone: Date.now() })
      for (const id of new Set(ids.map((i) => i.toLowerCase()))) await kv().set(keyOf(chainId, id), mark, { ttlMs }).catch(() => undefined)
    },
  }
}

function encode(state: ChannelSnapshot, at: number): string {
  return JSON.stringify({ b: state.balance.toString(), c: state.totalClaimed.toString(), w: state.withdrawRequestedAt, n: state.refundNonce.toString(), at })
}

/** When the channel was dropped, for a live drop mark; undefined for a state or an expired mark. */
function droppedAt(text: string, ttlMs: number): number | undefined {
  try {
    const v = JSON.parse(text) as { gone?: unknown }
    return typeof v.gone === 'number' && Date.now() - v.gone < ttlMs ? v.gone : undefined
  } catch {
    return undefined
  }
}

function expired(text: string, ttlMs: number): boolean {
  try {
    const v = JSON.parse(text) as { gone?: number; at?: number }
    const since = v.gone ?? v.at
    return typeof since !== 'number' || Date.now() - since >= ttlMs
  } catch {
    return true
  }
}

/** A stored state, or undefined when it is a drop mark, older than the TTL (a store that expires coarsely) or not ours. */
function decode(text: string, id: Hex, ttlMs: number): ChannelSnapshot | undefined {
  try {
    const v = JSON.parse(text) as { b?: string; c: string; w: number; n: string; at: number }
    if (v.b === undefined || typeof v.at !== 'number' || Date.now() - v.at >= ttlMs) return undefined
    return { channelId: id, balance: BigInt(v.b), totalClaimed: BigInt(v.c), withdrawRequestedAt: Number(v.w), refundNonce: BigInt(v.n) }
  } catch {
    return undefined
  }
}
