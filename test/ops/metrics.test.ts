import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { createHandler, createNodeServer } from '../../src/http/index.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { costOutcome, KNOWN_OUTCOMES, metricLabels } from '../../src/ops/metric-labels.js'
import { createMetrics } from '../../src/ops/metrics.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { junkRequest, JUNK_KINDS, randomSource, type Body } from '../support/junk-requests.js'
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

  it('labels only what the facilitator serves: 10,000 requests naming random networks, schemes and versions add no series', async () => {
    const metrics = createMetrics()
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())], hooks: [metrics.hooks] })
    const handler = createHandler(facilitator, { routes: [metrics.route('/metrics', { public: true })] })
    const post = (path: string, body: unknown) => handler(new Request(`http://x${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    const scrapeText = async () => (await handler(new Request('http://x/metrics'))).text()

    // Real payments of the served kind, by its CAIP-2 id (v2) and its v1 name: one label value.
    const payer = await world.newPayer(1_000n)
    const requirements = world.requirementsV2({ amount: '10' })
    const requirementsV1 = world.requirementsV1({ maxAmountRequired: '10' })
    const served = {
      v2: { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements } as Body,
      v1: { x402Version: 1, paymentPayload: await signExactEvmPayment({ signer: payer, requirements: requirementsV1 }), paymentRequirements: requirementsV1 } as Body,
    }
    expect(await (await post('/verify', served.v2)).json()).toMatchObject({ isValid: true })
    expect(await (await post('/verify', served.v1)).json()).toMatchObject({ isValid: true })

    const random = randomSource(30_4)
    const sent = new Map<string, number>()
    const send = async (i: number) => {
      const junk = junkRequest(i % JUNK_KINDS, random, served)
      const operation = random() < 0.5 ? 'verify' : 'settle'
      const answer = await post(`/${operation}`, junk.body)
      const body = (await answer.json()) as { invalidReason?: string; errorReason?: string; code?: string }
      expect(body.invalidReason ?? body.errorReason ?? body.code, JSON.stringify(junk.body).slice(0, 200)).toBe(junk.code)
      const key = `${operation}|${junk.code === 'invalid_payload' ? 'eip155:84532' : 'unsupported'}|${junk.code}`
      sent.set(key, (sent.get(key) ?? 0) + 1)
    }
    for (let i = 0; i < 400; i++) await send(i)
    await facilitator.drain()
    const early = await scrapeText()
    for (let i = 400; i < 10_000; i++) await send(i)
    await facilitator.drain()
    const late = await scrapeText()

    // The same series after 400 junk requests as after 10,000: only their counts moved.
    const series = (text: string) => [...parse(text).keys()].sort()
    expect(series(late)).toEqual(series(early))
    const lines = series(late).length
    console.log(`[measure] /metrics after 400 junk requests: ${series(early).length} series, ${early.length} bytes; after 10,000: ${lines} series, ${late.length} bytes`)
    expect(late.length - early.length).toBeLessThanOrEqual(lines * 20)
    expect(late.length).toBeLessThan(64 * 1024)
    expect(Math.max(...late.split('\n').map((line) => line.length))).toBeLessThan(300)

    // Every label value is a served one, a known code, or the two fixed catch-alls.
    const payments = late.split('\n').filter((line) => /^x402_(verify|settle)_/.test(line)).join('\n')
    const values = (name: string) => new Set([...payments.matchAll(new RegExp(`${name}="([^"]*)"`, 'g'))].map((m) => m[1]!))
    expect([...values('network')].sort()).toEqual(['eip155:84532', 'unsupported'])
    expect([...values('scheme')].sort()).toEqual(['exact', 'unsupported'])
    for (const outcome of values('outcome')) expect(KNOWN_OUTCOMES.has(outcome) || outcome === 'other', outcome).toBe(true)

    // Every junk request is counted, by why it was refused.
    const samples = parse(late)
    for (const [key, count] of sent) {
      const [operation, network, code] = key.split('|')
      const scheme = network === 'unsupported' ? 'unsupported' : 'exact'
      expect(samples.get(`x402_${operation}_total{network="${network}",scheme="${scheme}",outcome="${code}"}`), key).toBe(count + (key === 'verify|eip155:84532|valid' ? 2 : 0))
    }
    expect(samples.get('x402_verify_total{network="eip155:84532",scheme="exact",outcome="valid"}')).toBe(2)
    expect([...sent.values()].reduce((a, b) => a + b, 0)).toBe(10_000)
    metrics.close()
  }, 120_000)

  it('counts a reason code it does not know as "other", unless the operator names it', () => {
    const context = { network: 'eip155:8453', scheme: 'exact' } as never
    const event = (invalidReason: string) => ({ operation: 'verify' as const, request: {} as never, context, durationMs: 1, result: { isValid: false, invalidReason } })
    expect(metricLabels(event('invalid_exact_evm_payload_signature'))).toEqual({ network: 'eip155:8453', scheme: 'exact', outcome: 'invalid_exact_evm_payload_signature' })
    expect(metricLabels(event('velocity_limit'))).toEqual({ network: 'eip155:8453', scheme: 'exact', outcome: 'other' })
    expect(metricLabels(event('velocity_limit'), new Set([...KNOWN_OUTCOMES, 'velocity_limit'])).outcome).toBe('velocity_limit')
    // A request no adapter served keeps none of the names it wrote.
    const unrouted = { operation: 'settle' as const, request: { paymentRequirements: { network: 'eip155:8453', scheme: 'exact' } } as never, context: undefined, durationMs: 1, result: { success: false, errorReason: 'invalid_network', transaction: '', network: 'x' } }
    expect(metricLabels(unrouted)).toEqual({ network: 'unsupported', scheme: 'unsupported', outcome: 'invalid_network' })
    expect(metricLabels({ operation: 'verify', reason: 'invalid_request' })).toEqual({ network: 'unsupported', scheme: 'unsupported', outcome: 'invalid_request' })
  })

  it('counts what settlements cost by network and landed / reverted / failed, never a label from the request', async () => {
    const metrics = createMetrics()
    const settle = (result: object, cost?: bigint, extra: object = {}) =>
      metrics.hooks.afterSettle!({
        operation: 'settle',
        request: { paymentRequirements: { network: 'made-up-by-client', scheme: 'exact' } } as never,
        context: { network: 'eip155:8453', scheme: 'exact', ...(cost === undefined ? {} : { cost }) } as never,
        durationMs: 1,
        result: { transaction: '0xabc', network: 'made-up-by-client', ...result } as never,
        ...extra,
      })
    await settle({ success: true }, 21_000n)
    await settle({ success: true }, 9_000n)
    await settle({ success: false, errorReason: 'transaction_failed' }, 50_000n)
    await settle({ success: false, errorReason: 'invalid_exact_evm_payload_undeployed_smart_wallet' }, 7n)
    await settle({ success: false, errorReason: 'rpc_error' }, 3n, { fault: { code: 'rpc_error' } })
    // Nothing sent (or still pending), or nothing paid: no sample.
    await settle({ success: false, errorReason: 'insufficient_funds' })
    await settle({ success: false, errorReason: 'settlement_pending' })
    await settle({ success: true }, 0n)
    const values = (await metrics.registry.getSingleMetric('x402_settlement_cost_total')!.get()).values
    expect(values.map((v) => [v.labels, v.value])).toEqual([
      [{ network: 'eip155:8453', outcome: 'landed' }, 30_000],
      [{ network: 'eip155:8453', outcome: 'reverted' }, 50_000],
      [{ network: 'eip155:8453', outcome: 'failed' }, 10],
    ])
    expect(costOutcome({ operation: 'settle', request: {} as never, context: undefined, durationMs: 1, result: { success: false, errorReason: 'transaction_failed', transaction: '', network: 'x' } })).toBe('reverted')
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
