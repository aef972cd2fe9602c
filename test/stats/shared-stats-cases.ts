/**
 * The cases every shared store must pass when two facilitator instances use it:
 * a payment settled once and counted once, and statistics adding up across
 * them. One body for Redis and PostgreSQL, so the two cannot drift apart.
 */
import { expect, it } from 'vitest'
import { createCatalog, type CatalogService } from '../../src/catalog/catalog.js'
import { catalogListingSchema } from '../../src/catalog/catalog-schema.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import { publicStatsSchema } from '../../src/stats/stats-schema.js'
import type { Store } from '../../src/stores/store.js'
import { createChainAdapter, createTestChain, paymentBody } from '../support/stats-test-adapter.js'

export const EVM = 'eip155:84532'
export const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const SOL_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'

/** The shared store under test. */
export interface SharedStore {
  /** A new connection to the shared store; instances given the same `space` share their data, another space starts empty (a key prefix, a schema). */
  store(space: string): Store
  /** Also give every instance a catalog service (its hooks recorded with the stats). */
  catalog?: boolean
}

/** Two facilitator "processes": each its own connection, stats (and catalog) service; one chain, one store. */
export function twoInstances(shared: SharedStore, space: string) {
  const chain = createTestChain()
  const make = () => {
    const store = shared.store(space)
    const stats = createPublicStats({ store, cacheSeconds: 0 })
    const catalog: CatalogService | undefined = shared.catalog ? createCatalog({ store, ttlSeconds: 0, maxResources: 4 }) : undefined
    const facilitator = createFacilitator({
      schemes: [createChainAdapter(chain, { network: EVM, confirmDelayMs: 5 }), createChainAdapter(chain, { network: SOLANA_DEVNET, confirmDelayMs: 5 })],
      store,
      hooks: catalog ? [stats.hooks, catalog.hooks] : [stats.hooks],
    })
    return { stats, catalog, facilitator }
  }
  return { chain, a: make(), b: make() }
}

/** Registers the shared cases in the calling `describe`. */
export function sharedStatsCases(shared: SharedStore): void {
  it('settle a payment once between them and count it once', async () => {
    const { chain, a, b } = twoInstances(shared, 'once')
    chain.fund('0x1111111111111111111111111111111111111111', 10_000_000n)
    const body = paymentBody(chain, { network: EVM, from: '0x1111111111111111111111111111111111111111', to: '0xbbbb', value: 1_000_000n, asset: USDC, nonce: 'race' })
    const answers = await Promise.all([a.facilitator.settle(body), b.facilitator.settle(body), a.facilitator.settle(body), b.facilitator.settle(body)])
    // Every caller learns the one settlement; it is counted once below.
    expect(answers.every((answer) => answer.success)).toBe(true)
    expect(new Set(answers.map((answer) => answer.transaction)).size).toBe(1)
    expect(chain.applied.size).toBe(1)
    expect(chain.balances.get('0xbbbb')).toBe(1_000_000n)
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    const stats = await b.stats.read()
    expect(stats.usage.allTime.settlements.succeeded).toBe(1)
    expect(stats.usage.allTime.volume[0]).toMatchObject({ amount: '1', settlements: 1 })
    // Every one of the four calls was timed, whichever instance answered it.
    const settle = stats.performance.find((w) => w.window === 'all')!.operations.find((o) => o.operation === 'settle')!
    expect(settle.count).toBe(4)
  })

  it('add their statistics up: usage, volume, payers, latency and Solana timing', async () => {
    const { chain, a, b } = twoInstances(shared, 'sum')
    const payers = Array.from({ length: 12 }, (_, i) => `0x${String(i + 1).padStart(40, '0')}`)
    for (const payer of payers) chain.fund(payer, 100_000_000n)
    chain.fund('SolPayer', 100_000_000n)
    const jobs: Promise<unknown>[] = []
    for (let i = 0; i < 24; i++) {
      const instance = i % 2 === 0 ? a : b
      const body = paymentBody(chain, { network: EVM, from: payers[i % 12]!, to: '0xbbbb', value: 2_000_000n, asset: USDC, nonce: `n${i}` })
      jobs.push(instance.facilitator.verify(body).then(() => instance.facilitator.settle(body)))
    }
    jobs.push(a.facilitator.settle(paymentBody(chain, { network: SOLANA_DEVNET, from: 'SolPayer', to: 'SolShop', value: 3_000_000n, asset: SOL_USDC, nonce: 's1' })))
    jobs.push(b.facilitator.settle(paymentBody(chain, { network: SOLANA_DEVNET, from: 'SolPayer', to: 'SolShop', value: 3_000_000n, asset: SOL_USDC, nonce: 's2' })))
    await Promise.all(jobs)
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])

    const [fromA, fromB] = await Promise.all([a.stats.read(), b.stats.read()])
    publicStatsSchema.parse(fromA)
    expect({ ...fromA, generatedAt: '' }).toEqual({ ...fromB, generatedAt: '' })
    const all = fromA.usage.allTime
    expect(all.verifications).toMatchObject({ total: 24, valid: 24 })
    expect(all.settlements).toMatchObject({ total: 26, succeeded: 26, successRate: 100 })
    expect(all.volumeUsd).toBe(54)
    expect(all.payers).toBe(13)
    expect(fromA.networks.find((n) => n.network === EVM)!.allTime.payers).toBe(12)
    const confirm = fromA.solanaConfirmation.find((w) => w.window === '1h')!.networks[0]!
    expect(confirm).toMatchObject({ network: SOLANA_DEVNET, count: 2 })
    expect(confirm.p50Ms).toBeGreaterThanOrEqual(4)
  })
}

/** Registers the shared catalog case in the calling `describe`: the calls both instances record add up, and the cap holds across them. */
export function sharedCatalogCase(shared: SharedStore): void {
  it('add up the catalog calls both record, and keep its cap across them', async () => {
    const { chain, a, b } = twoInstances({ ...shared, catalog: true }, 'catalog')
    const urls = ['https://a.example.com/x', 'https://b.example.com/y', 'https://c.example.com/z']
    const jobs: Promise<unknown>[] = []
    for (let i = 0; i < 30; i++) {
      const from = `0x${String(i + 1).padStart(40, '0')}`
      chain.fund(from, 10_000_000n)
      // Resource r gets 15, 10 and 5 calls, spread over both instances.
      const url = urls[i < 15 ? 0 : i < 25 ? 1 : 2]!
      jobs.push((i % 2 ? a : b).facilitator.settle(paymentBody(chain, { network: EVM, from, to: '0xshop', value: 100_000n, asset: USDC, nonce: `n${i}`, resource: { url } })))
    }
    expect(await Promise.all(jobs)).toHaveLength(30)
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    for (let i = 0; i < 6; i++) {
      const from = `0xspam${i}`
      chain.fund(from, 10_000_000n)
      await (i % 2 ? a : b).facilitator.settle(paymentBody(chain, { network: EVM, from, to: '0xshop', value: 100_000n, asset: USDC, nonce: `s${i}`, resource: { url: `https://spam${i}.example.com/` } }))
    }
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    const [listA, listB] = await Promise.all([a.catalog!.list(), b.catalog!.list()])
    catalogListingSchema.parse(listA)
    expect(listA.resources.map((r) => r.trustScore.calls)).toEqual([15, 10, 5, 1])
    expect(listA.resources.slice(0, 3).map((r) => r.trustScore.valueProcessed)).toEqual(['$1.50', '$1', '$0.50'])
    expect(listB.resources.map((r) => [r.url, r.trustScore.calls])).toEqual(listA.resources.map((r) => [r.url, r.trustScore.calls]))
  })
}
