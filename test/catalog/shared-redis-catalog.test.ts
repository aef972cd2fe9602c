import { describe, expect, it } from 'vitest'
import { createCatalog } from '../../src/catalog/catalog.js'
import { catalogListingSchema } from '../../src/catalog/catalog-schema.js'
import { createFacilitator } from '../../src/core/facilitator.js'
import { useRedisStores } from '../support/redis-server.js'
import { createChainAdapter, createTestChain, paymentBody } from '../support/stats-test-adapter.js'

const EVM = 'eip155:84532'
const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'

const redis = useRedisStores()

describe('catalog shared through Redis', () => {
  it('adds up the calls two facilitators record, and keeps the cap across them', async () => {
    const chain = createTestChain()
    const instances = [0, 1].map(() => {
      const store = redis.store('catalog-shared:')
      const catalog = createCatalog({ store, ttlSeconds: 0, maxResources: 4 })
      const facilitator = createFacilitator({ schemes: [createChainAdapter(chain, { network: EVM })], store, hooks: [catalog.hooks] })
      return { catalog, facilitator }
    })
    const urls = ['https://a.example.com/x', 'https://b.example.com/y', 'https://c.example.com/z']
    const jobs: Promise<unknown>[] = []
    for (let i = 0; i < 30; i++) {
      const from = `0x${String(i + 1).padStart(40, '0')}`
      chain.fund(from, 10_000_000n)
      // Resource r gets 15, 10 and 5 calls, spread over both instances.
      const url = urls[i < 15 ? 0 : i < 25 ? 1 : 2]!
      jobs.push(instances[i % 2]!.facilitator.settle(paymentBody(chain, { network: EVM, from, to: '0xshop', value: 100_000n, asset: USDC, nonce: `n${i}`, resource: { url } })))
    }
    const answers = await Promise.all(jobs)
    expect(answers).toHaveLength(30)
    await Promise.all(instances.map((i) => i.facilitator.drain()))
    for (let i = 0; i < 6; i++) {
      const from = `0xspam${i}`
      chain.fund(from, 10_000_000n)
      await instances[i % 2]!.facilitator.settle(paymentBody(chain, { network: EVM, from, to: '0xshop', value: 100_000n, asset: USDC, nonce: `s${i}`, resource: { url: `https://spam${i}.example.com/` } }))
    }
    await Promise.all(instances.map((i) => i.facilitator.drain()))
    const [a, b] = await Promise.all(instances.map((i) => i.catalog.list()))
    catalogListingSchema.parse(a)
    expect(a!.resources.map((r) => r.trustScore.calls)).toEqual([15, 10, 5, 1])
    expect(a!.resources.slice(0, 3).map((r) => r.trustScore.valueProcessed)).toEqual(['$1.50', '$1', '$0.50'])
    expect(b!.resources.map((r) => [r.url, r.trustScore.calls])).toEqual(a!.resources.map((r) => [r.url, r.trustScore.calls]))
  })
})
