/**
 * The statistics page in a real browser (Debian's Chromium, headless, driven by
 * playwright-core) after real payments: official x402 clients pay resource
 * servers built with @x402/express, which use our facilitator over HTTP, on
 * anvil (EIP-3009 token) and on LiteSVM (SPL token). One resource's description
 * is hostile markup. The page must show the numbers of /public/stats and the
 * listing of /public/resources, run no script, load nothing else, log no error,
 * and read well at 1280 and 390 px, light and dark. Screenshots are written to
 * test-results/pages/ (git-ignored) for a person to look at.
 */
import { mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { x402Client } from '@x402/core/client'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { paymentMiddleware } from '@x402/express'
import { wrapFetchWithPayment } from '@x402/fetch'
import { ExactSvmScheme as ExactSvmClientScheme } from '@x402/svm/exact/client'
import { ExactSvmScheme as ExactSvmServerScheme } from '@x402/svm/exact/server'
import express from 'express'
import type { Page } from 'playwright-core'
import type { LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { createCatalog } from '../../src/catalog/catalog.js'
import { catalogListingSchema, type CatalogListing } from '../../src/catalog/catalog-schema.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/index.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createNodeListener } from '../../src/http/node-listener.js'
import { createAssetTable } from '../../src/networks/assets.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { verifyResponseSchema } from '../../src/schemas/messages.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import { publicStatsSchema, type PublicStats, type UsageTotals } from '../../src/stats/stats-schema.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { exactSvm } from '../../src/svm/index.js'
import { launchChromium, type LaunchedChromium } from '../support/chromium.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, startSolanaTestRpc, type PaymentScenario } from '../support/svm-fixtures.js'

const EVM = 'eip155:84532'
const PRICE = 10_000n // 0.01 of a 6-decimal token
const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
const SCREENSHOTS = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'test-results/pages')
const LABELS: Record<string, string> = { [EVM]: 'base-sepolia', [SOLANA_DEVNET]: 'solana-devnet' }
const WINDOWS: Record<string, string> = { '1m': '1 min', '5m': '5 min', '1h': '1 hour', '24h': '24 hours', all: 'all time' }

let world: EvmFixture
let solana: LiteSvmRpc
let sol: PaymentScenario
let evmPayer: LocalAccount
let facilitatorServer: { url: string; close(): Promise<void> }
let statsHost: LoopbackServer
let shop: LoopbackServer
let browser: LaunchedChromium

beforeAll(async () => {
  ;[world, solana, browser] = await Promise.all([startEvmFixture(), startSolanaTestRpc(), launchChromium()])
  sol = await createPaymentScenario(solana.svm, { balance: 1_000_000n })
  evmPayer = await world.newPayer(1_000_000n)

  // The test tokens stand in for USDC: priced, so the statistics, the catalog and the page show dollars.
  const assets = createAssetTable([
    { network: EVM, address: world.token.address, symbol: 'USDC', decimals: 6, usdPrice: 1 },
    { network: SOLANA_DEVNET, address: sol.mint, symbol: 'USDC', decimals: 6, usdPrice: 1 },
  ])
  const store = createMemoryStore()
  // The paid API listens first: the operator pins its resources (paid on both networks) to their two payTo.
  const app = express()
  let paymentGate: express.RequestHandler | undefined
  app.use((req, res, next) => (paymentGate ? paymentGate(req, res, next) : next()))
  app.get('/weather', (_req, res) => void res.json({ weather: 'sunny' }))
  app.get('/notes', (_req, res) => void res.json({ notes: [] }))
  shop = await listen(app)
  // Cached as in production: the page and the JSON are read from the same cached bodies.
  const stats = createPublicStats({ store, assets, cacheSeconds: 60 })
  const catalog = createCatalog({
    store,
    assets,
    ttlSeconds: 300,
    resources: ['/weather', '/notes'].map((path) => ({ url: `${shop.url}${path}`, payTo: [world.payTo, sol.payTo] })),
  })
  const facilitator = createFacilitator({
    store,
    schemes: [exactEvm(world.adapterConfig()), exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: solana.url }], feePayers: [sol.feePayer], pollIntervalMs: 5 })],
    hooks: [stats.hooks, catalog.hooks],
  })
  // The page beside the payment routes (at /stats), and on a statistics host of its own (at /).
  facilitatorServer = await startNodeHttpServer(facilitator, { routes: [stats.route(), ...catalog.routes(), stats.page({ catalog, path: '/stats' })] })
  statsHost = await listen(createNodeListener(stats.handler({ routes: [...catalog.routes(), stats.page({ catalog, title: 'Local facilitator statistics' })] })))

  const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorServer.url }))
    .register(EVM, new ExactEvmServerScheme())
    .register(SOLANA_DEVNET, new ExactSvmServerScheme())
  const accepts = [
    { scheme: 'exact', network: EVM, payTo: world.payTo, price: { amount: PRICE.toString(), asset: world.token.address, extra: { name: world.token.name, version: world.token.version } } },
    { scheme: 'exact', network: SOLANA_DEVNET, payTo: sol.payTo, price: { amount: PRICE.toString(), asset: sol.mint } },
  ] as const
  paymentGate = paymentMiddleware(
      {
        'GET /weather': { accepts: [...accepts], description: 'Weather, paid per request', mimeType: 'application/json' },
        // The description travels in the 402 challenge and the payment: the resource server or the payer wrote it.
        'GET /notes': { accepts: [...accepts], description: HOSTILE, mimeType: 'application/json' },
      },
      resourceServer,
    )

  const evmClient = new x402Client().setSpendControls(false).register(EVM, new ExactEvmClientScheme(evmPayer))
  const solClient = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new ExactSvmClientScheme(sol.payer, { rpcUrl: solana.url }))
  const pay = async (client: x402Client, path: string) => {
    const response = await wrapFetchWithPayment(fetch, client)(`${shop.url}${path}`)
    expect(response.status, await response.clone().text()).toBe(200)
    // LiteSVM keeps its blockhash until told: the next identical transfer would be the same transaction.
    solana.svm.expireBlockhash()
  }
  for (let i = 0; i < 3; i++) await pay(evmClient, '/weather')
  await pay(solClient, '/weather')
  await pay(evmClient, '/notes')
  await pay(solClient, '/notes')
  // One payment that does not verify: signed by a payer who holds none of the token.
  const broke = await world.newPayer(0n)
  const requirements = world.requirementsV2({ amount: PRICE.toString() })
  const refused = await fetch(`${facilitatorServer.url}/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: broke, requirements }), paymentRequirements: requirements }),
  })
  expect(verifyResponseSchema.parse(await refused.json())).toMatchObject({ isValid: false, invalidReason: 'insufficient_funds' })
  // One request for a network nobody serves: refused before the payment checks, counted apart.
  const elsewhere = { ...requirements, network: 'eip155:999999' }
  const unserved = await fetch(`${facilitatorServer.url}/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: broke, requirements: elsewhere }), paymentRequirements: elsewhere }),
  })
  expect(verifyResponseSchema.parse(await unserved.json())).toMatchObject({ isValid: false, invalidReason: 'invalid_network' })
  await facilitator.drain()
  mkdirSync(SCREENSHOTS, { recursive: true })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await Promise.all([shop?.close(), statsHost?.close(), facilitatorServer?.close()])
  await Promise.all([world?.stop(), solana?.close()])
})

