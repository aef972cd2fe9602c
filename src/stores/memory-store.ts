import { addToHyperLogLog, createHyperLogLog, estimateHyperLogLog } from './hyperloglog.js'
import type { ExpiryOptions, RankedEntry, SetOptions, Store } from './store.js'

/** An open hold on a balance. */
interface Hold {
  amount: bigint
  expiresAt: number
}

/** A hold closed with `keepMs`: it counts against balances read before `closedAt`. */
interface ClosedHold {
  id: string
  amount: bigint
  closedAt: number
  expiresAt: number
}

/**
 * The holds of one balance: open ones by id (as many as settlements in flight), closed ones
 * in the order they closed, so a placement sums only those closed since its balance was read
 * (a busy payer's thousands of recent settlements are not summed each time).
 */
interface HoldBook {
  open: Map<string, Hold>
  closed: ClosedHold[]
}

interface Entry<T> {
  value: T
  expiresAt: number
}

/** Options of the in-memory store. */
export interface MemoryStoreOptions {
  /** Clock in milliseconds, for tests. @default Date.now */
  now?: () => number
  /**
   * Most keys of each kind kept. Past it, expired keys are swept and then the
   * oldest written are forgotten first (settlement records of days ago, not
   * the claims in flight), so memory stays bounded under any traffic. Share a
   * Redis store (with a `maxmemory` policy) when more must be remembered.
   * @default 1_000_000
   */
  maxKeys?: number
}

/** Numbers of live keys per kind, to watch memory stay bounded. */
export interface MemoryStoreSize {
  values: number
  hashes: number
  texts: number
  sketches: number
  rankings: number
  holds: number
}

/** The in-memory store, with a size probe for tests and monitoring. */
export interface MemoryStore extends Store {
  /** Counts live keys per kind (expired ones are swept first). */
  size(): MemoryStoreSize
}

