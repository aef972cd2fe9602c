/**
 * The client's address behind reverse proxies, for the per-client rate limits: read from the right
 * end of X-Forwarded-For by trusted hops, or from a header the proxy overwrites, never from the
 * left end the client writes. Through a real proxy and real HTTP servers, with spoofed chains.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createFacilitator, createMemoryStore } from '../../src/index.js'
import { createHandler, createNodeServer, forwardedClientAddress, proxiedClientAddress, type HandlerOptions } from '../../src/http/index.js'
import type { Store } from '../../src/stores/store.js'
import { startForwardingProxy, requestFrom, type ForwardingMode } from '../support/forwarding-proxy.js'
import { createLedgerAdapter } from '../support/ledger-adapter.js'

describe('forwardedClientAddress', () => {
  it('takes the entry the trusted hops wrote, from the right end', () => {
    expect(forwardedClientAddress('1.2.3.4, 203.0.113.7', 1)).toBe('203.0.113.7')
    expect(forwardedClientAddress('1.2.3.4,203.0.113.7', 1)).toBe('203.0.113.7')
    // Two proxies: the outer one wrote the client, the inner one the outer proxy.
    expect(forwardedClientAddress('6.6.6.6, 203.0.113.7, 10.0.0.2', 2)).toBe('203.0.113.7')
    // Fewer entries than hops: the leftmost, still written by a trusted proxy.
    expect(forwardedClientAddress('203.0.113.7', 2)).toBe('203.0.113.7')
    expect(forwardedClientAddress('1.2.3.4, 2001:DB8::1', 1)).toBe('2001:db8::1')
  })

  it('answers undefined for no header or an entry that is not an address', () => {
    expect(forwardedClientAddress(null, 1)).toBeUndefined()
    expect(forwardedClientAddress('', 1)).toBeUndefined()
    expect(forwardedClientAddress('1.2.3.4, unknown', 1)).toBeUndefined()
    expect(forwardedClientAddress(`1.2.3.4, ${'9'.repeat(100)}`, 1)).toBeUndefined()
  })

  it('refuses hops and headers that cannot be right', () => {
    expect(() => proxiedClientAddress({ hops: 0 })).toThrow(/hops must be an integer from 1 to 16/)
    expect(() => proxiedClientAddress({ hops: 1.5 })).toThrow(/hops/)
    expect(() => proxiedClientAddress({ header: 'x-forwarded-for' })).toThrow(/use trustProxy.hops/)
    expect(() => proxiedClientAddress({ header: 'bad header' })).toThrow(/header name/)
    const header = proxiedClientAddress({ header: 'CF-Connecting-IP' })
    expect(header((name) => (name === 'cf-connecting-ip' ? '203.0.113.9' : null))).toBe('203.0.113.9')
    expect(() => createHandler(createFacilitator({ schemes: [createLedgerAdapter()] }), { trustProxy: { hops: 1 }, clientAddress: () => 'x' })).toThrow(/not both/)
  })
})

describe('rate limits behind a proxy', () => {
  const closers: (() => Promise<void>)[] = []
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()))
  })

  /** The facilitator's node server (verify limited to 2 a minute per client) behind a real proxy; the rate-limit keys the store saw. */
  async function behindProxy(trustProxy: HandlerOptions['trustProxy'], mode: ForwardingMode) {
    const memory = createMemoryStore()
    const keys = new Set<string>()
    // The real memory store; its keys are only watched.
    const store: Store = { ...memory, incrementFields: (key, fields, options) => (keys.add(key), memory.incrementFields(key, fields, options)) }
    const handler = createHandler(createFacilitator({ schemes: [createLedgerAdapter()], store }), { rateLimit: { store, verify: { limit: 2 } }, trustProxy })
    const server = createNodeServer(handler)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const upstream = `http://127.0.0.1:${(server.address() as { port: number }).port}`
    const proxy = await startForwardingProxy(upstream, mode)
    closers.push(proxy.close, () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))))
    const verify = (from: string, headers: Record<string, string> = {}) =>
      requestFrom(from, `${proxy.url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' })
    // The client part of `rate:verify:<client>:<window>`.
    const clients = () => new Set([...keys].map((key) => key.split(':').slice(2, -1).join(':')))
    return { verify, clients }
  }

  it('X-Forwarded-For with one trusted hop: the address the proxy appended counts, whatever the client wrote before it', async () => {
    const { verify, clients } = await behindProxy({ hops: 1 }, { append: 'x-forwarded-for' })
    const statuses: number[] = []
    // One client rotating the left entry of its chain at every request.
    for (let i = 0; i < 20; i++) statuses.push((await verify('127.0.0.2', { 'x-forwarded-for': `10.9.${i}.${i}` })).status)
    expect(statuses.slice(0, 2)).toEqual([400, 400])
    expect(statuses.slice(2).every((status) => status === 429)).toBe(true)
    // Another real client claiming to be the first still has its own limit, and does not spend the first's.
    expect((await verify('127.0.0.3', { 'x-forwarded-for': '127.0.0.2' })).status).toBe(400)
    expect([...clients()].sort()).toEqual(['addr:127.0.0.2', 'addr:127.0.0.3'])
  })

  it('a header the proxy overwrites: the client\'s own value is replaced, and rotating it changes nothing', async () => {
    const { verify, clients } = await behindProxy({ header: 'x-real-ip' }, { set: 'x-real-ip' })
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await verify('127.0.0.4', { 'x-real-ip': `10.8.${i}.1`, 'x-forwarded-for': `10.7.${i}.1` })).status)
    expect(statuses).toEqual([400, 400, 429, 429, 429, 429, 429, 429, 429, 429])
    expect([...clients()]).toEqual(['addr:127.0.0.4'])
  })

  it('without trustProxy the proxy is the client (one bucket), and a forwarded header is never read', async () => {
    const { verify, clients } = await behindProxy(undefined, { append: 'x-forwarded-for' })
    await verify('127.0.0.2', { 'x-forwarded-for': '10.1.1.1' })
    await verify('127.0.0.3', { 'x-forwarded-for': '10.1.1.2' })
    expect([...clients()]).toEqual(['addr:127.0.0.1'])
  })
})
