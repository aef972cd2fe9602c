/**
 * `compute()`, shared by every caller for `ttlMs` after it started: concurrent
 * callers get the same promise, and a computation that fails is not kept.
 *
 * @example
 * const read = cachedFor(15_000, Date.now, () => readPublicStats(store))
 */
export function cachedFor<T>(ttlMs: number, now: () => number, compute: () => Promise<T>): () => Promise<T> {
  let cached: { value: Promise<T>; until: number } | undefined
  return () => {
    const time = now()
    if (cached && cached.until > time) return cached.value
    const entry = { value: compute(), until: time + ttlMs }
    cached = entry
    entry.value.catch(() => {
      if (cached === entry) cached = undefined
    })
    return entry.value
  }
}
