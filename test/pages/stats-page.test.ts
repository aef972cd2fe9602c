/**
 * The statistics page in memory: what it escapes and links, the headers it is
 * served with (CSP, the JSON's cache-control), where it can be mounted, how it
 * degrades, and that a cached page costs no rendering. The same page in a real
 * browser, after real payments on anvil and LiteSVM: stats-page-browser.test.ts.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createCatalog } from '../../src/catalog/catalog.js'
import type { CatalogListing } from '../../src/catalog/catalog-schema.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createHandler } from '../../src/http/handler.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { STATS_PAGE_CSS } from '../../src/stats/page/page-style.js'
import { statsPageRoute } from '../../src/stats/page/stats-page-route.js'
import { renderStatsPage } from '../../src/stats/page/stats-page.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { createChainAdapter, createTestChain, paymentBody } from '../support/stats-test-adapter.js'

const EVM = 'eip155:84532'
const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const SOL_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'
const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'

function setup(options: { cacheSeconds?: number; ttlSeconds?: number } = {}) {
  const clock = { now: Date.UTC(2026, 10, 2, 12) }
  const now = () => clock.now
  const store = createMemoryStore({ now })
  const chain = createTestChain()
  const stats = createPublicStats({ store, now, cacheSeconds: options.cacheSeconds ?? 15 })
  const catalog = createCatalog({ store, now, ttlSeconds: options.ttlSeconds ?? 60 })
  const facilitator = createFacilitator({
    schemes: [createChainAdapter(chain, { network: EVM, v1Name: 'base-sepolia', verifyDelayMs: 1 }), createChainAdapter(chain, { network: SOLANA_DEVNET, v1Name: 'solana-devnet', confirmDelayMs: 3 })],
    store,
    hooks: [stats.hooks, catalog.hooks],
  })
  let nonce = 0
  const pay = async (url: string, extra: { network?: string; description?: string; value?: bigint } = {}) => {
    const solana = extra.network === SOLANA_DEVNET
    const from = solana ? `SolPayer${++nonce}` : `0x${String(++nonce).padStart(40, '0')}`
    chain.fund(from, 10n ** 12n)
    const answer = await facilitator.settle(
      paymentBody(chain, {
        network: solana ? SOLANA_DEVNET : EVM,
        from,
        to: solana ? 'SolShop' : '0xshop',
        value: extra.value ?? 10_000n,
        asset: solana ? SOL_USDC : USDC,
        nonce: `n${nonce}`,
        resource: { url, description: extra.description ?? 'Weather, paid per request' },
      }),
    )
    await facilitator.drain()
    return answer
  }
  return { clock, store, stats, catalog, facilitator, pay }
}

const text = async (response: Response) => ({ status: response.status, headers: response.headers, body: await response.text() })

/** Every href the page writes. */
const hrefs = (page: string) => [...page.matchAll(/\shref="([^"]*)"/g)].map((m) => m[1]!)

