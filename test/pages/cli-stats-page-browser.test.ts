/**
 * The statistics page as the x402-facilitator command serves it, in Chromium: at / of the
 * statistics host (STATS_PORT), opened before any payment and again after one. A token added
 * with ASSETS_<NETWORK> and its options (decimals, symbol, stablecoin) is written in token
 * units and dollars on the page and in /public/stats, never in base units; the catalog's
 * first listing is not kept empty.
 */
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { catalogListingSchema } from '../../src/catalog/catalog-schema.js'
import { publicStatsSchema } from '../../src/stats/stats-schema.js'
import { launchChromium, type LaunchedChromium } from '../support/chromium.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { killCliProcesses, startCli, type RunningCli } from '../cli/cli-process.js'

const TOKEN = 'shop:0123456789abcdef0123'
let world: EvmFixture
let browser: LaunchedChromium
let running: RunningCli

beforeAll(async () => {
  ;[world, browser] = await Promise.all([startEvmFixture(), launchChromium()])
  const key = generatePrivateKey()
  await world.node.testClient.setBalance({ address: privateKeyToAccount(key).address, value: 10n ** 20n })
  running = await startCli({
    PATH: process.env.PATH ?? '',
    NETWORKS: 'eip155:84532',
    RPC_URL_EIP155_84532: world.node.rpcUrl,
    EVM_PRIVATE_KEYS: key,
    ASSETS_EIP155_84532: `${world.token.address}:${world.token.name}:${world.token.version}:decimals=6:symbol=TT:stablecoin`,
    API_TOKENS: TOKEN,
    HOST: '127.0.0.1',
    PORT: '0',
    STATS_PORT: '0',
    STORE_URL: 'memory',
  })
}, 60_000)
afterAll(async () => {
  running?.child.kill('SIGKILL')
  killCliProcesses()
  await browser?.close()
  await world?.stop()
})

async function open(url: string) {
  const page = await browser.context.newPage()
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (request) => void requests.push(request.url()))
  page.on('console', (message) => void (['error', 'warning'].includes(message.type()) && problems.push(message.text())))
  page.on('pageerror', (error) => void problems.push(error.message))
  const response = await page.goto(url, { waitUntil: 'load' })
  return { page, requests, problems, status: response?.status() }
}

describe('the command serves the statistics page at / of its statistics host', () => {
  it('opened before a payment and after it: the catalog lists it at once, amounts in token units and dollars', async () => {
    const before = await open(`${running.statsUrl}/`)
    expect(before.status).toBe(200)
    expect(await before.page.textContent('#resources-heading + p')).toBe('No paid resource settled through this facilitator yet.')
    expect(before.requests).toEqual([`${running.statsUrl}/`])
    expect(before.problems).toEqual([])
    // The listing the page was built from (the same cached snapshot): empty, kept at most 5 s.
    const empty = catalogListingSchema.parse(await (await fetch(`${running.statsUrl}/public/resources`)).json())
    expect(empty).toMatchObject({ resources: [], ttlSeconds: 5 })

    // One payment of 2.56 TT for a resource.
    const payer = await world.newPayer(10_000_000n)
    const requirements = world.requirementsV2({ amount: '2560000' })
    const paymentPayload = { ...(await signExactEvmPayment({ signer: payer, requirements })), resource: { url: 'https://shop.example/reports/daily', description: 'The daily report', mimeType: 'application/json' } }
    const settled = await fetch(`${running.url}/settle`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN.slice(5)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: requirements }),
    })
    expect(await settled.json()).toMatchObject({ success: true })

    // The listing opened empty does not hide it: the person reloads, and it is there, well before the empty
    // listing (kept at most 5 s) would have expired; the catalog's own lifetime is 300 s.
    let rows: string[][] = []
    for (let attempt = 0; attempt < 20 && rows.length === 0; attempt++) {
      await before.page.reload({ waitUntil: 'load' })
      rows = await before.page.$$eval('#resources tbody tr', (trs) => trs.map((tr) => Array.from((tr as HTMLTableRowElement).cells).map((cell) => (cell.textContent ?? '').replace(/\s+/g, ' ').trim())))
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await before.page.close()
    // Built anew after the payment, while the empty one was still fresh: the payment dropped it.
    const listed = catalogListingSchema.parse(await (await fetch(`${running.statsUrl}/public/resources`)).json())
    expect(listed.resources).toHaveLength(1)
    expect(Date.parse(listed.cachedAt) - Date.parse(empty.cachedAt)).toBeLessThan(5_000)
    expect(listed.ttlSeconds).toBe(300)
    expect(rows).toHaveLength(1)
    const [resource, price, , , calls, value] = rows[0]!
    expect(resource).toContain('https://shop.example/reports/daily')
    expect(price).toBe('2.56 TT')
    expect(calls).toBe('1')
    expect(value).toBe('$2.56')

    // The statistics are cached for 15 s: once they are read again, the JSON and the page speak in TT and dollars.
    let stats = publicStatsSchema.parse(await (await fetch(`${running.statsUrl}/public/stats`)).json())
    for (let i = 0; i < 40 && stats.usage.allTime.settlements.total === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      stats = publicStatsSchema.parse(await (await fetch(`${running.statsUrl}/public/stats`)).json())
    }
    expect(stats.usage.allTime.volumeUsd).toBe(2.56)
    expect(stats.usage.allTime.volume).toEqual([expect.objectContaining({ asset: world.token.address, symbol: 'TT', decimals: 6, amount: '2.56', baseUnits: '2560000', usd: 2.56 })])

    const page = await open(`${running.statsUrl}/`)
    // A browser may keep the page it was given for its max-age (15 s): a reload asks again.
    await page.page.reload({ waitUntil: 'load' })
    expect(page.problems).toEqual([])
    const cards = await page.page.$$eval('.cards li', (items) => items.map((item) => (item as HTMLElement).innerText.replace(/\s+/g, ' ').trim()))
    expect(cards.find((card) => card.startsWith('Volume'))).toMatch(/^Volume \$2\.56 24 h: \$2\.56$/)
    const networkRows = await page.page.$$eval('section[aria-labelledby="networks-heading"] tbody tr', (trs) => trs.map((tr) => (tr.textContent ?? '').replace(/\s+/g, ' ').trim()))
    expect(networkRows.join(' ')).toContain('$2.56 (2.56 TT)')
    expect(await page.page.textContent('body')).not.toContain('base units')
    await page.page.close()
  })
})
