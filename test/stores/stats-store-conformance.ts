import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { StatsStore } from '../../src/stores/store.js'
import { keyValueCases, type StoreFactory } from './key-value-cases.js'

/**
 * The behaviour every StatsStore must have: values, numeric and text hashes, distinct counts and
 * rankings. A statistics backend is done when this suite passes against it.
 */
export function statsStoreConformance(name: string, factory: StoreFactory<StatsStore>): void {
  describe(`${name} statistics role conformance`, () => {
    let store: StatsStore
    beforeEach(async () => {
      store = await factory.create()
    })
    afterEach(async () => {
      await store.close?.()
    })

    keyValueCases(() => store, factory)

    describe('delete', () => {
      it('deletes text hashes, sketches and rankings', async () => {
        await store.setTextFields('t', { a: 'x' })
        await store.addDistinct('d', ['a'])
        await store.incrementRanked('r', 'm', 1)
        for (const key of ['t', 'd', 'r']) await store.delete(key)
        expect(await store.readTextFields('t')).toEqual({})
        expect(await store.countDistinct(['d'])).toBe(0)
        expect(await store.countRanked('r')).toBe(0)
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
  })
}
