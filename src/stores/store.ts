/**
 * What the facilitator must remember, as a few primitive operations that map
 * one-to-one onto Redis commands. Settlement claims, statistics and the
 * catalog are all built on them, so a new backend only implements this.
 * Every implementation passes the conformance suite in `test/stores/`.
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