/**
 * The default store: one process, nothing shared. Expired entries are dropped
 * when read and swept on writes, so memory follows live data only.
 *
 * @example
 * // partial
 * const facilitator = createFacilitator({ schemes, store: createMemoryStore() })
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const now = options.now ?? Date.now
  const maxKeys = options.maxKeys ?? 1_000_000
  const values = new Map<string, Entry<string>>()
  const hashes = new Map<string, Entry<Map<string, number>>>()
  const texts = new Map<string, Entry<Map<string, string>>>()
  const sketches = new Map<string, Entry<Uint8Array>>()
  const rankings = new Map<string, Entry<Map<string, number>>>()
  const holds = new Map<string, Entry<HoldBook>>()
  const all = [values, hashes, texts, sketches, rankings, holds] as Map<string, Entry<unknown>>[]
  let writesSinceSweep = 0

  const live = <T>(map: Map<string, Entry<T>>, key: string): Entry<T> | undefined => {
    const entry = map.get(key)
    if (!entry) return undefined
    if (entry.expiresAt <= now()) {
      map.delete(key)
      return undefined
    }
    return entry
  }
  const expiry = (options?: ExpiryOptions) => (options?.ttlMs === undefined ? Infinity : now() + options.ttlMs)
  const sweepAll = () => {
    const t = now()
    for (const map of all) for (const [key, entry] of map) if (entry.expiresAt <= t) map.delete(key)
  }
  // Sweeping every 1024 writes keeps the cost amortised and bounds dead entries.
  const sweep = () => {
    if (++writesSinceSweep < 1024) return
    writesSinceSweep = 0
    sweepAll()
  }
  /** Keeps a map within `maxKeys`: expired keys first, then the oldest written (Map order is insertion order). */
  let overflowsSinceSweep = 0
  const bound = (map: Map<string, Entry<unknown>>) => {
    if (map.size <= maxKeys) return
    // A full scan now and then, not on every write at the cap.
    if (++overflowsSinceSweep >= 1024) {
      overflowsSinceSweep = 0
      sweepAll()
    }
    for (const key of map.keys()) {
      if (map.size <= maxKeys) break
      map.delete(key)
    }
  }
  /** The live entry of a key, created when absent; a given ttl restarts its lifetime (like Redis PEXPIRE). */
  const upsert = <T>(map: Map<string, Entry<T>>, key: string, create: () => T, options?: ExpiryOptions): Entry<T> => {
    let entry = live(map, key)
    if (!entry) {
      entry = { value: create(), expiresAt: expiry(options) }
      map.set(key, entry)
      sweep()
      bound(map as Map<string, Entry<unknown>>)
    } else if (options?.ttlMs !== undefined) {
      entry.expiresAt = expiry(options)
    }
    return entry
  }

  return {
    async get(key) {
      return live(values, key)?.value
    },
    async set(key, value, options?: SetOptions) {
      if (options?.ifAbsent && live(values, key)) return false
      // Re-inserted so that the insertion order stays the order of last writes.
      values.delete(key)
      values.set(key, { value, expiresAt: expiry(options) })
      sweep()
      bound(values as Map<string, Entry<unknown>>)
      return true
    },
    async delete(key) {
      for (const map of all) map.delete(key)
    },
    async incrementFields(key, increments, options) {
      const fields = upsert(hashes, key, () => new Map<string, number>(), options).value
      for (const field in increments) fields.set(field, (fields.get(field) ?? 0) + increments[field]!)
    },
    async readFields(key) {
      const entry = live(hashes, key)
      return entry ? Object.fromEntries(entry.value) : {}
    },
    async setTextFields(key, fields, options) {
      const entry = upsert(texts, key, () => new Map<string, string>(), options).value
      for (const field in fields) entry.set(field, fields[field]!)
    },
    async readTextFields(key) {
      const entry = live(texts, key)
      return entry ? Object.fromEntries(entry.value) : {}
    },
    async addDistinct(key, members, options) {
      const registers = upsert(sketches, key, createHyperLogLog, options).value
      for (const member of members) addToHyperLogLog(registers, member)
    },
    async countDistinct(keys) {
      const found = keys.map((key) => live(sketches, key)?.value).filter((s): s is Uint8Array => s !== undefined)
      return estimateHyperLogLog(found)
    },
    async incrementRanked(key, member, by, options) {
      const ranking = upsert(rankings, key, () => new Map<string, number>(), options).value
      const score = (ranking.get(member) ?? 0) + by
      ranking.set(member, score)
      const evicted: string[] = []
      const cap = options?.cap
      if (cap !== undefined && ranking.size > cap) {
        const lowest = sorted(ranking).reverse().slice(0, ranking.size - cap)
        for (const entry of lowest) {
          ranking.delete(entry.member)
          evicted.push(entry.member)
        }
      }
      return { score, evicted }
    },
    async readRanked(key, range = {}) {
      const entry = live(rankings, key)
      if (!entry) return []
      const offset = range.offset ?? 0
      return sorted(entry.value).slice(offset, range.limit === undefined ? undefined : offset + range.limit)
    },
    async countRanked(key) {
      return live(rankings, key)?.value.size ?? 0
    },
    async placeHold(key, id, hold) {
      const t = now()
      const amount = BigInt(hold.amount)
      const entry = live(holds, key)
      let held = amount
      if (entry) {
        const book = entry.value
        for (const [other, open] of book.open) {
          if (open.expiresAt <= t) book.open.delete(other)
          else if (other !== id) held += open.amount
        }
        // Closed holds in the order they closed: the ones closed before `since` are in the balance already.
        while (book.closed.length > 0 && book.closed[0]!.expiresAt <= t) book.closed.shift()
        for (let i = book.closed.length - 1; i >= 0; i--) {
          const closed = book.closed[i]!
          if (closed.closedAt < hold.since) break
          if (closed.id !== id && closed.expiresAt > t) held += closed.amount
        }
      }
      if (held > BigInt(hold.limit)) return false
      const expiresAt = t + hold.ttlMs
      const placed = upsert(holds, key, () => ({ open: new Map<string, Hold>(), closed: [] as ClosedHold[] }))
      placed.value.open.set(id, { amount, expiresAt })
      // The key lives as long as its longest hold.
      placed.expiresAt = Math.max(placed.expiresAt === Infinity ? 0 : placed.expiresAt, expiresAt)
      return true
    },
    async closeHold(key, id, options = {}) {
      const entry = live(holds, key)
      const open = entry?.value.open.get(id)
      if (!entry || !open) return
      entry.value.open.delete(id)
      const keepMs = options.keepMs ?? 0
      if (keepMs > 0) {
        const t = now()
        entry.value.closed.push({ id, amount: open.amount, closedAt: t, expiresAt: t + keepMs })
        entry.expiresAt = Math.max(entry.expiresAt, t + keepMs)
      } else if (entry.value.open.size === 0 && entry.value.closed.length === 0) {
        holds.delete(key)
      }
    },
    size() {
      sweepAll()
      return { values: values.size, hashes: hashes.size, texts: texts.size, sketches: sketches.size, rankings: rankings.size, holds: holds.size }
    },
  }
}

/** Highest score first; ties by member name, highest first (Redis ZREVRANGE order). */
function sorted(ranking: Map<string, number>): RankedEntry[] {
  return [...ranking]
    .map(([member, score]) => ({ member, score }))
    .sort((a, b) => b.score - a.score || (a.member < b.member ? 1 : a.member > b.member ? -1 : 0))
}
