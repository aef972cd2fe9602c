/**
 * Two facilitator instances on one PostgreSQL database: a payment settled once
 * and counted once, statistics and the catalog adding up across them.
 */
import { describe, expect, it } from 'vitest'
import { usePostgresStores } from '../support/postgres-server.js'
import { paymentBody } from '../support/stats-test-adapter.js'
import { EVM, USDC, sharedStatsCases, twoInstances, type SharedStore } from './shared-stats-cases.js'

const postgres = usePostgresStores()
// Each instance also records the catalog: the store keeps its cap across them (the case below).
const shared: SharedStore = { store: (schema) => postgres.store(schema), catalog: true }

describe('two facilitators sharing one PostgreSQL database', () => {
  sharedStatsCases(shared)

  it('add up the catalog calls both record, and keep its cap across them', async () => {
    const { chain, a, b } = twoInstances(shared, 'catalog')
    const urls = ['https://a.example.com/x', 'https://b.example.com/y', 'https://c.example.com/z']
    const jobs: Promise<unknown>[] = []
    for (let i = 0; i < 30; i++) {
      const from = `0x${String(i + 1).padStart(40, '0')}`
      chain.fund(from, 10_000_000n)
      // Resource r gets 15, 10 and 5 calls, spread over both instances.
      const url = urls[i < 15 ? 0 : i < 25 ? 1 : 2]!
      jobs.push((i % 2 ? a : b).facilitator.settle(paymentBody(chain, { network: EVM, from, to: '0xshop', value: 100_000n, asset: USDC, nonce: `n${i}`, resource: { url } })))
    }
    await Promise.all(jobs)
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    for (let i = 0; i < 6; i++) {
      const from = `0xspam${i}`
      chain.fund(from, 10_000_000n)
      await (i % 2 ? a : b).facilitator.settle(paymentBody(chain, { network: EVM, from, to: '0xshop', value: 100_000n, asset: USDC, nonce: `s${i}`, resource: { url: `https://spam${i}.example.com/` } }))
    }
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    const [listA, listB] = await Promise.all([a.catalog!.list(), b.catalog!.list()])
    expect(listA.resources.map((r) => r.trustScore.calls)).toEqual([15, 10, 5, 1])
    expect(listA.resources.slice(0, 3).map((r) => r.trustScore.valueProcessed)).toEqual(['$1.50', '$1', '$0.50'])
    expect(listB.resources.map((r) => [r.url, r.trustScore.calls])).toEqual(listA.resources.map((r) => [r.url, r.trustScore.calls]))
  })
})
