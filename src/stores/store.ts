/**
 * What the facilitator must remember, as a few primitive operations that map
 * one-to-one onto Redis commands. Settlement claims, statistics and the
 * catalog are all built on them, so a new backend only implements this.
 * Every implementation passes the conformance suite in `test/stores/`.
 *
 * Keys hold one kind of value each: a string (`get`/`set`), a hash of numbers
 * (`incrementFields`), a hash of strings (`setTextFields`), a distinct-count
 * sketch (`addDistinct`) or a ranking (`incrementRanked`). `delete` removes
 * whatever a key holds.
 */
export interface Store {
  /** Reads a value, or `undefined` when absent or expired. */
  get(key: string): Promise<string | undefined>
  /**
   * Writes a value. With `ifAbsent`, writes only when no live value exists and
   * answers whether it wrote: this is the atomic claim two racing settles rely on.
   */
  set(key: string, value: string, options?: SetOptions): Promise<boolean>
  /** Removes a value. */
  delete(key: string): Promise<void>
  /** Atomically adds to numeric fields of a hash, creating it as needed. */
  incrementFields(key: string, increments: Readonly<Record<string, number>>, options?: ExpiryOptions): Promise<void>
  /** Reads every numeric field of a hash (empty when absent). */
  readFields(key: string): Promise<Record<string, number>>

  /**
   * Writes string fields of a hash (other fields are kept). With `ttlMs` the
   * key's lifetime restarts.
   *
   * @example
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

  /** Releases connections and timers. */
  close?(): Promise<void>
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
