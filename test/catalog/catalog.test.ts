import { describe, expect, it } from 'vitest'
import { createCatalog, type CatalogOptions } from '../../src/catalog/catalog.js'
import { catalogListingSchema, discoveryResponseSchema } from '../../src/catalog/catalog-schema.js'
import { catalogPayToKey } from '../../src/catalog/payto-binding.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createHandler } from '../../src/http/handler.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { createChainAdapter, createTestChain, paymentBody, paymentBodyV1, type PaymentOptions } from '../support/stats-test-adapter.js'

const EVM = 'eip155:84532'
const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const SOL_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'
const DAY = 86_400_000

function setup(options: Partial<CatalogOptions> = {}) {
  const clock = { now: Date.UTC(2026, 10, 2, 12) }
  const now = () => clock.now
  const store = createMemoryStore({ now })
  const chain = createTestChain()
  const catalog = createCatalog({ store, now, ttlSeconds: 60, ...options })
  const facilitator = createFacilitator({
    schemes: [createChainAdapter(chain, { network: EVM, v1Name: 'base-sepolia', confirmDelayMs: 5 }), createChainAdapter(chain, { network: SOLANA_DEVNET, v1Name: 'solana-devnet' })],
    store,
    hooks: [catalog.hooks],
  })
  let nonce = 0
  /** Settles one payment of `value` micro-USDC for a resource. */
  const pay = async (url: string | undefined, extra: Partial<PaymentOptions> = {}) => {
    const from = extra.from ?? `0x${String(++nonce).padStart(40, '0')}`
    chain.fund(from, 1_000_000_000n)
    const answer = await facilitator.settle(
      paymentBody(chain, { network: EVM, from, to: '0xshop', value: 1_000_000n, asset: USDC, nonce: `n${nonce}`, ...(url ? { resource: { url, description: `about ${url}` } } : {}), ...extra }),
    )
    await facilitator.drain()
    return answer
  }
  return { clock, store, chain, catalog, facilitator, pay }
}