/** Opens a page, recording every request it makes and everything it logs. */
async function open(url: string, options: { width: number; colorScheme?: 'light' | 'dark' }) {
  const page = await browser.context.newPage()
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (request) => void requests.push(request.url()))
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => void problems.push(`pageerror: ${error.message}`))
  await page.setViewportSize({ width: options.width, height: 900 })
  await page.emulateMedia({ colorScheme: options.colorScheme ?? 'light' })
  const response = await page.goto(url, { waitUntil: 'load' })
  expect(response?.status()).toBe(200)
  return { page, requests, problems }
}

/** The text of each cell of each body row of a table. */
const rowsOf = (page: Page, table: string) =>
  page.$$eval(`${table} tbody tr`, (rows) => rows.map((row) => Array.from((row as HTMLTableRowElement).cells).map((cell) => (cell.textContent ?? '').trim())))

// The page writes numbers for people; read them back as numbers.
const num = (text: string) => Number(text.replace(/[$,%]|ms/g, '').trim())
const rate = (text: string) => (text === 'no data' ? null : num(text))
const leadingUsd = (text: string) => num(/^\$[\d,.]+/.exec(text)?.[0] ?? 'NaN')

async function readJson(): Promise<{ stats: PublicStats; listing: CatalogListing; cacheControl: string | null }> {
  const response = await fetch(`${statsHost.url}/public/stats`)
  const stats = publicStatsSchema.parse(await response.json())
  const listing = catalogListingSchema.parse(await (await fetch(`${statsHost.url}/public/resources`)).json())
  return { stats, listing, cacheControl: response.headers.get('cache-control') }
}

