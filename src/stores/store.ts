/**
 * What the facilitator must remember, as a few primitive operations that map
 * one-to-one onto Redis commands, split by the role that needs them:
 *
 * - `SettlementStore`: what `createFacilitator` needs to settle each payment once
 *   (claims and records, payer failure counters, holds on payers' balances) and
 *   what rate limits count in.
 * - `StatsStore`: what public statistics and the catalog need (counters,
 *   text hashes, distinct counts, rankings).
 * - `Store`: both, which every built-in backend implements.
 *
 * A backend may implement one role alone; each role has its conformance suite
 * in `test/stores/`.
 *
 * Keys hold one kind of value each: a string (`get`/`set`), a hash of numbers
 * (`incrementFields`), a hash of strings (`setTextFields`), a distinct-count
 * sketch (`addDistinct`), a ranking (`incrementRanked`) or a set of holds on a
 * balance (`placeHold`). `delete` removes whatever a key holds.
 */
export interface Store extends SettlementStore, StatsStore {}

/** Values and numeric hashes: the operations both roles use. */
export interface KeyValueStore {
  /** Reads a value, or `undefined` when absent or expired. */
  get(key: string): Promise<string | undefined>
  /**
   * Writes a value. With `ifAbsent`, writes only when no live value exists and
   * answers whether it wrote: this is the atomic claim two racing settles rely on.
   */
  set(key: string, value: string, options?: SetOptions): Promise<boolean>
  /** Removes whatever the key holds (a value, a hash, a sketch, a ranking, holds). */
  delete(key: string): Promise<void>
  /** Atomically adds to numeric fields of a hash, creating it as needed. */
  incrementFields(key: string, increments: Readonly<Record<string, number>>, options?: ExpiryOptions): Promise<void>
  /** Reads every numeric field of a hash (empty when absent). */
  readFields(key: string): Promise<Record<string, number>>

  /** Releases connections and timers. */
  close?(): Promise<void>
}

/**
 * The settlement role: claims and settlement records (`get`, `set` with `ifAbsent`,
 * `delete`, with ttl), payer failure counters (`incrementFields`, `readFields`) and
 * holds on payers' balances. `createFacilitator({ store })` needs only this.
 */
export interface SettlementStore extends KeyValueStore {
  /**
   * Atomically places hold `id` of `amount` on a balance of `limit` when the holds that
   * count, with this one, stay within `limit`, and answers whether it did. Counted: every
   * open hold, and every hold closed at or after `since` (the moment `limit` was read: a
   * balance read before a spend landed does not reflect it). A hold with the same `id` is replaced,
   * never counted twice. Amounts and limits are decimal integer strings of any size.
   *
   * @example
   * // partial
   * // Two settlements from one payer: each holds its amount against the balance its verify read.
   * await store.placeHold('hold:eip155:8453:usdc:0xpayer', 'payment-1', { amount: '600', limit: '1000', since, ttlMs: 120_000 }) // true
   * await store.placeHold('hold:eip155:8453:usdc:0xpayer', 'payment-2', { amount: '600', limit: '1000', since, ttlMs: 120_000 }) // false
   */
  placeHold(key: string, id: string, hold: HoldRequest): Promise<boolean>
  /**
   * Closes hold `id`. With `keepMs` it stays, closed now, for that long (it counts against
   * limits read before now); without, it is gone. Closing an absent hold does nothing.
   */
  closeHold(key: string, id: string, options?: CloseHoldOptions): Promise<void>
}

/**
 * The statistics role: what `createPublicStats`, `createStatsRecorder`, `createCatalog`
 * and `createCatalogRecorder` write and read (counters, text hashes, distinct counts,
 * rankings, and values for their once-only claims).
 */
export interface StatsStore extends KeyValueStore {
  /**
   * Writes string fields of a hash (other fields are kept). With `ttlMs` the
   * key's lifetime restarts.
   *
   * @example
   * // partial
   * await store.setTextFields('catalog:meta:x', { url, description }, { ttlMs: DAY })
   */
  setTextFields(key: string, fields: Readonly<Record<string, string>>, options?: ExpiryOptions): Promise<void>
  /** Reads every field of a string hash (empty when absent). */
  readTextFields(key: string): Promise<Record<string, string>>

  /**
   * Adds members to a distinct-count sketch (HyperLogLog: fixed size whatever
   * the number of members, ~1% error; Redis `PFADD`). Members cannot be read
   * back, only counted. With `ttlMs` the key's lifetime restarts.
   */
  addDistinct(key: string, members: readonly string[], options?: ExpiryOptions): Promise<void>
  /** Estimated number of distinct members in the union of the sketches (Redis `PFCOUNT k1 k2 ...`). */
  countDistinct(keys: readonly string[]): Promise<number>

  /**
   * Adds `by` to a member's score in a ranking (Redis `ZINCRBY`). With `cap`,
   * the lowest-scored members beyond `cap` are removed (ties: lowest member
   * name first) and returned, so their companion keys can be deleted.
   */
  incrementRanked(key: string, member: string, by: number, options?: RankOptions): Promise<RankedIncrement>
  /** Members ranked highest score first (ties: highest member name first), `offset`/`limit` applied. */
  readRanked(key: string, range?: RankRange): Promise<RankedEntry[]>
  /** Number of members in a ranking. */
  countRanked(key: string): Promise<number>
}

export interface HoldRequest {
  /** What the hold takes, a decimal integer string. */
  amount: string
  /** The balance held against, a decimal integer string. */
  limit: string
  /** When `limit` was read (epoch ms): holds closed at or after it still count. */
  since: number
  /** How long an open hold lives if it is never closed. */
  ttlMs: number
}

export interface CloseHoldOptions {
  /** How long the closed hold keeps counting against balances read before it closed. @default 0 (removed) */
  keepMs?: number
}

export interface ExpiryOptions {
  /** Time to live in milliseconds; absent means no expiry. */
  ttlMs?: number
}

export interface SetOptions extends ExpiryOptions {
  /** Write only when no live value exists. */
  ifAbsent?: boolean
}

export interface RankOptions extends ExpiryOptions {
  /** Largest number of members kept; the lowest-scored are evicted. @default unbounded */
  cap?: number
}

export interface RankedIncrement {
  /** The member's score after the increment. */
  score: number
  /** Members removed to respect `cap` (may include `member` itself). */
  evicted: string[]
}

export interface RankRange {
  /** @default 0 */
  offset?: number
  /** @default all */
  limit?: number
}

export interface RankedEntry {
  member: string
  score: number
}