describe('catalog listing', () => {
  it('lists resources by calls with their trust score, in the shape of SPEC.md', async () => {
    const { clock, catalog, pay } = setup({ minCallsForRate: 3 })
    for (let i = 0; i < 5; i++) await pay('https://api.weather.example.com/v1/forecast?city=' + i)
    for (let i = 0; i < 3; i++) await pay('https://data.example.org/prices', { value: 250_000_000n })
    clock.now += 3 * DAY
    await pay('https://news.example.net/headlines')
    const listing = catalogListingSchema.parse(await catalog.list())
    expect(listing.success).toBe(true)
    expect(listing.ttlSeconds).toBe(60)
    expect(listing.cachedAt).toBe(new Date(clock.now).toISOString())
    expect(listing.resources.map((r) => r.name)).toEqual(['example/forecast', 'example/prices', 'example/headlines'])
    const [forecast, prices, headlines] = listing.resources
    expect(forecast).toEqual({
      url: 'https://api.weather.example.com/v1/forecast',
      name: 'example/forecast',
      description: 'about https://api.weather.example.com/v1/forecast?city=4',
      paymentRequirements: { scheme: 'exact', network: 'base-sepolia', asset: USDC, amount: '0' },
      trustScore: { successRate: 100, sufficientData: true, calls: 5, valueProcessed: '$5', lastCalled: '3d ago' },
      jobsUrl: 'https://api.weather.example.com/v1/forecast',
      avatarUrl: null,
    })
    expect(prices!.trustScore).toMatchObject({ calls: 3, valueProcessed: '$750', successRate: 100 })
    // One call is not enough to rate: the listing says so instead of showing a number.
    expect(headlines!.trustScore).toEqual({ successRate: null, sufficientData: false, calls: 1, valueProcessed: '$1', lastCalled: '1m ago' })
  })

  it('lists a resource paid on several networks once, under the network it is paid on most; discovery accepts every one', async () => {
    const url = 'https://api.example.com/weather'
    // Its payTo differs per network, so the operator pins both (unpinned, the first one paid would be kept alone).
    const { catalog, clock, pay } = setup({ minCallsForRate: 1, ttlSeconds: 1, resources: [{ url, payTo: ['0xshop', 'SolShop'] }] })
    const onSolana = (n: number) => ({ network: SOLANA_DEVNET, asset: SOL_USDC, from: `SolPayer${n}`, to: 'SolShop', nonce: `sol${n}` })
    for (let i = 0; i < 3; i++) await pay(url)
    // The latest payment is on Solana, but most are on EVM: the listing keeps EVM with its own asset.
    expect(await pay(url, onSolana(1))).toMatchObject({ success: true })
    let listing = catalogListingSchema.parse(await catalog.list())
    expect(listing.resources).toHaveLength(1)
    expect(listing.resources[0]).toMatchObject({
      name: 'example/weather',
      paymentRequirements: { scheme: 'exact', network: 'base-sepolia', asset: USDC, amount: '0' },
      trustScore: { calls: 4, successRate: 100, valueProcessed: '$4' },
    })
    let discovery = discoveryResponseSchema.parse(await catalog.discover())
    expect(discovery.items).toHaveLength(1)
    expect(discovery.items[0]!.accepts.map((accept) => [accept.network, accept.asset])).toEqual([
      [EVM, USDC],
      [SOLANA_DEVNET, SOL_USDC],
    ])
    // Filtering discovery by either network finds the one resource.
    expect((await catalog.discover({ network: 'solana-devnet' })).items.map((item) => item.resource)).toEqual([url])
    expect((await catalog.discover({ network: 'base-sepolia' })).items.map((item) => item.resource)).toEqual([url])

    // A tie goes to the latest payment's network; then Solana leads.
    for (let i = 2; i <= 3; i++) await pay(url, onSolana(i))
    clock.now += 2_000
    listing = catalogListingSchema.parse(await catalog.list())
    expect(listing.resources[0]!.paymentRequirements).toEqual({ scheme: 'exact', network: 'solana-devnet', asset: SOL_USDC, amount: '0' })
    await pay(url)
    clock.now += 2_000
    listing = catalogListingSchema.parse(await catalog.list())
    expect(listing.resources[0]!.paymentRequirements).toMatchObject({ network: 'base-sepolia', asset: USDC })
    expect(listing.resources[0]!.trustScore.calls).toBe(7)
    discovery = discoveryResponseSchema.parse(await catalog.discover())
    expect(discovery.items).toHaveLength(1)
    expect(discovery.items[0]!.metadata.paymentsByNetwork).toEqual([
      { network: EVM, payments: 4 },
      { network: SOLANA_DEVNET, payments: 3 },
    ])
  })

  it('counts on-chain failures as calls, but not rejections or repeated settles', async () => {
    const { chain, facilitator, catalog, pay } = setup({ minCallsForRate: 1 })
    const url = 'https://api.example.com/report'
    await pay(url)
    // Two payments that each pass verification but together exceed the balance: one fails on chain.
    chain.fund('0xpoor', 1_500_000n)
    const body = (nonce: string) => paymentBody(chain, { network: EVM, from: '0xpoor', to: '0xshop', value: 1_000_000n, asset: USDC, nonce, resource: { url } })
    const [first, second] = await Promise.all([facilitator.settle(body('p1')), facilitator.settle(body('p2'))])
    expect([first.success, second.success].sort()).toEqual([false, true])
    expect((first.success ? second : first).transaction).not.toBe('')
    // A bad signature is rejected before anything is sent; a repeat is answered from the record.
    expect((await pay(url, { validSignature: false })).success).toBe(false)
    await facilitator.settle(body('p1'))
    await facilitator.drain()
    const [entry] = (await catalog.list()).resources
    expect(entry!.trustScore).toMatchObject({ calls: 3, successRate: 66.67, valueProcessed: '$2' })
  })

  it('never creates an entry from a failure or from a URL that is not plain http(s)', async () => {
    const { chain, facilitator, catalog, pay } = setup()
    await pay('javascript:alert(1)')
    await pay('https://user:secret@example.com/x')
    await pay(undefined)
    chain.fund('0xpoor', 1_500_000n)
    const body = (nonce: string) => paymentBody(chain, { network: EVM, from: '0xpoor', to: '0xshop', value: 1_000_000n, asset: USDC, nonce, resource: { url: `https://${nonce}.example.com/x` } })
    // Both pass verification; together they exceed the balance, so one fails on chain.
    const answers = await Promise.all([facilitator.settle(body('a')), facilitator.settle(body('b'))])
    await facilitator.drain()
    const winner = answers[0]!.success ? 'a' : 'b'
    expect(answers.filter((a) => !a.success && a.transaction !== '')).toHaveLength(1)
    const listing = await catalog.list()
    expect(listing.resources.map((r) => [r.url, r.trustScore.calls])).toEqual([[`https://${winner}.example.com/x`, 1]])
  })

  it('learns from v1 requirements and v2 bazaar extensions, and applies operator metadata', async () => {
    const { chain, facilitator, catalog, pay } = setup({
      resources: [
        { url: 'https://api.example.com/weather/', name: 'acme/weather', avatarUrl: 'https://cdn.example.com/acme.png', jobsUrl: 'https://jobs.example.com/acme-weather', description: 'Weather by Acme' },
        { url: 'https://api.example.com/soon', paymentRequirements: { scheme: 'exact', network: 'eip155:8453', asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' } },
      ],
      pageUrl: ({ name }) => `https://catalog.example.com/${name}`,
    })
    await pay('https://api.example.com/weather?q=1')
    chain.fund('0xv1', 10_000_000n)
    await facilitator.settle(paymentBodyV1(chain, { network: 'base-sepolia', from: '0xv1', to: '0xshop', value: 1_000_000n, asset: USDC, nonce: 'v1', resource: { url: 'https://legacy.example.com/v1/quote', description: 'A quote' } }))
    const bazaar = { info: { input: { type: 'http', method: 'GET', queryParams: { id: 'string' } }, output: { type: 'json' } }, routeTemplate: '/users/:id' }
    chain.fund('SolPayer', 10_000_000n)
    await facilitator.settle(
      paymentBody(chain, { network: SOLANA_DEVNET, from: 'SolPayer', to: 'SolShop', value: 1_000_000n, asset: SOL_USDC, nonce: 's', resource: { url: 'https://api.example.com/users/42', description: 'A user', serviceName: 'Acme Users' }, extensions: { bazaar } }),
    )
    await facilitator.drain()
    const byUrl = Object.fromEntries((await catalog.list()).resources.map((r) => [r.url, r]))
    expect(byUrl['https://api.example.com/weather']).toMatchObject({ name: 'acme/weather', description: 'Weather by Acme', avatarUrl: 'https://cdn.example.com/acme.png', jobsUrl: 'https://jobs.example.com/acme-weather' })
    expect(byUrl['https://legacy.example.com/v1/quote']).toMatchObject({ name: 'example/quote', description: 'A quote', jobsUrl: 'https://catalog.example.com/example/quote' })
    expect(byUrl['https://api.example.com/users/:id']).toMatchObject({ name: 'acme-users/users-id', paymentRequirements: { network: 'solana-devnet', asset: SOL_USDC, amount: '0' } })
    expect(byUrl['https://api.example.com/soon']).toMatchObject({ paymentRequirements: { network: 'base' }, trustScore: { calls: 0, lastCalled: 'never', successRate: null, valueProcessed: '$0' } })

    const discovery = discoveryResponseSchema.parse(await catalog.discover({ network: 'solana-devnet' }))
    expect(discovery.items).toHaveLength(1)
    expect(discovery.items[0]).toMatchObject({ resource: 'https://api.example.com/users/:id', type: 'http', x402Version: 2, serviceName: 'Acme Users', extensions: { bazaar } })
    expect(discovery.items[0]!.accepts[0]).toMatchObject({ scheme: 'exact', network: SOLANA_DEVNET, amount: '1000000', asset: SOL_USDC, payTo: 'SolShop' })
    const v1 = (await catalog.discover({ network: 'eip155:84532', scheme: 'exact' })).items.find((i) => i.resource.startsWith('https://legacy'))!
    expect(v1.x402Version).toBe(1)
    expect(v1.accepts[0]).toMatchObject({ maxAmountRequired: '1000000', resource: 'https://legacy.example.com/v1/quote' })
  })

  it('keeps a listing for ttlSeconds, then rebuilds it', async () => {
    const { clock, catalog, pay } = setup({ ttlSeconds: 120 })
    await pay('https://a.example.com/x')
    const first = await catalog.list()
    await pay('https://b.example.com/y')
    const again = await catalog.list()
    expect(again.cachedAt).toBe(first.cachedAt)
    expect(again.resources).toHaveLength(1)
    clock.now += 121_000
    const rebuilt = await catalog.list()
    expect(rebuilt.resources).toHaveLength(2)
    expect(Date.parse(rebuilt.cachedAt) - Date.parse(first.cachedAt)).toBe(121_000)
  })

  it('does not keep an empty first listing: opened before any payment, then a payment, the next read shows it', async () => {
    const { clock, catalog, facilitator, pay } = setup({ ttlSeconds: 300 })
    const handler = createHandler(facilitator, { routes: catalog.routes() })
    const before = await handler(new Request('http://f.test/public/resources'))
    const empty = catalogListingSchema.parse(await before.json())
    expect(empty.resources).toEqual([])
    // Neither kept here nor by HTTP caches for the catalog's 300 s.
    expect(empty.ttlSeconds).toBe(5)
    expect(before.headers.get('cache-control')).toMatch(/max-age=[0-5],/)
    clock.now += 1_000
    await pay('https://api.example.com/first')
    const after = await catalog.list()
    expect(after.resources.map((r) => r.url)).toEqual(['https://api.example.com/first'])
    expect(after.ttlSeconds).toBe(300)
    // Listed, it is kept for ttlSeconds as before.
    await pay('https://api.example.com/second')
    expect((await catalog.list()).resources).toHaveLength(1)
  })

  it('an empty listing read on another instance sharing the store shows a payment within 5 s', async () => {
    const { clock, store, pay } = setup({ ttlSeconds: 300 })
    const other = createCatalog({ store, now: () => clock.now, ttlSeconds: 300 })
    expect((await other.list()).resources).toEqual([])
    await pay('https://api.example.com/elsewhere')
    expect((await other.list()).resources).toEqual([])
    clock.now += 5_000
    expect((await other.list()).resources.map((r) => r.url)).toEqual(['https://api.example.com/elsewhere'])
  })

  it('stays within maxResources, evicting the least-called and their stored data', async () => {
    const { store, catalog, pay } = setup({ maxResources: 3, ttlSeconds: 0 })
    for (const [url, calls] of [['https://a.example.com/a', 4], ['https://b.example.com/b', 3], ['https://c.example.com/c', 2]] as const) {
      for (let i = 0; i < calls; i++) await pay(url)
    }
    const before = store.size()
    for (let i = 0; i < 20; i++) await pay(`https://spam${i}.example.com/x`)
    const listing = await catalog.list()
    expect(listing.resources.map((r) => r.url)).toEqual(['https://a.example.com/a', 'https://b.example.com/b', 'https://c.example.com/c'])
    // Evicted newcomers left nothing behind but their duplicate guards: not even their payTo binding.
    const after = store.size()
    expect(after.hashes).toBe(before.hashes)
    expect(after.texts).toBe(before.texts)
    for (let i = 0; i < 20; i++) expect(await store.get(catalogPayToKey(`https://spam${i}.example.com/x`))).toBeUndefined()
    expect(await store.get(catalogPayToKey('https://c.example.com/c'))).toBe('0xshop')
  })
})

describe('discovery form and HTTP routes', () => {
  async function fiveResources() {
    const context = setup({ ttlSeconds: 30 })
    for (let r = 0; r < 5; r++) for (let i = 0; i <= r; i++) await context.pay(`https://r${r}.example.com/item`)
    return context
  }

  it('paginates with limit and offset, ordered by calls', async () => {
    const { catalog } = await fiveResources()
    const page = discoveryResponseSchema.parse(await catalog.discover({ limit: '2', offset: '2' }))
    expect(page.pagination).toEqual({ limit: 2, offset: 2, total: 5 })
    expect(page.items.map((i) => i.resource)).toEqual(['https://r2.example.com/item', 'https://r1.example.com/item'])
    expect(page.items[0]!.metadata).toMatchObject({ calls: 3, name: 'example/item' })
    expect((await catalog.discover({ offset: '4' })).items).toHaveLength(1)
    expect((await catalog.discover({ type: 'mcp' })).pagination.total).toBe(0)
    expect((await catalog.discover({ payTo: '0xSHOP' })).pagination.total).toBe(5)
    await expect(catalog.discover({ limit: '0' })).rejects.toMatchObject({ code: 'invalid_request' })
  })

  it('serves GET /public/resources and GET /discovery/resources publicly, with cache headers', async () => {
    const { catalog, facilitator } = await fiveResources()
    const handler = createHandler(facilitator, { routes: catalog.routes(), authenticate: () => false })
    const listing = await handler(new Request('http://f.test/public/resources'))
    expect(listing.status).toBe(200)
    expect(listing.headers.get('cache-control')).toMatch(/^public, max-age=(30|29), stale-while-revalidate=\d+$/)
    expect(catalogListingSchema.parse(await listing.json()).resources).toHaveLength(5)
    const page = await handler(new Request('http://f.test/discovery/resources?type=http&limit=3&offset=0'))
    expect(page.status).toBe(200)
    expect(discoveryResponseSchema.parse(await page.json()).pagination).toEqual({ limit: 3, offset: 0, total: 5 })
    const bad = await handler(new Request('http://f.test/discovery/resources?limit=abc'))
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'invalid_request', error: expect.stringContaining('limit') })
  })

  it('builds one listing per answer even when nothing is cached (ttlSeconds 0): one ranking read per GET', async () => {
    const { store, catalog, facilitator, pay } = setup({ ttlSeconds: 0 })
    await pay('https://api.example.com/weather')
    let rankingReads = 0
    const readRanked = store.readRanked.bind(store)
    store.readRanked = (...args) => (rankingReads++, readRanked(...args))
    const handler = createHandler(facilitator, { routes: catalog.routes(), authenticate: () => false })
    for (const path of ['/public/resources', '/discovery/resources']) {
      const before = rankingReads
      const answer = await handler(new Request(`http://f.test${path}`))
      expect(answer.status).toBe(200)
      expect(answer.headers.get('cache-control')).toMatch(/^public, max-age=0, /)
      expect(rankingReads - before).toBe(1)
    }
  })
})