describe('statistics page', () => {
  it('shows what payers and resource servers wrote as text, and links only to http(s) addresses', () => {
    const listing: CatalogListing = {
      success: true,
      cachedAt: '2026-11-02T12:00:00.000Z',
      ttlSeconds: 60,
      resources: [
        {
          url: 'javascript:window.__pwned=3',
          name: '<b>owner</b>/"slug"',
          description: HOSTILE,
          paymentRequirements: { scheme: 'exact', network: 'base', asset: '"><script>x</script>', amount: '0' },
          trustScore: { successRate: null, sufficientData: false, calls: 1, valueProcessed: '<i>$1</i>', lastCalled: '1m ago' },
          jobsUrl: 'data:text/html,<script>alert(1)</script>',
          avatarUrl: 'javascript:alert(1)',
        },
        {
          url: 'https://api.example.com/weather?q="><svg onload=alert(1)>',
          name: 'example/weather',
          description: '',
          paymentRequirements: { scheme: 'exact', network: 'base', asset: USDC, amount: '0' },
          trustScore: { successRate: 100, sufficientData: true, calls: 5, valueProcessed: '$5', lastCalled: '3d ago' },
          jobsUrl: 'https://catalog.example.com/example/weather',
          avatarUrl: null,
        },
      ],
    }
    const prices = new Map([['https://api.example.com/weather?q="><svg onload=alert(1)>', [{ scheme: 'exact', network: 'eip155:8453', asset: '"><b>', amount: '10000' }]]])
    const stats = { ...emptyStats(), networks: [] }
    const page = renderStatsPage({ stats, catalog: { listing, prices }, title: 'Acme <facilitator>' })

    // Nothing from the payload became markup: no script, image, extra tag, or tag with an event handler.
    expect(page).not.toMatch(/<script|<img|<svg onload|<i>|<b>/i)
    expect(page).not.toMatch(/<[a-z][^>]*\son[a-z]+\s*=/i)
    expect(page).toContain(`<bdi>${'&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;'}</bdi>`)
    expect(page).toContain('&lt;b&gt;owner&lt;/b&gt;/&quot;slug&quot;')
    expect(page).toContain('<title>Acme &lt;facilitator&gt;</title>')
    expect(page).toContain('10000 base units of &quot;&gt;&lt;b&gt;')
    // The javascript: and data: addresses show as text, never as links; the https one is a link, its quotes encoded.
    expect(page).toContain('<span class="resource-url"><bdi>javascript:window.__pwned=3</bdi></span>')
    expect(hrefs(page)).toEqual(['https://api.example.com/weather?q=%22%3E%3Csvg%20onload=alert(1)%3E', 'https://catalog.example.com/example/weather'])
    expect(page).toContain('not enough data')
  })

  it('charts the 30 days per network and latencies, each chart with a table of its numbers', async () => {
    const { stats, pay, facilitator } = setup()
    await pay('https://api.example.com/weather')
    await pay('https://api.example.com/weather', { network: SOLANA_DEVNET, value: 20_000n })
    await facilitator.drain()
    const page = renderStatsPage({ stats: await stats.read() })
    const figures = page.split('<figure').slice(1)
    expect(figures.length).toBe(4) // settlements per day, volume per day, response times, Solana confirmation
    for (const figure of figures) {
      expect(figure).toMatch(/<svg class="chart" viewBox="[^"]+" role="img" aria-label="[^"]+"/)
      expect(figure).toContain('<table')
      expect(figure).toContain('</figure>')
    }
    // Today's bars: one segment per network, with the network in its tooltip.
    expect(page).toContain('2026-11-02, base-sepolia: 1</title>')
    expect(page).toContain('2026-11-02, solana-devnet: 1</title>')
    expect(page).toContain('2026-11-02, solana-devnet: $0.02</title>')
    // No catalog given: no catalog section.
    expect(page).not.toContain('Paid resources')
  })

  it('shows requests refused before the payment checks apart from the success rates', async () => {
    const { stats, pay, facilitator } = setup({ cacheSeconds: 0 })
    await pay('https://api.example.com/weather')
    // Junk: a network nobody serves (twice, one a settle), a version nobody speaks, a malformed body.
    const junk = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: { scheme: 'exact', network: 'eip155:666', amount: '1', asset: USDC, payTo: '0xshop', maxTimeoutSeconds: 60 }, payload: {} }, paymentRequirements: { scheme: 'exact', network: 'eip155:666', amount: '1', asset: USDC, payTo: '0xshop', maxTimeoutSeconds: 60 } }
    expect(await facilitator.verify(junk)).toMatchObject({ invalidReason: 'invalid_network' })
    expect(await facilitator.settle(junk)).toMatchObject({ errorReason: 'invalid_network' })
    expect(await facilitator.verify({ ...junk, x402Version: 7, paymentPayload: { ...junk.paymentPayload, x402Version: 7 } })).toMatchObject({ invalidReason: 'invalid_x402_version' })
    await expect(facilitator.verify({ x402Version: 2 })).rejects.toMatchObject({ code: 'invalid_request' })
    await facilitator.drain()
    const page = renderStatsPage({ stats: await stats.read() })
    expect(page).toContain('<tr><th scope="row">Settlement success rate</th><td class="num">100%</td><td class="num">100%</td></tr>')
    expect(page).toContain('<tr><th scope="row">Refused before the payment checks</th><td class="num">4</td><td class="num">4</td></tr>')
    expect(page).toContain('Refused before the payment checks, all time: 4 requests (2 for a network or scheme this facilitator does not serve; 1 for an unsupported x402 version; 1 malformed).')
    // A network nobody serves is no row of the networks table.
    expect(page).not.toContain('eip155:666')
    expect(renderStatsPage({ stats: emptyStats() })).not.toContain('id="refused"')
  })

  it('says "no data" rather than drawing empty charts or 0% when nothing happened', async () => {
    const { stats } = setup()
    const page = renderStatsPage({ stats: await stats.read() })
    expect(page).toContain('No settlements in the last 30 days')
    expect(page).toContain('No verify or settle answered yet.')
    expect(page).toContain('No Solana settlement confirmed yet.')
    // Success rates without anything to rate read "no data", never 0% (the stylesheet's 100% aside).
    expect(page.replace(/<style>[^<]*<\/style>/, '')).not.toContain('0%')
    expect(page).toContain('<th scope="row">Settlement success rate</th><td class="num">no data</td>')
  })
})

