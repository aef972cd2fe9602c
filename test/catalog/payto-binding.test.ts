import { describe, expect, it } from 'vitest'
import { createCatalog, type CatalogOptions } from '../../src/catalog/catalog.js'
import { catalogListingSchema, discoveryResponseSchema } from '../../src/catalog/catalog-schema.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createHandler } from '../../src/http/handler.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { createChainAdapter, createTestChain, paymentBody, type PaymentOptions } from '../support/stats-test-adapter.js'

/**
 * Catalog poisoning (issue #21): anyone can settle a payment that names any
 * resource URL. These tests replay the attack through the real facilitator and
 * its HTTP routes: the victim's URL must keep showing the victim.
 */

const EVM = 'eip155:84532'
const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const SOL_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'
const URL_U = 'https://api.victim.example/weather'
// Mixed case on purpose: an EVM address is the same whatever its checksum casing.
const VICTIM = '0xAaAa00000000000000000000000000000000a11C'
const ATTACKER = '0xbBbB00000000000000000000000000000000e71b'
const VICTIM_ON_SOLANA = 'VictimSo1ana111111111111111111111111111111'

interface Pay extends Partial<PaymentOptions> {
  /** The chain refuses this payment once sent (it passed verify). */
  failOnChain?: boolean
  serviceName?: string
  description?: string
}

function setup(options: Partial<CatalogOptions> = {}) {
  const now = () => Date.UTC(2026, 10, 2, 12)
  const store = createMemoryStore({ now })
  const chain = createTestChain()
  let nonce = 0

  /** A catalog, a facilitator and its HTTP handler on the shared store and chain: one instance of the service. */
  function instance(catalogOptions: Partial<CatalogOptions>) {
    const catalog = createCatalog({ store, now, ttlSeconds: 0, minCallsForRate: 1, ...catalogOptions })
    const facilitator = createFacilitator({
      schemes: [createChainAdapter(chain, { network: EVM, v1Name: 'base-sepolia' }), createChainAdapter(chain, { network: SOLANA_DEVNET, v1Name: 'solana-devnet' })],
      store,
      hooks: [catalog.hooks],
    })
    const handler = createHandler(facilitator, { routes: catalog.routes(), authenticate: () => false })
    const body = (payTo: string, o: Pay) => {
      const n = ++nonce
      const from = o.from ?? `0x${String(n).padStart(40, '0')}`
      chain.fund(from, 1_000_000_000n)
      if (o.failOnChain) chain.reverts.add(from)
      const { description = 'Forecasts by the owner', serviceName, failOnChain: _, ...rest } = o
      return paymentBody(chain, {
        network: EVM,
        from,
        to: payTo,
        value: 1_000_000n,
        asset: USDC,
        nonce: `n${n}`,
        resource: { url: URL_U, description, ...(serviceName ? { serviceName } : {}) },
        ...rest,
      })
    }
    return {
      catalog,
      /** Settles one payment to `payTo` under URL_U (unless `o.resource` says otherwise). */
      async pay(payTo: string, o: Pay = {}) {
        const answer = await facilitator.settle(body(payTo, o))
        await facilitator.drain()
        return answer
      },
      async verify(payTo: string, o: Pay = {}) {
        const answer = await facilitator.verify(body(payTo, o))
        await facilitator.drain()
        return answer
      },
      /** What anyone reading the catalog over HTTP gets. */
      async listing() {
        const answer = await handler(new Request('http://f.test/public/resources'))
        return catalogListingSchema.parse(await answer.json())
      },
      async discovery(query = '') {
        const answer = await handler(new Request(`http://f.test/discovery/resources${query}`))
        return discoveryResponseSchema.parse(await answer.json())
      },
    }
  }
  return { store, chain, ...instance(options), restart: instance }
}

const attackerTraits = { description: 'Pay here instead', serviceName: 'Evil Corp', value: 5n }

