import type { ExpiryOptions, SetOptions, Store } from './store.js'

interface Entry<T> {
  value: T
  expiresAt: number
}

/** Options of the in-memory store. */
export interface MemoryStoreOptions {
  /** Clock in milliseconds, for tests. @default Date.now */
  now?: () => number
}

/**
 * The default store: one process, nothing shared. Expired entries are dropped
 * when read and swept on writes, so memory follows live data only.
 *
 * @example
 * const facilitator = createFacilitator({ schemes, store: createMemoryStore() })
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): Store {
  const now = options.now ?? Date.now
  const values = new Map<string, Entry<string>>()
  const hashes = new Map<string, Entry<Map<string, number>>>()
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
  // Sweeping every 1024 writes keeps the cost amortised and bounds dead entries.
  const sweep = () => {
    if (++writesSinceSweep < 1024) return
    writesSinceSweep = 0
    const t = now()
    for (const map of [values, hashes] as Map<string, Entry<unknown>>[]) {
      for (const [key, entry] of map) if (entry.expiresAt <= t) map.delete(key)
    }
  }

  return {
    async get(key) {
      return live(values, key)?.value
    },
    async set(key, value, options?: SetOptions) {
      if (options?.ifAbsent && live(values, key)) return false
      values.set(key, { value, expiresAt: expiry(options) })
      sweep()
      return true
    },
    async delete(key) {
      values.delete(key)
      hashes.delete(key)
    },
    async incrementFields(key, increments, options) {
      let entry = live(hashes, key)
      if (!entry) {
        entry = { value: new Map(), expiresAt: expiry(options) }
        hashes.set(key, entry)
        sweep()
      } else if (options?.ttlMs !== undefined) {
        entry.expiresAt = expiry(options)
      }
      for (const [field, by] of Object.entries(increments)) {
        entry.value.set(field, (entry.value.get(field) ?? 0) + by)
      }
    },
    async readFields(key) {
      const entry = live(hashes, key)
      return entry ? Object.fromEntries(entry.value) : {}
    },
  }
}