describe('statistics page over HTTP', () => {
  it('is served at / of the statistics host with a strict CSP and the cache-control of /public/stats', async () => {
    const { clock, stats, catalog, pay } = setup({ cacheSeconds: 15, ttlSeconds: 60 })
    await pay('https://api.example.com/weather', { description: HOSTILE })
    const host = stats.handler({ routes: [...catalog.routes(), stats.page({ catalog, now: () => clock.now })] })
    const page = await text(await host(new Request('http://stats.test/')))
    const json = await host(new Request('http://stats.test/public/stats'))

    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('cache-control')).toBe(json.headers.get('cache-control'))
    expect(page.headers.get('cache-control')).toBe('public, max-age=15, stale-while-revalidate=60')
    const hash = createHash('sha256').update(STATS_PAGE_CSS).digest('base64')
    expect(page.headers.get('content-security-policy')).toBe(`default-src 'none'; style-src 'sha256-${hash}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`)
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
    // The stylesheet the hash allows is the one in the page, byte for byte.
    expect(page.body).toContain(`<style>${STATS_PAGE_CSS}</style>`)
    expect(page.body).toContain('<a href="/public/stats">statistics (JSON)</a>')
    expect(page.body).toContain('<a href="/public/resources">paid resources (JSON)</a>')
    expect(page.body).toContain('example/weather')

    const head = await text(await host(new Request('http://stats.test/', { method: 'HEAD' })))
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    expect((await host(new Request('http://stats.test/', { method: 'POST' }))).status).toBe(405)
  })

  it('mounts on the payment handler under a base path, public while the payment routes ask for credentials', async () => {
    const { stats, catalog, facilitator, pay } = setup()
    await pay('https://api.example.com/weather')
    const handler = createHandler(facilitator, {
      basePath: '/x402',
      authenticate: () => false,
      routes: [stats.route(), ...catalog.routes(), stats.page({ catalog, path: '/stats', title: 'Acme payments' })],
    })
    for (const url of ['http://pay.test/x402/stats', 'http://pay.test/x402/stats/']) {
      const page = await text(await handler(new Request(url)))
      expect(page.status, url).toBe(200)
      expect(page.body).toContain('<h1>Acme payments</h1>')
      // Links follow the mount point.
      expect(hrefs(page.body).filter((href) => href.startsWith('/'))).toEqual(['/x402/public/stats', '/x402/public/resources'])
    }
    expect((await handler(new Request('http://pay.test/x402/supported'))).status).toBe(401)
  })

  it('lives no longer than the catalog listing it shows', async () => {
    const { clock, stats, catalog, pay } = setup({ cacheSeconds: 15, ttlSeconds: 60 })
    await pay('https://api.example.com/weather')
    const route = statsPageRoute({ stats, catalog, now: () => clock.now })
    await route.handle(new Request('http://stats.test/'))
    // 50 s later the listing has 10 s left, fewer than the statistics' 15.
    clock.now += 50_000
    const page = await route.handle(new Request('http://stats.test/'))
    expect(page.headers.get('cache-control')).toBe('public, max-age=10, stale-while-revalidate=40')
  })

  it('answers 503 without caching when the statistics cannot be read, and shows the rest when the catalog cannot', async () => {
    const { stats, catalog } = setup()
    const downStats = { cacheSeconds: 15, read: () => Promise.reject(new Error('redis: connection refused')) }
    const down = await text(await statsPageRoute({ stats: downStats, catalog }).handle(new Request('http://stats.test/')))
    expect(down.status).toBe(503)
    expect(down.headers.get('cache-control')).toBe('no-store')
    expect(down.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(down.body).toContain('The statistics are unavailable right now')
    expect(down.body).not.toContain('connection refused')

    const downCatalog = { list: () => Promise.reject(new Error('redis: connection refused')), routes: catalog.routes }
    const partial = await text(await statsPageRoute({ stats, catalog: downCatalog }).handle(new Request('http://stats.test/')))
    expect(partial.status).toBe(200)
    expect(partial.headers.get('cache-control')).toBe('no-store')
    expect(partial.body).toContain('The catalog is unavailable right now')
    expect(partial.body).toContain('id="totals"')
  })

  it('renders once per cached body: a request for a cached page costs a comparison, not a rendering', async () => {
    const { clock, stats, catalog, pay } = setup({ cacheSeconds: 30, ttlSeconds: 300 })
    for (let i = 0; i < 150; i++) await pay(`https://api${i}.example.com/v1/forecast`, { network: i % 3 === 0 ? SOLANA_DEVNET : EVM })
    const route = statsPageRoute({ stats, catalog, now: () => clock.now })
    const request = () => new Request('http://stats.test/')

    let started = performance.now()
    const first = await (await route.handle(request())).text()
    const firstMs = performance.now() - started
    const cachedMs: number[] = []
    for (let i = 0; i < 20; i++) {
      started = performance.now()
      expect(await (await route.handle(request())).text()).toBe(first)
      cachedMs.push(performance.now() - started)
    }
    const median = cachedMs.sort((a, b) => a - b)[10]!
    console.info(`[measure] stats page, 150 resources (100 shown): first request ${firstMs.toFixed(1)} ms (reads, prices, rendering), cached ${median.toFixed(2)} ms median; ${(first.length / 1024).toFixed(0)} KiB`)
    expect(median).toBeLessThan(firstMs / 3)
    expect(first).toContain('The 100 most called of 150 resources')
    expect(first.match(/<td role="cell" class="resource">/g)).toHaveLength(100)

    // Once the statistics' cache runs out, the page shows the new numbers.
    await pay('https://api0.example.com/v1/forecast')
    expect(await (await route.handle(request())).text()).toBe(first)
    clock.now += 31_000
    const fresh = await (await route.handle(request())).text()
    expect(fresh).not.toBe(first)
    expect(fresh).toMatch(/<th scope="row">Settlements<\/th><td class="num">151<\/td>/)
  })
})

function emptyStats() {
  return {
    schemaVersion: 1 as const,
    generatedAt: '2026-11-02T12:00:00.000Z',
    usage: { allTime: emptyUsage(), last24h: emptyUsage() },
    networks: [],
    daily: [],
    performance: [],
    solanaConfirmation: [],
  }
}

function emptyUsage() {
  return {
    verifications: { total: 0, valid: 0, invalid: 0, errors: 0, successRate: null },
    settlements: { total: 0, succeeded: 0, failed: 0, errors: 0, pending: 0, successRate: null },
    volume: [],
    volumeUsd: 0,
    payers: 0,
    refused: { total: 0, verifications: 0, settlements: 0, unsupportedKind: 0, unsupportedVersion: 0, mismatch: 0, malformed: 0 },
  }
}
