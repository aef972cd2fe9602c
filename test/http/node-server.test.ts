/**
 * The bounds of createNodeServer against real slow clients on real sockets:
 * headers and bodies that trickle in are cut with a 408, bodies in flight share
 * a memory budget, and connections are capped.
 */
import { connect, type Socket } from 'node:net'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { createHandler, createNodeServer, type NodeServerOptions } from '../../src/http/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

let server: Server | undefined
const sockets: Socket[] = []
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server?.closeAllConnections()
  server = undefined
})

async function start(options: NodeServerOptions, confirmDelayMs = 0) {
  const adapter = createLedgerAdapter({ confirmDelayMs })
  adapter.balances.set('0xpayer', 1_000_000n)
  server = createNodeServer(createHandler(createFacilitator({ schemes: [adapter] })), options)
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  return { adapter, port: (server.address() as AddressInfo).port }
}

/** A raw connection that records everything the server sends and when it closes. */
function open(port: number) {
  const socket = connect(port, '127.0.0.1')
  sockets.push(socket)
  let received = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk))
  socket.on('error', () => undefined)
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())))
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  return { socket, received: () => received, closed, connected }
}

const head = (length: number) => `POST /verify HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`

describe('createNodeServer', () => {
  it('answers 408 and closes a client that trickles its headers past headersTimeoutMs', async () => {
    const { port } = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600 })
    const client = open(port)
    await client.connected
    const started = performance.now()
    client.socket.write('POST /verify HTTP/1.1\r\nhost: x\r\n')
    const timer = setInterval(() => client.socket.write('x-slow: 1\r\n'), 50)
    const closedAt = await client.closed
    clearInterval(timer)
    expect(client.received()).toMatch(/^HTTP\/1\.1 408/)
    expect(closedAt - started).toBeLessThan(2_000)
  })

  it('answers 408 and closes a client whose body does not arrive within requestTimeoutMs', async () => {
    const { port } = await start({ headersTimeoutMs: 200, requestTimeoutMs: 400 })
    const client = open(port)
    await client.connected
    const started = performance.now()
    client.socket.write(head(60_000) + '{"x402Version":2,')
    const closedAt = await client.closed
    expect(client.received()).toMatch(/^HTTP\/1\.1 408/)
    expect(closedAt - started).toBeGreaterThanOrEqual(380)
    expect(closedAt - started).toBeLessThan(2_000)
  })

  it('does not cut a request whose body arrived in time while the facilitator works past requestTimeoutMs', async () => {
    const { adapter, port } = await start({ headersTimeoutMs: 200, requestTimeoutMs: 300 }, 700)
    const body = JSON.stringify(ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5', nonce: 'slow-settle' }))
    const answer = await fetch(`http://127.0.0.1:${port}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    expect(answer.status).toBe(200)
    expect((await answer.json()).success).toBe(true)
  })

  it('refuses bodies past the in-flight memory budget with 503 server_busy, and frees the budget when they go', async () => {
    const { adapter, port } = await start({ maxBodyBytesInFlight: 100_000, requestTimeoutMs: 10_000 })
    const part = 'x'.repeat(30_000)
    const slow = Array.from({ length: 3 }, () => open(port))
    for (const client of slow) {
      await client.connected
      client.socket.write(head(60_000) + part)
    }
    // Three bodies hold 90,000 bytes: the fourth's 30,000 do not fit.
    await new Promise((resolve) => setTimeout(resolve, 100))
    const fourth = open(port)
    await fourth.connected
    fourth.socket.write(head(60_000) + part)
    await fourth.closed
    expect(fourth.received()).toMatch(/^HTTP\/1\.1 503/)
    expect(fourth.received()).toContain('"code":"server_busy"')
    expect(fourth.received()).toMatch(/retry-after: 1/i)
    // The slow clients leave: their share comes back and a normal payment goes through.
    for (const client of slow) client.socket.destroy()
    await Promise.all(slow.map((client) => client.closed))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const body = JSON.stringify(ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5', nonce: 'after' }))
    const answer = await fetch(`http://127.0.0.1:${port}/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    expect((await answer.json()).isValid).toBe(true)
  })

  it('keeps at most maxConnections open: the next connection is closed at once', async () => {
    const { port } = await start({ maxConnections: 3 })
    const held = Array.from({ length: 3 }, () => open(port))
    await Promise.all(held.map((client) => client.connected))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const extra = open(port)
    const outcome = await Promise.race([extra.closed.then(() => 'closed'), new Promise((resolve) => setTimeout(() => resolve('open'), 1_000))])
    expect(outcome).toBe('closed')
    expect(extra.received()).toBe('')
    // The held ones still work.
    held[0]!.socket.write('GET /supported HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')
    await held[0]!.closed
    expect(held[0]!.received()).toMatch(/^HTTP\/1\.1 200/)
  })

  it('refuses nonsense bounds as misconfigured', () => {
    const handler = createHandler(createFacilitator({ schemes: [createLedgerAdapter()] }))
    expect(() => createNodeServer(handler, { maxConnections: 0 })).toThrow(/maxConnections/)
    expect(() => createNodeServer(handler, { headersTimeoutMs: 5_000, requestTimeoutMs: 1_000 })).toThrow(/headersTimeoutMs/)
  })
})

describe('health routes', () => {
  it('healthz answers 200; readyz answers 200 with a line per check, and 503 naming the store when it fails', async () => {
    const { createMemoryStore } = await import('../../src/index.js')
    const { healthRoutes } = await import('../../src/http/index.js')
    const adapter = createLedgerAdapter()
    const good = createFacilitator({ schemes: [adapter] })
    const handler = createHandler(good, { routes: healthRoutes(good), authenticate: () => false })
    expect((await handler(new Request('http://x/healthz'))).status).toBe(200)
    const ready = await handler(new Request('http://x/readyz'))
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ready', checks: [{ name: 'store', ok: true }], checkedAt: expect.any(String) })

    const failing = { ...createMemoryStore(), set: () => Promise.reject(new Error('redis://:password@host down')) }
    const bad = createFacilitator({ schemes: [adapter], store: failing })
    const answer = await createHandler(bad, { routes: healthRoutes(bad) })(new Request('http://x/readyz'))
    expect(answer.status).toBe(503)
    const text = await answer.text()
    expect(JSON.parse(text)).toEqual({ status: 'not_ready', checks: [{ name: 'store', ok: false, detail: 'the store failed a write or a read' }], checkedAt: expect.any(String) })
    expect(text).not.toContain('password')
  })
})
