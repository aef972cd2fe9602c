import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { settlementStoreConformance } from './settlement-store-conformance.js'
import { statsStoreConformance } from './stats-store-conformance.js'
import type { Store } from '../../src/stores/store.js'
import type { StoreFactory } from './key-value-cases.js'

let clock = 0
const factory: StoreFactory<Store> = {
  create: async () => createMemoryStore({ now: () => clock }),
  advance: async (ms) => {
    clock += ms
  },
}
settlementStoreConformance('memory store', factory)
statsStoreConformance('memory store', factory)

describe('memory store', () => {
  it('drops expired keys of every kind, so memory follows live data', async () => {
    let now = 0
    const store = createMemoryStore({ now: () => now })
    for (let i = 0; i < 2000; i++) {
      await store.incrementFields(`h${i}`, { n: 1 }, { ttlMs: 1000 })
      await store.addDistinct(`d${i}`, ['x'], { ttlMs: 1000 })
      await store.setTextFields(`t${i}`, { a: 'b' }, { ttlMs: 1000 })
      await store.set(`v${i}`, 'x', { ttlMs: 1000 })
    }
    expect(store.size()).toEqual({ values: 2000, hashes: 2000, texts: 2000, sketches: 2000, rankings: 0, holds: 0 })
    now = 5000
    await store.set('fresh', 'x')
    expect(store.size()).toEqual({ values: 1, hashes: 0, texts: 0, sketches: 0, rankings: 0, holds: 0 })
  })
})

describe('memory store bound', () => {
  it('keeps at most maxKeys keys per kind, forgetting the oldest written first', async () => {
    const store = createMemoryStore({ maxKeys: 100 })
    for (let i = 0; i < 1_000; i++) {
      await store.set(`v${i}`, String(i))
      await store.incrementFields(`h${i}`, { n: 1 })
    }
    expect(store.size()).toMatchObject({ values: 100, hashes: 100 })
    expect(await store.get('v0')).toBeUndefined()
    expect(await store.get('v999')).toBe('999')
    // A rewrite makes a key young again.
    await store.set('v900', 'again')
    for (let i = 1_000; i < 1_099; i++) await store.set(`v${i}`, String(i))
    expect(await store.get('v900')).toBe('again')
    expect(await store.get('v901')).toBeUndefined()
  })
})
