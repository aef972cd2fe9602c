import { beforeEach, describe, expect, it } from 'vitest'
import type { KeyValueStore } from '../../src/stores/store.js'

/** Builds a fresh, empty store for one test; `advance` moves its clock (or waits, for a real backend). */
export interface StoreFactory<S extends KeyValueStore> {
  create(): Promise<S>
  /** Lets `ms` milliseconds pass as the store sees time. */
  advance(ms: number): Promise<void>
}

/**
 * Values and numeric hashes, which both roles use: run inside each role's suite, against the
 * store its `beforeEach` made (`current()`).
 */
export function keyValueCases(current: () => KeyValueStore, factory: StoreFactory<KeyValueStore>): void {
  let store: KeyValueStore
  beforeEach(() => {
    store = current()
  })

  describe('values', () => {
    it('reads what was written and undefined for what was not', async () => {
      expect(await store.get('a')).toBeUndefined()
      expect(await store.set('a', 'one')).toBe(true)
      expect(await store.get('a')).toBe('one')
      expect(await store.set('a', 'two')).toBe(true)
      expect(await store.get('a')).toBe('two')
    })

    it('writes with ifAbsent only once', async () => {
      expect(await store.set('claim', 'first', { ifAbsent: true, ttlMs: 60_000 })).toBe(true)
      expect(await store.set('claim', 'second', { ifAbsent: true, ttlMs: 60_000 })).toBe(false)
      expect(await store.get('claim')).toBe('first')
    })

    it('lets exactly one of many racing ifAbsent writes win', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.set('race', `w${i}`, { ifAbsent: true, ttlMs: 60_000 })))
      expect(results.filter(Boolean)).toHaveLength(1)
      const winner = results.indexOf(true)
      expect(await store.get('race')).toBe(`w${winner}`)
    })

    it('forgets a value when its ttl passes, and then lets ifAbsent write again', async () => {
      await store.set('lease', 'x', { ifAbsent: true, ttlMs: 50 })
      await factory.advance(120)
      expect(await store.get('lease')).toBeUndefined()
      expect(await store.set('lease', 'y', { ifAbsent: true, ttlMs: 50 })).toBe(true)
    })

    it('deletes values and numeric hashes', async () => {
      await store.set('v', '1')
      await store.incrementFields('h', { a: 1 })
      for (const key of ['v', 'h']) await store.delete(key)
      expect(await store.get('v')).toBeUndefined()
      expect(await store.readFields('h')).toEqual({})
    })
  })

  describe('numeric hashes', () => {
    it('adds to fields and creates them as needed', async () => {
      expect(await store.readFields('h')).toEqual({})
      await store.incrementFields('h', { a: 1, b: 2 })
      await store.incrementFields('h', { a: 3, c: -1 })
      expect(await store.readFields('h')).toEqual({ a: 4, b: 2, c: -1 })
    })

    it('keeps fractions and integers beyond 32 bits', async () => {
      await store.incrementFields('h', { f: 0.25, big: 2 ** 40 })
      await store.incrementFields('h', { f: 0.5, big: 2 ** 40 })
      expect(await store.readFields('h')).toEqual({ f: 0.75, big: 2 ** 41 })
    })

    it('loses no increment under concurrency', async () => {
      await Promise.all(Array.from({ length: 200 }, () => store.incrementFields('h', { n: 1, m: 2 })))
      expect(await store.readFields('h')).toEqual({ n: 200, m: 400 })
    })

    it('expires a hash after its ttl, restarted by each increment', async () => {
      await store.incrementFields('h', { n: 1 }, { ttlMs: 400 })
      await factory.advance(250)
      await store.incrementFields('h', { n: 1 }, { ttlMs: 400 })
      await factory.advance(250)
      expect(await store.readFields('h')).toEqual({ n: 2 })
      await factory.advance(250)
      expect(await store.readFields('h')).toEqual({})
    })
  })
}
