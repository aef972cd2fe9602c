import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Store } from '../../src/stores/store.js'

/** Builds a fresh, empty store for one test; `advance` moves its clock (or waits, for a real backend). */
export interface StoreFactory {
  create(): Promise<Store>
  /** Lets `ms` milliseconds pass as the store sees time. */
  advance(ms: number): Promise<void>
}

/**
 * The behaviour every Store must have. A new backend is done when this suite
 * passes against it.
 */
export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`${name} conformance`, () => {
    let store: Store
    beforeEach(async () => {
      store = await factory.create()
    })
    afterEach(async () => {
      await store.close?.()
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

      it('deletes any kind of key', async () => {
        await store.set('v', '1')
        await store.incrementFields('h', { a: 1 })
        await store.setTextFields('t', { a: 'x' })
        await store.addDistinct('d', ['a'])
        await store.incrementRanked('r', 'm', 1)
        for (const key of ['v', 'h', 't', 'd', 'r']) await store.delete(key)
        expect(await store.get('v')).toBeUndefined()
        expect(await store.readFields('h')).toEqual({})
        expect(await store.readTextFields('t')).toEqual({})
        expect(await store.countDistinct(['d'])).toBe(0)
        expect(await store.countRanked('r')).toBe(0)
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

    describe('text hashes', () => {
      it('writes and merges string fields', async () => {
        await store.setTextFields('t', { url: 'https://a.example/x', description: 'first' })
        await store.setTextFields('t', { description: 'second | with: odd chars ✓' })
        expect(await store.readTextFields('t')).toEqual({ url: 'https://a.example/x', description: 'second | with: odd chars ✓' })
      })

      it('expires after its ttl', async () => {
        await store.setTextFields('t', { a: 'x' }, { ttlMs: 50 })
        await factory.advance(120)
        expect(await store.readTextFields('t')).toEqual({})
      })
    })

    describe('distinct counts', () => {
      it('counts each member once, exactly for small sets', async () => {
        await store.addDistinct('d', ['a', 'b', 'c'])
        await store.addDistinct('d', ['a', 'b', 'd'])
        expect(await store.countDistinct(['d'])).toBe(4)
        expect(await store.countDistinct(['missing'])).toBe(0)
        expect(await store.countDistinct([])).toBe(0)
      })

      it('estimates large sets within 2% and counts unions without double counting', async () => {
        const members = Array.from({ length: 20_000 }, (_, i) => `0x${(i * 2654435761).toString(16).padStart(40, '0')}`)
        for (let i = 0; i < members.length; i += 1000) {
          await store.addDistinct('left', members.slice(i, i + 1000).filter((_, j) => (i + j) % 2 === 0))
          await store.addDistinct('right', members.slice(i, i + 1000).filter((_, j) => (i + j) % 3 !== 2))
        }
        const left = await store.countDistinct(['left'])
        const union = await store.countDistinct(['left', 'right'])
        expect(Math.abs(left - 10_000) / 10_000).toBeLessThan(0.02)
        // Union of "even" and "not 2 mod 3" is 4/6 + 1/6 = 5/6 of the members.
        const expected = Math.round((members.length * 5) / 6)
        expect(Math.abs(union - expected) / expected).toBeLessThan(0.02)
      })

      it('expires a sketch after its ttl', async () => {
        await store.addDistinct('d', ['a'], { ttlMs: 50 })
        await factory.advance(120)
        expect(await store.countDistinct(['d'])).toBe(0)
      })
    })

    describe('rankings', () => {
      it('ranks by score, highest first, ties by member name descending', async () => {
        await store.incrementRanked('r', 'b', 2)
        await store.incrementRanked('r', 'a', 5)
        await store.incrementRanked('r', 'c', 2)
        const { score } = await store.incrementRanked('r', 'b', 0.5)
        expect(score).toBe(2.5)
        await store.incrementRanked('r', 'd', 2)
        expect(await store.readRanked('r')).toEqual([
          { member: 'a', score: 5 },
          { member: 'b', score: 2.5 },
          { member: 'd', score: 2 },
          { member: 'c', score: 2 },
        ])
        expect(await store.readRanked('r', { offset: 1, limit: 2 })).toEqual([
          { member: 'b', score: 2.5 },
          { member: 'd', score: 2 },
        ])
        expect(await store.readRanked('r', { offset: 3, limit: 10 })).toEqual([{ member: 'c', score: 2 }])
        expect(await store.readRanked('r', { offset: 1, limit: 0 })).toEqual([])
        expect(await store.countRanked('r')).toBe(4)
      })

      it('evicts the lowest-scored members beyond the cap and says which', async () => {
        for (const [member, score] of [['a', 5], ['b', 4], ['c', 3]] as const) await store.incrementRanked('r', member, score, { cap: 3 })
        const grown = await store.incrementRanked('r', 'b', 10, { cap: 3 })
        expect(grown).toEqual({ score: 14, evicted: [] })
        // A newcomer with the lowest score is itself the one evicted.
        const newcomer = await store.incrementRanked('r', 'z', 1, { cap: 3 })
        expect(newcomer).toEqual({ score: 1, evicted: ['z'] })
        const replacing = await store.incrementRanked('r', 'd', 4, { cap: 2 })
        expect(replacing.evicted.sort()).toEqual(['c', 'd'])
        expect((await store.readRanked('r')).map((e) => e.member)).toEqual(['b', 'a'])
      })

      it('loses no increment under concurrency and stays within the cap', async () => {
        await Promise.all(Array.from({ length: 100 }, (_, i) => store.incrementRanked('r', `m${i % 10}`, 1, { cap: 8 })))
        expect(await store.countRanked('r')).toBe(8)
        const ranked = await store.readRanked('r')
        expect(ranked.every((e) => Number.isInteger(e.score) && e.score >= 1 && e.score <= 10)).toBe(true)
      })
    })

    describe('holds', () => {
      const hold = (amount: string, limit: string, since = 0, ttlMs = 60_000) => ({ amount, limit, since, ttlMs })
      // A balance read far in the future: holds closed before it do not count against it.
      const later = Number.MAX_SAFE_INTEGER

      it('places holds while they fit within the limit, exactly up to it', async () => {
        expect(await store.placeHold('b', 'p1', hold('600', '1000'))).toBe(true)
        expect(await store.placeHold('b', 'p2', hold('600', '1000'))).toBe(false)
        expect(await store.placeHold('b', 'p3', hold('400', '1000'))).toBe(true)
        expect(await store.placeHold('b', 'p4', hold('1', '1000'))).toBe(false)
        // Another balance is not affected.
        expect(await store.placeHold('c', 'p1', hold('1000', '1000'))).toBe(true)
      })

      it('replaces a hold of the same id instead of counting it twice', async () => {
        expect(await store.placeHold('b', 'p1', hold('600', '1000'))).toBe(true)
        expect(await store.placeHold('b', 'p1', hold('700', '1000'))).toBe(true)
        expect(await store.placeHold('b', 'p2', hold('300', '1000'))).toBe(true)
        expect(await store.placeHold('b', 'p3', hold('1', '1000'))).toBe(false)
      })

      it('frees a hold closed without keepMs', async () => {
        await store.placeHold('b', 'p1', hold('1000', '1000'))
        await store.closeHold('b', 'p1')
        await store.closeHold('b', 'absent')
        expect(await store.placeHold('b', 'p2', hold('1000', '1000'))).toBe(true)
      })

      it('counts a hold closed with keepMs against balances read before it closed, not after', async () => {
        await store.placeHold('b', 'p1', hold('800', '1000'))
        await store.closeHold('b', 'p1', { keepMs: 60_000 })
        // Read before the spend landed: the 800 is not in that balance yet.
        expect(await store.placeHold('b', 'p2', hold('800', '1000', 0))).toBe(false)
        // Read after: the balance (now 200, say) already reflects it.
        expect(await store.placeHold('b', 'p2', hold('200', '200', later))).toBe(true)
      })

      it('forgets an open hold after its ttl and a closed one after keepMs', async () => {
        await store.placeHold('b', 'open', hold('500', '1000', 0, 50))
        await store.placeHold('b', 'closed', hold('500', '1000', 0, 60_000))
        await store.closeHold('b', 'closed', { keepMs: 50 })
        expect(await store.placeHold('b', 'p', hold('1', '1000', 0))).toBe(false)
        await factory.advance(120)
        expect(await store.placeHold('b', 'p', hold('1000', '1000', 0))).toBe(true)
      })

      it('adds amounts of any size exactly', async () => {
        const limit = (2n ** 200n).toString()
        expect(await store.placeHold('b', 'p1', hold((2n ** 200n - 1n).toString(), limit))).toBe(true)
        expect(await store.placeHold('b', 'p2', hold('1', limit))).toBe(true)
        expect(await store.placeHold('b', 'p3', hold('1', limit))).toBe(false)
        expect(await store.placeHold('b', 'p3', hold('0', limit))).toBe(true)
      })

      it('lets exactly as many racing holds in as the limit covers', async () => {
        const placed = await Promise.all(Array.from({ length: 50 }, (_, i) => store.placeHold('b', `p${i}`, hold('100', '1000'))))
        expect(placed.filter(Boolean)).toHaveLength(10)
      })

      it('is removed by delete', async () => {
        await store.placeHold('b', 'p1', hold('1000', '1000'))
        await store.delete('b')
        expect(await store.placeHold('b', 'p2', hold('1000', '1000'))).toBe(true)
      })
    })
  })
}