describe('catalog binding of a resource URL to its payTo', () => {
  it('keeps a URL to the first payTo that settled to it: payments to another payTo, settled or failed, change nothing anyone reads', async () => {
    const { pay, listing, discovery } = setup()
    expect(await pay(VICTIM)).toMatchObject({ success: true })

    // The attack: the victim's URL, the attacker's payTo, its own description, name and price;
    // two payments settle, two fail on chain (the facilitator counts both kinds as calls).
    for (let i = 0; i < 2; i++) expect(await pay(ATTACKER, attackerTraits)).toMatchObject({ success: true })
    for (let i = 0; i < 2; i++) expect(await pay(ATTACKER, { ...attackerTraits, failOnChain: true })).toMatchObject({ success: false, transaction: expect.stringMatching(/./) })

    const listed = await listing()
    expect(listed.resources).toEqual([
      {
        url: URL_U,
        name: 'victim/weather',
        description: 'Forecasts by the owner',
        paymentRequirements: { scheme: 'exact', network: 'base-sepolia', asset: USDC, amount: '0' },
        trustScore: { successRate: 100, sufficientData: true, calls: 1, valueProcessed: '$1', lastCalled: '1m ago' },
        jobsUrl: URL_U,
        avatarUrl: null,
      },
    ])
    const found = await discovery()
    expect(found.items).toHaveLength(1)
    expect(found.items[0]!.accepts).toEqual([expect.objectContaining({ payTo: VICTIM, amount: '1000000' })])
    expect(found.items[0]!.metadata).toMatchObject({ calls: 1, successRate: 100, name: 'victim/weather' })
    expect(JSON.stringify([listed, found])).not.toMatch(/bbbb|evil|instead/i)
    expect((await discovery(`?payTo=${ATTACKER}`)).pagination.total).toBe(0)

    // The owner's own later payments still update the entry (its resource server may write the address in lower case).
    expect(await pay(VICTIM.toLowerCase(), { description: 'Forecasts, now hourly', value: 2_000_000n })).toMatchObject({ success: true })
    expect(await pay(VICTIM, { failOnChain: true, value: 2_000_000n })).toMatchObject({ success: false })
    const [updated] = (await listing()).resources
    expect(updated).toMatchObject({ description: 'Forecasts, now hourly', trustScore: { calls: 3, successRate: 66.67, valueProcessed: '$3' } })
    expect((await discovery()).items[0]!.accepts).toEqual([expect.objectContaining({ payTo: VICTIM.toLowerCase(), amount: '2000000' })])
  })

  it('binds nothing on a failed or a merely verified payment: the first payment that settles binds the URL', async () => {
    const { pay, verify, listing, discovery } = setup()
    expect(await verify(ATTACKER, attackerTraits)).toMatchObject({ isValid: true })
    expect(await pay(ATTACKER, { ...attackerTraits, failOnChain: true })).toMatchObject({ success: false, transaction: expect.stringMatching(/./) })
    expect((await listing()).resources).toEqual([])
    expect((await discovery()).pagination.total).toBe(0)

    await pay(VICTIM)
    await pay(ATTACKER, attackerTraits)
    const listed = await listing()
    expect(listed.resources.map((r) => [r.url, r.description, r.trustScore.calls, r.trustScore.successRate])).toEqual([[URL_U, 'Forecasts by the owner', 1, 100]])
    expect((await discovery()).items[0]!.accepts.map((accept) => accept.payTo)).toEqual([VICTIM])
  })

  it('without a pin, ignores the payTo of another network too: a resource paid on Base and Solana lists only the payTo it was bound to', async () => {
    const { pay, discovery } = setup()
    await pay(VICTIM)
    await pay(VICTIM_ON_SOLANA, { network: SOLANA_DEVNET, asset: SOL_USDC, from: 'SolPayer' })
    const [item] = (await discovery()).items
    expect(item!.accepts.map((accept) => accept.network)).toEqual([EVM])
    expect(item!.metadata).toMatchObject({ calls: 1, paymentsByNetwork: [{ network: EVM, payments: 1 }] })
  })

  it('lets an operator pin the payTo of a URL: the pin wins over the first settled payment, and may list one payTo per network', async () => {
    const { pay, listing, discovery } = setup({ resources: [{ url: `${URL_U}/`, payTo: [VICTIM.toLowerCase(), VICTIM_ON_SOLANA], description: 'Weather, pinned' }] })
    expect(await pay(ATTACKER, attackerTraits)).toMatchObject({ success: true })
    expect((await listing()).resources).toEqual([])

    await pay(VICTIM)
    await pay(VICTIM_ON_SOLANA, { network: SOLANA_DEVNET, asset: SOL_USDC, from: 'SolPayer' })
    await pay(ATTACKER, attackerTraits)
    const [entry] = (await listing()).resources
    expect(entry).toMatchObject({ url: URL_U, name: 'victim/weather', description: 'Weather, pinned', trustScore: { calls: 2, successRate: 100 } })
    expect((await discovery()).items[0]!.accepts.map((accept) => accept.payTo)).toEqual([VICTIM, VICTIM_ON_SOLANA])
  })

  it("lets a pin added after another payTo bound the URL take it over: that payTo's score and requirements are no longer listed", async () => {
    const { pay, listing, restart } = setup()
    const other = { resource: { url: 'https://other.example/news', description: 'News' } }
    for (let i = 0; i < 3; i++) await pay(ATTACKER, attackerTraits)
    for (let i = 0; i < 2; i++) await pay(VICTIM, other)
    expect((await listing()).resources.map((r) => [r.name, r.trustScore.calls])).toEqual([['evil-corp/weather', 3], ['other/news', 2]])

    // The operator notices and restarts with a pin; the store (a shared Redis, say) still holds the squatter's entry.
    const pinned = restart({ resources: [{ url: URL_U, payTo: VICTIM }] })
    expect((await pinned.listing()).resources.map((r) => r.url)).toEqual(['https://other.example/news'])
    expect((await pinned.discovery()).pagination.total).toBe(1)
    await pinned.pay(ATTACKER, attackerTraits)
    expect((await pinned.listing()).resources.map((r) => r.url)).toEqual(['https://other.example/news'])

    // The pinned payTo starts afresh, and ranks by its own calls.
    await pinned.pay(VICTIM)
    const listed = await pinned.listing()
    expect(listed.resources.map((r) => [r.name, r.description, r.trustScore.calls, r.trustScore.valueProcessed])).toEqual([
      ['other/news', 'News', 2, '$2'],
      ['victim/weather', 'Forecasts by the owner', 1, '$1'],
    ])
    const found = await pinned.discovery()
    expect(found.items.map((item) => [item.resource, item.accepts.map((accept) => accept.payTo)])).toEqual([
      ['https://other.example/news', [VICTIM]],
      [URL_U, [VICTIM]],
    ])
  })
})
