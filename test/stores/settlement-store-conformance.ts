import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { SettlementStore } from '../../src/stores/store.js'
import { keyValueCases, type StoreFactory } from './key-value-cases.js'

/**
 * The behaviour every SettlementStore must have: values with ifAbsent claims and ttl, numeric
 * hashes, and holds on balances. A settlement backend is done when this suite passes against it.
 */
export function settlementStoreConformance(name: string, factory: StoreFactory<SettlementStore>): void {
  describe(`${name} settlement role conformance`, () => {
    let store: SettlementStore
    beforeEach(async () => {
      store = await factory.create()
    })
    afterEach(async () => {
      await store.close?.()
    })

    keyValueCases(() => store, factory)

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
