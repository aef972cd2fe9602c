/**
 * Where `batch-settlement` channel state lives: a small interface, and its implementation on any
 * `KeyValueStore` (the in-memory store, SQLite, Redis, PostgreSQL), so state survives restarts and
 * instances sharing a store share channels. Writes to a channel happen under its lease.
 */
import type { Hex } from 'viem'
import { createMemoryStore } from '../../stores/memory-store.js'
import type { KeyValueStore } from '../../stores/store.js'
import { decodeChannelState, encodeChannelState, type ChannelState } from './channel-state.js'

export interface ChannelStateStore {
  get(channelId: Hex): Promise<ChannelState | undefined>
  /** Every channel the server holds state for (the claim policy's input). */
  list(): Promise<ChannelState[]>
  /** Writes a channel's state; call it holding the channel's lease. */
  put(state: ChannelState): Promise<void>
  /** Forgets a channel (after a full refund); call it holding the channel's lease. */
  delete(channelId: Hex): Promise<void>
  /**
   * Takes the lease named `name` (a channel id, or the claim policy's name) for `holder`, when no
   * other holder has a live one: the one atomic step that serializes a channel across instances.
   * It lapses after `ttlMs` if never released (a crashed instance).
   */
  acquire(name: string, holder: string, ttlMs: number): Promise<boolean>
  /** True while `holder` still has the lease (checked before committing what it did under it). */
  holds(name: string, holder: string): Promise<boolean>
  release(name: string, holder: string): Promise<void>
  /** The claimed total the claim policy recorded for a channel (0 when none), beside the channel's own mirror. */
  claimed(channelId: Hex): Promise<bigint>
  /** Records a claimed total; a lower one than recorded is ignored. */
  recordClaimed(channelId: Hex, total: bigint): Promise<void>
  /** A small value of the claim policy's (when it last claimed), or undefined. */
  readMark(name: string): Promise<string | undefined>
  writeMark(name: string, value: string): Promise<void>
}

export interface ChannelStateStoreOptions {
  /** Prefix of every key: two paywalls on one store with different receivers may share one. @default "batch-settlement" */
  readonly prefix?: string
}

/**
 * The channel state store on a key-value store (`createMemoryStore()` when none is given): one
 * JSON value per channel, a numeric hash indexing them (for `list`), leases as values written
 * only when absent, with a lifetime.
 *
 * @example
 * // partial
 * const channels = createChannelStateStore(createSqliteStore({ path: 'shop.sqlite' }))
 */
export function createChannelStateStore(store: KeyValueStore = createMemoryStore(), options: ChannelStateStoreOptions = {}): ChannelStateStore {
  const prefix = options.prefix ?? 'batch-settlement'
  const channelKey = (id: string) => `${prefix}:channel:${id.toLowerCase()}`
  const leaseKey = (name: string) => `${prefix}:lease:${name.toLowerCase()}`
  const claimedKey = (id: string) => `${prefix}:claimed:${id.toLowerCase()}`
  const markKey = (name: string) => `${prefix}:mark:${name}`
  const indexKey = `${prefix}:channels`

  const get = async (channelId: Hex) => {
    const json = await store.get(channelKey(channelId))
    return json === undefined ? undefined : decodeChannelState(json)
  }

  return {
    get,
    async list() {
      const index = await store.readFields(indexKey)
      const ids = Object.keys(index).filter((id) => (index[id] ?? 0) > 0) as Hex[]
      const states = await Promise.all(ids.map(get))
      return states.filter((s) => s !== undefined)
    },
    async put(state) {
      const key = channelKey(state.channelId)
      const created = (await store.get(key)) === undefined
      await store.set(key, encodeChannelState(state))
      if (created) await store.incrementFields(indexKey, { [state.channelId.toLowerCase()]: 1 })
    },
    async delete(channelId) {
      const key = channelKey(channelId)
      if ((await store.get(key)) === undefined) return
      await store.delete(key)
      await store.incrementFields(indexKey, { [channelId.toLowerCase()]: -1 })
    },
    acquire: (name, holder, ttlMs) => store.set(leaseKey(name), holder, { ifAbsent: true, ttlMs }),
    holds: async (name, holder) => (await store.get(leaseKey(name))) === holder,
    async release(name, holder) {
      // Only our own lease: one that lapsed and was taken by another holder stays theirs.
      if ((await store.get(leaseKey(name))) === holder) await store.delete(leaseKey(name))
    },
    async claimed(channelId) {
      const value = await store.get(claimedKey(channelId))
      return value === undefined ? 0n : BigInt(value)
    },
    async recordClaimed(channelId, total) {
      const key = claimedKey(channelId)
      const current = await store.get(key)
      if (current === undefined || BigInt(current) < total) await store.set(key, total.toString())
    },
    readMark: (name) => store.get(markKey(name)),
    writeMark: async (name, value) => {
      await store.set(markKey(name), value)
    },
  }
}
