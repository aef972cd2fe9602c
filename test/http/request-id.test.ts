/**
 * Request ids: taken from `x-request-id` when sent and sane, generated otherwise, echoed in
 * the answer, and known (through AsyncLocalStorage and pino's mixin) to every log line the
 * request causes: the facilitator's own (a landed settle), an after-hook's, the error hook's.
 * Over a real node:http server (the listener's fast path) and the web handler.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError } from '../../src/index.js'
import { createHandler, createNodeServer, requestIdOf, withRequestId } from '../../src/http/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

function setup() {
  const requests = new AsyncLocalStorage<string>()
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  const logger = pino({ level: 'info', mixin: () => ({ requestId: requests.getStore() }) }, stream)
  const adapter = createLedgerAdapter({ confirmDelayMs: 5 })
  adapter.balances.set('0xpayer', 1_000n)
  // An after-hook that logs later, on its own: it still knows the request it came from.
  const hook = { afterSettle: async () => void setTimeout(() => logger.info({ event: 'hook_line' }), 5) }
  const facilitator = createFacilitator({ schemes: [adapter], logger, hooks: [hook] })
  const handler = createHandler(facilitator, {
    requestId: { run: (id, work) => requests.run(id, work) },
    routes: [{ path: '/boom', handle: () => Promise.reject(new FacilitatorError('store_unavailable', 'the store is down')) }],
    onError: (fault) => logger.error({ event: 'http_fault', code: fault.code }),
  })
  return { adapter, facilitator, handler, lines }
}

const servers: Server[] = []
afterAll(() => servers.forEach((server) => server.close()))

async function serve(handler: Parameters<typeof createNodeServer>[0]): Promise<string> {
  const server = createNodeServer(handler)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('request ids', () => {
  it('a sane x-request-id is kept; a missing or unsafe one is replaced by a UUID', () => {
    expect(requestIdOf('4bf92f3577b34da6a3ce929d0e0e4736')).toBe('4bf92f3577b34da6a3ce929d0e0e4736')
    expect(requestIdOf('req:abc/1+2=3@edge_7.x')).toBe('req:abc/1+2=3@edge_7.x')
    for (const unsafe of [null, undefined, '', 'a b', 'x\n{"level":60}', '"quoted"', 'x'.repeat(129), 'é']) expect(requestIdOf(unsafe)).toMatch(UUID)
    expect(requestIdOf(null)).not.toBe(requestIdOf(null))
  })

  it('over node:http: echoed in the answer and carried by every log line the request causes', async () => {
    const { adapter, facilitator, handler, lines } = setup()
    const url = await serve(handler)
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'n1' })
    const post = (headers: Record<string, string>) => fetch(`${url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

    const sent = await post({ 'x-request-id': 'trace-0001' })
    expect(sent.headers.get('x-request-id')).toBe('trace-0001')
    expect(await sent.json()).toMatchObject({ success: true })
    await facilitator.drain()
    await new Promise((resolve) => setTimeout(resolve, 30))
    const settled = lines.find((line) => line.event === 'settled')
    expect(settled).toMatchObject({ requestId: 'trace-0001', payer: '0xpayer', amount: '10' })
    expect(lines.find((line) => line.event === 'hook_line')).toMatchObject({ requestId: 'trace-0001' })

    // A header that would forge log fields is not taken: a fresh id instead, still echoed.
    const forged = await fetch(`${url}/supported`, { headers: { 'x-request-id': 'a"b' } })
    expect(forged.headers.get('x-request-id')).toMatch(UUID)
    const generated = await fetch(`${url}/boom`)
    expect(generated.status).toBe(503)
    const id = generated.headers.get('x-request-id')!
    expect(id).toMatch(UUID)
    expect(lines.find((line) => line.event === 'http_fault')).toMatchObject({ requestId: id, code: 'store_unavailable' })
    // Every line here was caused by a request, and names it.
    expect(lines.length).toBeGreaterThanOrEqual(3)
    expect(lines.every((line) => typeof line.requestId === 'string')).toBe(true)
  })

  it('the web handler and withRequestId (any handler, e.g. the statistics host) echo ids too', async () => {
    const { handler } = setup()
    const answer = await handler(new Request('http://f.test/supported', { headers: { 'x-request-id': 'abc-123' } }))
    expect(answer.headers.get('x-request-id')).toBe('abc-123')
    const missing = await handler(new Request('http://f.test/nope'))
    expect(missing.status).toBe(404)
    expect(missing.headers.get('x-request-id')).toMatch(UUID)

    const seen: (string | undefined)[] = []
    const requests = new AsyncLocalStorage<string>()
    const plain = withRequestId(
      async () => {
        seen.push(requests.getStore())
        return Response.redirect('http://f.test/elsewhere', 302)
      },
      { run: (id, work) => requests.run(id, work) },
    )
    const redirected = await plain(new Request('http://f.test/', { headers: { 'x-request-id': 'page-9' } }))
    expect(redirected.status).toBe(302)
    expect(redirected.headers.get('x-request-id')).toBe('page-9')
    expect(seen).toEqual(['page-9'])
  })

  it('without the option nothing is added', async () => {
    const adapter = createLedgerAdapter()
    const handler = createHandler(createFacilitator({ schemes: [adapter] }))
    const answer = await handler(new Request('http://f.test/supported', { headers: { 'x-request-id': 'abc' } }))
    expect(answer.headers.get('x-request-id')).toBeNull()
  })
})
