import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, createMemoryStore } from '../../src/index.js'
import { createHandler, createNodeServer, type HandlerOptions } from '../../src/http/index.js'
import { createRedisStore } from '../../src/stores/redis-store.js'
import type { Store } from '../../src/stores/store.js'
import { createLedgerAdapter, ledgerBody, type LedgerAdapter } from '../support/ledger-adapter.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'

let redis: RedisServer
const stores: Store[] = []
beforeAll(async () => {
  redis = await startRedisServer()
})
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close?.()))
  await redis?.stop()
})

function setup(options: (store: Store) => HandlerOptions, store: Store = createMemoryStore()) {
  const adapter = createLedgerAdapter()
  adapter.balances.set('0xpayer', 1_000_000n)
  const handler = createHandler(createFacilitator({ schemes: [adapter], store }), options(store))
  return { adapter, handler }
}

let nonce = 0
const post = (handler: (r: Request) => Promise<Response>, adapter: LedgerAdapter, route: 'verify' | 'settle', headers: Record<string, string> = {}) =>
  handler(
    new Request(`http://x/${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '1', nonce: `n${nonce++}` })),
    }),
  )

describe('rate limits', () => {
  it('answers 429 rate_limited with Retry-After past the limit, counting /verify and /settle apart', async () => {
    const { adapter, handler } = setup((store) => ({ rateLimit: { store, verify: { limit: 3, windowMs: 60_000 }, settle: { limit: 1 } } }))
    const verifies = []
    for (let i = 0; i < 4; i++) verifies.push(await post(handler, adapter, 'verify'))
    expect(verifies.map((r) => r.status)).toEqual([200, 200, 200, 429])
    const refused = verifies[3]!
    const body = await refused.json()
    expect(body).toMatchObject({ code: 'rate_limited', isValid: false, invalidReason: 'rate_limited' })
    expect(body.error).toMatch(/at most 3 every 60 s/)
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    // Settle has its own count.
    expect((await post(handler, adapter, 'settle')).status).toBe(200)
    const secondSettle = await post(handler, adapter, 'settle')
    expect(secondSettle.status).toBe(429)
    expect((await secondSettle.json()).success).toBe(false)
    // /supported is not limited.
    expect((await handler(new Request('http://x/supported'))).status).toBe(200)
  })

  it('counts per API key when authenticate names the client, else per address', async () => {
    const { adapter, handler } = setup((store) => ({
      rateLimit: { store, verify: { limit: 1 } },
      authenticate: (request) => {
        const key = request.headers.get('authorization')
        return key ? { clientId: key.replace('Bearer ', '') } : true
      },
      clientAddress: (request) => request.headers.get('x-test-address') ?? undefined,
    }))
    expect((await post(handler, adapter, 'verify', { authorization: 'Bearer alice' })).status).toBe(200)
    expect((await post(handler, adapter, 'verify', { authorization: 'Bearer alice' })).status).toBe(429)
    expect((await post(handler, adapter, 'verify', { authorization: 'Bearer bob' })).status).toBe(200)
    expect((await post(handler, adapter, 'verify', { 'x-test-address': '203.0.113.7' })).status).toBe(200)
    expect((await post(handler, adapter, 'verify', { 'x-test-address': '203.0.113.7' })).status).toBe(429)
    expect((await post(handler, adapter, 'verify', { 'x-test-address': '203.0.113.8' })).status).toBe(200)
  })

  it('two instances sharing one Redis share the limits', async () => {
    const store = createRedisStore({ url: redis.url, keyPrefix: 'rate-shared:' })
    const other = createRedisStore({ url: redis.url, keyPrefix: 'rate-shared:' })
    stores.push(store, other)
    const rule = (s: Store): HandlerOptions => ({ rateLimit: { store: s, verify: { limit: 2 } }, clientAddress: () => '198.51.100.1' })
    const a = setup(rule, store)
    const b = setup(rule, other)
    const statuses = [
      (await post(a.handler, a.adapter, 'verify')).status,
      (await post(b.handler, b.adapter, 'verify')).status,
      (await post(a.handler, a.adapter, 'verify')).status,
      (await post(b.handler, b.adapter, 'verify')).status,
    ]
    expect(statuses).toEqual([200, 200, 429, 429])
  })

  it('limits by the socket address through the node server, and lets requests through when the store fails', async () => {
    const failing: Store = { ...createMemoryStore(), incrementFields: () => Promise.reject(new Error('store down')) }
    const { adapter, handler } = setup((store) => ({ rateLimit: { store, verify: { limit: 1 } } }))
    const server = createNodeServer(handler)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const send = () =>
      fetch(`${url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '1', nonce: `s${nonce++}` })) })
    try {
      expect((await send()).status).toBe(200)
      expect((await send()).status).toBe(429)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
    const open = setup(() => ({ rateLimit: { store: failing, verify: { limit: 1 } } }))
    for (let i = 0; i < 3; i++) expect((await post(open.handler, open.adapter, 'verify')).status).toBe(200)
  })

  it('refuses a limit that is not a positive integer as misconfigured', () => {
    expect(() => setup((store) => ({ rateLimit: { store, verify: { limit: 0 } } }))).toThrow(/limit must be an integer/)
  })
})
