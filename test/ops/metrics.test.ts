import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { createHandler, createNodeServer } from '../../src/http/index.js'
import { exactEvm } from '../../src/evm/exact-evm.js'
import { signExactEvmPayment } from '../../src/evm/sign-payment.js'
import { createMetrics } from '../../src/ops/metrics.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

let world: EvmFixture
beforeAll(async () => {
  world = await startEvmFixture()
})
afterAll(async () => {
  await world?.stop()
})

/** Samples of a Prometheus text exposition: `name{labels}` → value. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    samples.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return samples
}

/** An operator's scrape: the route is private, so the handler has a hook that allows the scraper. */
const scraper = { authenticate: (request: Request) => request.headers.get('authorization') === 'Bearer scrape' }

async function scrape(handler: (r: Request) => Promise<Response>) {
  const server = createNodeServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`, { headers: { authorization: 'Bearer scrape' } })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/)
    return await answer.text()
  } finally {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe('metrics', () => {
  it('counts verifies and settles by network, scheme and outcome, served at /metrics in the Prometheus format', async () => {
    const metrics = createMetrics()
    const adapter = createLedgerAdapter({ network: 'eip155:31337' })
    adapter.balances.set('0xpayer', 100n)
    const facilitator = createFacilitator({ schemes: [adapter], hooks: [metrics.hooks] })
    const pay = (value: string, nonce: string) => ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value, nonce })
    await facilitator.verify(pay('5', 'a'))
    await facilitator.verify(pay('5', 'a'))
    await facilitator.verify(pay('500', 'b'))
    await facilitator.settle(pay('5', 'c'))
    await facilitator.settle(pay('5', 'c'))
    await facilitator.drain()
    const samples = parse(await scrape(createHandler(facilitator, { routes: [metrics.route()], ...scraper })))
    const labels = 'network="eip155:31337",scheme="exact"'
    expect(samples.get(`x402_verify_total{${labels},outcome="valid"}`)).toBe(2)
    expect(samples.get(`x402_verify_total{${labels},outcome="insufficient_funds"}`)).toBe(1)
    // The repeat is answered from the record with the same success: two answers of that outcome.
    expect(samples.get(`x402_settle_total{${labels},outcome="success"}`)).toBe(2)
    expect(samples.get(`x402_verify_duration_seconds_count{${labels}}`)).toBe(3)
    expect(samples.get('x402_settles_in_flight')).toBe(0)
    metrics.close()
  })

  it('counts RPC exchanges by host only: never the path, query or API key of the URL', async () => {
    const metrics = createMetrics()
    const keyed = `${world.node.rpcUrl}/?apikey=SECRET-API-KEY-123`
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ ...world.adapterConfig().networks[0]!, rpcUrls: [keyed] }] }))],
      hooks: [metrics.hooks],
    })
    const payer = await world.newPayer(1_000n)
    const requirements = world.requirementsV2({ amount: '10' })
    const payload = await signExactEvmPayment({ signer: payer, requirements })
    expect((await facilitator.verify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements })).isValid).toBe(true)
    const text = await scrape(createHandler(facilitator, { routes: [metrics.route()], ...scraper }))
    expect(text).not.toContain('SECRET-API-KEY')
    expect(text).not.toContain('apikey')
    const host = new URL(world.node.rpcUrl).host
    expect(parse(text).get(`x402_rpc_requests_total{host="${host}",outcome="ok"}`)).toBeGreaterThanOrEqual(1)
    metrics.close()
  })

  it('answers /metrics only to authenticated callers when authenticate is set', async () => {
    const metrics = createMetrics()
    const facilitator = createFacilitator({ schemes: [createLedgerAdapter()], hooks: [metrics.hooks] })
    const handler = createHandler(facilitator, { routes: [metrics.route()], authenticate: (request) => request.headers.get('authorization') === 'Bearer ops' })
    expect((await handler(new Request('http://x/metrics'))).status).toBe(401)
    expect((await handler(new Request('http://x/metrics', { headers: { authorization: 'Bearer ops' } }))).status).toBe(200)
    // Without a hook a private route is closed; public when asked.
    expect((await createHandler(facilitator, { routes: [metrics.route()] })(new Request('http://x/metrics'))).status).toBe(401)
    expect((await createHandler(facilitator, { routes: [metrics.route('/metrics', { public: true })] })(new Request('http://x/metrics'))).status).toBe(200)
    metrics.close()
  })
})
