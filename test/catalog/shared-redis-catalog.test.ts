import { describe, expect, it } from 'vitest'
import { createCatalog } from '../../src/catalog/catalog.js'
import { catalogListingSchema, discoveryResponseSchema } from '../../src/catalog/catalog-schema.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import type { FacilitatorHooks } from '../../src/core/hooks.js'
import { useRedisStores } from '../support/redis-server.js'
import { createChainAdapter, createTestChain, paymentBody } from '../support/stats-test-adapter.js'
import { sharedCatalogCase } from '../stats/shared-stats-cases.js'

const EVM = 'eip155:84532'
const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'

const redis = useRedisStores()

describe('catalog shared through Redis', () => {
  // The catalog calls of two instances add up, and the cap holds across them (the case shared with PostgreSQL).
  sharedCatalogCase({ store: (space) => redis.store(`catalog-shared-${space}:`) })

  it('binds each URL to one payTo across instances: first payments racing to two payTo leave both instances listing the same one', async () => {
    const chain = createTestChain()
    // Each URL's first two settlements are recorded at one moment, one on each instance: the race
    // the binding's set-if-absent must settle.
    const arrived = new Map<string, () => void>()
    let pairUp = true
    const atOnce = (url: string) =>
      new Promise<void>((resolve) => {
        const first = arrived.get(url)
        if (!first) return void arrived.set(url, resolve)
        first()
        resolve()
      })
    const instances = [0, 1].map(() => {
      const store = redis.store('catalog-binding:')
      const catalog = createCatalog({ store, ttlSeconds: 0, minCallsForRate: 1 })
      const recorder: FacilitatorHooks = {
        async afterSettle(event) {
          if (pairUp) await atOnce(event.context?.resource?.url ?? '')
          await catalog.hooks.afterSettle?.(event)
        },
      }
      const facilitator = createFacilitator({ schemes: [createChainAdapter(chain, { network: EVM })], store, hooks: [recorder] })
      return { catalog, facilitator }
    })
    const urls = Array.from({ length: 12 }, (_, i) => `https://r${i}.example.com/item`)
    const payTo = ['0xowner', '0xrival'] as const
    let n = 0
    const settle = (instance: number, url: string, to: string) => {
      const from = `0xpayer${++n}`
      chain.fund(from, 10_000_000n)
      return instances[instance]!.facilitator.settle(paymentBody(chain, { network: EVM, from, to, value: 100_000n, asset: USDC, nonce: `b${n}`, resource: { url, description: `by ${to}` } }))
    }
    const drain = () => Promise.all(instances.map((i) => i.facilitator.drain()))
    // Each URL's first two payments, to two payTo, settle at once on the two instances.
    const first = await Promise.all(urls.flatMap((url) => [settle(0, url, payTo[0]), settle(1, url, payTo[1])]))
    expect(first.every((answer) => answer.success)).toBe(true)
    await drain()
    pairUp = false

    const bound = async (instance: number) => {
      const { items } = discoveryResponseSchema.parse(await instances[instance]!.catalog.discover({ limit: '100' }))
      return Object.fromEntries(items.map((item) => [item.resource, { payTo: item.accepts.map((accept) => accept.payTo), description: item.description, calls: item.metadata.calls }]))
    }
    const seen = await bound(0)
    expect(Object.keys(seen).sort()).toEqual([...urls].sort())
    for (const url of urls) expect(seen[url]).toEqual({ payTo: [expect.stringMatching(/^0x(owner|rival)$/)], description: `by ${seen[url]!.payTo[0]}`, calls: 1 })
    expect(await bound(1)).toEqual(seen)

    // Then each payTo pays again, on the other instance: only the bound one counts, wherever it is settled.
    await Promise.all(urls.flatMap((url) => [settle(1, url, payTo[0]), settle(0, url, payTo[1])]))
    await drain()
    const after = await bound(1)
    for (const url of urls) expect(after[url]).toEqual({ ...seen[url], calls: 2 })
    expect(await bound(0)).toEqual(after)
    const listing = catalogListingSchema.parse(await instances[0]!.catalog.list())
    expect(listing.resources.map((r) => r.trustScore.successRate)).toEqual(urls.map(() => 100))
  })
})
