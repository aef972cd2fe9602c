import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { answerOf } from '../../src/http/handler.js'
import { createHandler, createNodeListener, type FetchHandler, type HandlerOptions } from '../../src/http/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

async function serve(handler: FetchHandler): Promise<string> {
  server = createServer(createNodeListener(handler))
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function facilitatorHandler(options: HandlerOptions = {}) {
  const adapter = createLedgerAdapter()
  adapter.balances.set('0xpayer', 100n)
  return { adapter, handler: createHandler(createFacilitator({ schemes: [adapter] }), options) }
}

describe('createNodeListener', () => {
  it('drives createHandler handlers without web objects, same answers as the web handler', async () => {
    const { adapter, handler } = facilitatorHandler()
    expect(answerOf(handler)).toBeTypeOf('function')
    const url = await serve(handler)
    const body = JSON.stringify(ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5', nonce: 'n' }))
    const viaNode = await fetch(`${url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const viaWeb = await handler(new Request('http://x/verify', { method: 'POST', headers: { 'content-type': 'application/json' }, body }))
    expect(viaNode.status).toBe(200)
    const text = await viaNode.text()
    expect(JSON.parse(text)).toEqual(await viaWeb.json())
    expect(viaNode.headers.get('cache-control')).toBe('no-store')
    // A length, not chunked framing: node:http then writes the head and the body as one piece.
    expect(viaNode.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
    expect(viaNode.headers.get('transfer-encoding')).toBeNull()
  })

  it('routes targets that need the URL parser (dot segments, doubled slashes, escapes) as the URL parser reads them', async () => {
    const { adapter, handler } = facilitatorHandler({ basePath: '/x402' })
    const url = await serve(handler)
    const body = JSON.stringify(ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5', nonce: 'n2' }))
    // node:http's client sends the path as given; fetch would normalise it first.
    const post = (path: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = request(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          let text = ''
          res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve({ status: res.statusCode ?? 0, text }))
        })
        req.on('error', reject)
        req.end(body)
      })
    for (const path of ['/x402/verify', '/x402/verify/?trace=1', '/x402/other/../verify', '/x402/./verify']) {
      const answer = await post(path)
      expect([path, answer.status, JSON.parse(answer.text).isValid]).toEqual([path, 200, true])
    }
    for (const path of ['/x402//verify', '/verify', '/x402/verify%2F', '/x402/%76erify']) {
      const answer = await post(path)
      expect([path, answer.status, JSON.parse(answer.text).code]).toEqual([path, 404, 'not_found'])
    }
  })

  it('serves any other web handler through a Request', async () => {
    const url = await serve(async (request) => Response.json({ method: request.method, body: await request.text() }, { headers: { 'x-kind': 'foreign' } }))
    const response = await fetch(`${url}/anything`, { method: 'POST', body: 'hello' })
    expect(response.headers.get('x-kind')).toBe('foreign')
    expect(await response.json()).toEqual({ method: 'POST', body: 'hello' })
  })

  it('hands the authentication hook the request headers', async () => {
    const { handler } = facilitatorHandler({ authenticate: (request) => request.headers.get('authorization') === 'Bearer ok' })
    const url = await serve(handler)
    expect((await fetch(`${url}/supported`)).status).toBe(401)
    expect((await fetch(`${url}/supported`, { headers: { authorization: 'Bearer ok' } })).status).toBe(200)
  })

  it('answers 413 to a chunked oversized body at once and closes instead of draining it', async () => {
    const { handler } = facilitatorHandler({ maxBodyBytes: 1024 })
    const url = await serve(handler)
    const started = Date.now()
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      let sent = 0
      // Up to 50 MB offered; the server must answer long before reading it all.
      const pump = () => {
        while (sent < 50_000_000) {
          sent += 65_536
          if (!req.write(Buffer.alloc(65_536, 32))) return void req.once('drain', pump)
        }
        req.end()
      }
      pump()
    })
    expect(status).toBe(413)
    expect(Date.now() - started).toBeLessThan(2_000)
  })
})
