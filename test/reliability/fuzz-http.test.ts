import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, errorBodySchema } from '../../src/index.js'
import { createHandler } from '../../src/http/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

// Property-based fuzzing of the HTTP surface: 100,000 generated requests in
// all, none may produce a 5xx, an unhandled rejection, or a 4xx without an
// `{error, code}` body.

const adapter = createLedgerAdapter({ network: 'eip155:8453', v1Name: 'base' })
adapter.balances.set('0xpayer', 10n ** 30n)
const facilitator = createFacilitator({ schemes: [adapter] })
const handle = createHandler(facilitator, { maxBodyBytes: 16_384 })
const valid = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'fuzz' }, 'eip155:8453')

let unhandled = 0
const onUnhandled = () => void unhandled++
beforeAll(() => void process.on('unhandledRejection', onUnhandled))
afterAll(() => void process.off('unhandledRejection', onUnhandled))

async function check(request: Request) {
  const response = await handle(request)
  expect(response.status).toBeLessThan(500)
  const text = await response.text()
  if (response.status >= 400) {
    const parsed = errorBodySchema.safeParse(JSON.parse(text))
    expect(parsed.success, text).toBe(true)
  }
  expect(text).not.toMatch(/\n\s+at |\.ts:\d+/)
}

const post = (path: string, body: string, contentType = 'application/json') =>
  new Request(`http://fuzz.test${path}`, { method: 'POST', headers: { 'content-type': contentType }, body })

/** Replaces the value at a random path of the valid body by an arbitrary JSON value. */
const mutatedBody = fc
  .tuple(fc.nat(), fc.jsonValue({ maxDepth: 3 }), fc.boolean())
  .map(([pick, replacement, drop]) => {
    const body = structuredClone(valid) as unknown as Record<string, unknown>
    const paths: (string[])[] = []
    const walk = (value: unknown, path: string[]) => {
      paths.push(path)
      if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k])
    }
    walk(body, [])
    const path = paths[pick % paths.length] ?? []
    if (path.length === 0) return replacement
    let parent = body as Record<string, unknown>
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>
    const last = path[path.length - 1] as string
    if (drop) delete parent[last]
    else parent[last] = replacement
    return body
  })

describe('hostile input through the HTTP handler', () => {
  it('survives 60,000 mutated payment bodies on /verify and /settle', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedBody, fc.constantFrom('/verify', '/settle'), async (body, path) => {
        await check(post(path, JSON.stringify(body)))
      }),
      { numRuns: 60_000 },
    )
  })

  it('survives 30,000 arbitrary JSON documents', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom('/verify', '/settle'), async (value, path) => {
        await check(post(path, JSON.stringify(value)))
      }),
      { numRuns: 30_000 },
    )
  })

  it('survives 10,000 raw bodies, methods, paths and content types', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 }), fc.constant('['.repeat(2000))),
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
        fc.oneof(fc.constantFrom('/verify', '/settle', '/supported', '/', '//verify', '/verify/'), fc.webPath()),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', '', 'application/json; charset=utf-16'),
        async (body, method, path, contentType) => {
          const hasBody = method !== 'GET' && method !== 'HEAD'
          const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {}
          let request: Request
          try {
            request = new Request(`http://fuzz.test${path.startsWith('/') ? path : `/${path}`}`, { method, headers, ...(hasBody ? { body } : {}) })
          } catch {
            return // the URL itself is not representable: nothing reaches a server
          }
          await check(request)
        },
      ),
      { numRuns: 10_000 },
    )
  })

  it('saw no unhandled rejection', () => {
    expect(unhandled).toBe(0)
  })
})