describe('statistics page in Chromium, after real payments on anvil and LiteSVM', () => {
  it('shows the numbers of /public/stats: totals, networks, the 30 days per network, response times, Solana timing', async () => {
    const { stats, cacheControl } = await readJson()
    // The payments above are what the JSON counts: 5 on EVM, 2 on Solana, 1 refused verification;
    // the request for a network nobody serves is counted apart.
    expect(stats.usage.allTime.settlements).toMatchObject({ total: 6, succeeded: 6 })
    expect(stats.usage.allTime.verifications).toMatchObject({ total: 7, invalid: 1 })
    expect(stats.usage.allTime.refused).toMatchObject({ total: 1, unsupportedKind: 1 })

    const pageResponse = await fetch(`${statsHost.url}/`)
    expect(pageResponse.headers.get('cache-control')).toBe(cacheControl)
    const { page, requests, problems } = await open(`${statsHost.url}/`, { width: 1280 })
    // The page is from the same cached body as the JSON read above.
    expect(await page.getAttribute('header time', 'datetime')).toBe(stats.generatedAt)

    const totals = Object.fromEntries((await rowsOf(page, '#totals')).map(([label, all, day]) => [label, [all!, day!]]))
    const expected: Record<string, (u: UsageTotals) => number | null> = {
      Verifications: (u) => u.verifications.total,
      Valid: (u) => u.verifications.valid,
      Invalid: (u) => u.verifications.invalid,
      'Verification errors': (u) => u.verifications.errors,
      'Verification success rate': (u) => u.verifications.successRate,
      Settlements: (u) => u.settlements.total,
      Succeeded: (u) => u.settlements.succeeded,
      Failed: (u) => u.settlements.failed,
      'Settlement errors': (u) => u.settlements.errors,
      'Pending (sent, not confirmed yet)': (u) => u.settlements.pending,
      'Settlement success rate': (u) => u.settlements.successRate,
      'Volume (USD)': (u) => u.volumeUsd,
      'Distinct payers': (u) => u.payers,
      'Refused before the payment checks': (u) => u.refused.total,
    }
    expect(Object.keys(totals)).toEqual(Object.keys(expected))
    for (const [label, value] of Object.entries(expected)) {
      const [all, day] = totals[label]!
      const read = label.endsWith('rate') ? rate : num
      expect([read(all), read(day)], label).toEqual([value(stats.usage.allTime), value(stats.usage.last24h)])
    }
    expect(await page.textContent('.cards li:first-child .value')).toBe(String(stats.usage.allTime.settlements.total))

    const networks = await page.$$eval('#networks tbody tr', (rows) => rows.map((row) => [row.querySelector('th')!.textContent!.trim(), ...Array.from(row.querySelectorAll('td')).map((td) => td.textContent!.trim())]))
    expect(networks.map(([label]) => label)).toEqual(stats.networks.map((n) => LABELS[n.network]))
    for (const [label, settlements, successRate, volume, payers, settlements24h, volume24h] of networks) {
      const n = stats.networks.find((entry) => LABELS[entry.network] === label)!
      expect([num(settlements!), rate(successRate!), leadingUsd(volume!), num(payers!), num(settlements24h!), leadingUsd(volume24h!)], label).toEqual([
        n.allTime.settlements.total,
        n.allTime.settlements.successRate,
        n.allTime.volumeUsd,
        n.allTime.payers,
        n.last24h.settlements.total,
        n.last24h.volumeUsd,
      ])
      expect(volume).toContain(`${n.allTime.volume[0]!.amount} USDC`)
    }

    // The tables behind the daily charts: one column per network, then the day's totals.
    const columns = await page.$$eval('#daily-settlements-table thead th', (cells) => cells.map((cell) => cell.textContent!.trim()))
    expect(columns).toEqual(['Date', 'base-sepolia', 'solana-devnet', 'All networks', 'Succeeded'])
    const settlementsTable = await rowsOf(page, '#daily-settlements-table')
    const volumeTable = await rowsOf(page, '#daily-volume-table')
    expect(settlementsTable.map(([date]) => date)).toEqual(stats.daily.map((d) => d.date))
    stats.daily.forEach((day, i) => {
      const of = (network: string) => day.networks.find((n) => n.network === network)
      expect(settlementsTable[i]!.slice(1).map(num), day.date).toEqual([of(EVM)?.settlements ?? 0, of(SOLANA_DEVNET)?.settlements ?? 0, day.settlements, day.successfulSettlements])
      expect(volumeTable[i]!.slice(1).map(num), day.date).toEqual([of(EVM)?.volumeUsd ?? 0, of(SOLANA_DEVNET)?.volumeUsd ?? 0, day.volumeUsd])
    })
    expect(stats.daily.at(-1)!.networks.map((n) => n.settlements)).toEqual([4, 2])

    const latency = (await rowsOf(page, '#latency-table')).map(([operation, network, window, ...numbers]) => [operation, network, window, ...numbers.map(num)])
    const latencyJson = stats.performance.flatMap((w) => w.operations.map((o) => [o.operation, LABELS[o.network], WINDOWS[w.window], o.count, o.p50Ms, o.p95Ms, o.p99Ms]))
    expect(latency.length).toBeGreaterThanOrEqual(10) // verify and settle on two networks, in the windows that saw them
    expect(sorted(latency)).toEqual(sorted(latencyJson))

    const confirmation = (await rowsOf(page, '#solana-confirmation-table')).map(([network, window, ...numbers]) => [network, window, ...numbers.map(num)])
    const confirmationJson = stats.solanaConfirmation.flatMap((w) => w.networks.map((n) => [LABELS[n.network], WINDOWS[w.window], n.count, n.p50Ms, n.p95Ms, n.p99Ms]))
    expect(confirmationJson.length).toBeGreaterThan(0)
    expect(sorted(confirmation)).toEqual(sorted(confirmationJson))

    // Every chart is inline SVG with a name for screen readers and a table of its numbers.
    const figures = await page.$$eval('figure', (all) => all.map((f) => ({ svg: f.querySelectorAll('svg[role="img"][aria-label]').length, table: f.querySelectorAll('table').length })))
    expect(figures).toEqual(Array.from({ length: 4 }, () => ({ svg: 1, table: 1 })))
    // Today's bar has one segment per network.
    expect(await page.locator('#daily-settlements svg rect').count()).toBe(2)

    // Only the page itself was loaded; the stylesheet applied (its CSP hash matched); nothing was logged.
    expect(requests).toEqual([`${statsHost.url}/`])
    expect(await page.$eval('.cards', (element) => getComputedStyle(element).display)).toBe('grid')
    expect(problems).toEqual([])
    await page.screenshot({ path: join(SCREENSHOTS, 'stats-page-1280.png'), fullPage: true })
    await page.close()
  })

  it('lists the catalog as /public/resources does, and shows a hostile description as text without running it', async () => {
    const { listing } = await readJson()
    const notes = listing.resources.find((r) => r.url.endsWith('/notes'))!
    // The hostile markup reached the catalog as the resource's description.
    expect(notes.description).toBe(HOSTILE)
    const { page, requests, problems } = await open(`${statsHost.url}/`, { width: 1280 })

    const resources = await page.$$eval('#resources tbody tr', (rows) =>
      rows.map((row) => {
        const cell = (label: string) => row.querySelector(`td[data-label="${label}"]`)!.textContent!.trim()
        return {
          name: row.querySelector('.resource-name')!.textContent!.trim(),
          href: row.querySelector('a.resource-url')?.getAttribute('href') ?? null,
          description: row.querySelector('.description')?.textContent ?? '',
          price: Array.from(row.querySelectorAll('td[data-label="Price"] bdi')).map((line) => line.textContent),
          network: cell('Network'),
          successRate: cell('Success rate'),
          calls: cell('Calls'),
          valueProcessed: cell('Value processed'),
          lastCalled: cell('Last called'),
        }
      }),
    )
    // In the listing's order (by calls), each with its trust score as the listing gives it.
    expect(resources).toEqual(
      listing.resources.map((r) => ({
        name: r.name,
        href: r.url,
        description: r.description,
        price: ['0.01 USDC on base-sepolia', '0.01 USDC on solana-devnet'],
        network: r.paymentRequirements.network,
        successRate: r.trustScore.sufficientData ? `${r.trustScore.successRate}%` : 'not enough data',
        calls: String(r.trustScore.calls),
        valueProcessed: r.trustScore.valueProcessed,
        lastCalled: r.trustScore.lastCalled,
      })),
    )
    expect(resources.map((r) => r.calls)).toEqual(['4', '2'])
    expect(resources[0]!.successRate).toBe('100%')
    expect(resources[1]!.successRate).toBe('not enough data')

    // The description is text on the page: no script ran, no image was made or loaded.
    expect(resources[1]!.description).toBe(HOSTILE)
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined()
    expect(await page.evaluate(() => document.querySelectorAll('script, img, iframe, object, embed').length)).toBe(0)
    expect(await page.evaluate(() => Array.from(document.querySelectorAll('*')).some((element) => Array.from(element.attributes).some((attribute) => attribute.name.startsWith('on'))))).toBe(false)
    expect(requests).toEqual([`${statsHost.url}/`])
    expect(problems).toEqual([])
    await page.close()
  })

  it('reads on a phone (390 px, no sideways scrolling, one card per resource) and in dark mode', async () => {
    const phone = await open(`${statsHost.url}/`, { width: 390 })
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    expect(await phone.page.$eval('#resources tbody tr', (row) => getComputedStyle(row).display)).toBe('block')
    expect(await phone.page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(255, 255, 255)')
    expect(phone.problems).toEqual([])
    await phone.page.screenshot({ path: join(SCREENSHOTS, 'stats-page-390.png'), fullPage: true })
    await phone.page.close()

    const dark = await open(`${statsHost.url}/`, { width: 1280, colorScheme: 'dark' })
    expect(await dark.page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(15, 18, 22)')
    expect(dark.problems).toEqual([])
    await dark.page.screenshot({ path: join(SCREENSHOTS, 'stats-page-1280-dark.png'), fullPage: true })
    await dark.page.close()
  })

  it('serves the same page beside the payment routes, linking the JSON there', async () => {
    const { stats } = await readJson()
    const { page, problems } = await open(`${facilitatorServer.url}/stats`, { width: 1280 })
    expect(await page.textContent('h1')).toBe('x402 facilitator statistics')
    expect(num((await rowsOf(page, '#totals')).find(([label]) => label === 'Settlements')![1]!)).toBe(stats.usage.allTime.settlements.total)
    const links = await page.$$eval('footer a', (anchors) => anchors.map((a) => (a as HTMLAnchorElement).href))
    expect(links).toEqual([`${facilitatorServer.url}/public/stats`, `${facilitatorServer.url}/public/resources`])
    // The links lead to the JSON the page was made from.
    expect(publicStatsSchema.parse(await (await fetch(links[0]!)).json()).usage.allTime.settlements.total).toBe(stats.usage.allTime.settlements.total)
    expect(problems).toEqual([])
    await page.close()
  })
})

const sorted = (rows: unknown[][]) => rows.map((row) => JSON.stringify(row)).sort()
