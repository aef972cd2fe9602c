import { describe, expect, it } from 'vitest'
import { createFacilitator, errorBodySchema } from '../../src/index.js'
import { createHandler, type HandlerOptions } from '../../src/http/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

function setup(options: HandlerOptions = {}) {
  const adapter = createLedgerAdapter()
  adapter.balances.set('0xpayer', 1_000n)
  const facilitator = createFacilitator({ schemes: [adapter] })
  return { adapter, facilitator, handle: createHandler(facilitator, options) }
}

const post = (path: string, body: string | object, headers: Record<string, string> = {}) =>
  new Request(`http://facilitator.test${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

async function errorOf(response: Response) {
  const body: unknown = await response.json()
  const parsed = errorBodySchema.safeParse(body)
  expect(parsed.success, JSON.stringify(body)).toBe(true)
  return body as { error: string; code: string } & Record<string, unknown>
}

describe('web handler', () => {
  it('serves supported, verify and settle', async () => {
    const { adapter, handle } = setup()
    const supported = await handle(new Request('http://facilitator.test/supported'))
    expect(supported.status).toBe(200)
    expect(await supported.json()).toMatchObject({ kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:31337' }] })

    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'h' })
    const verified = await handle(post('/verify', body))
    expect(await verified.json()).toEqual({ isValid: true, payer: '0xpayer' })
    const settled = await handle(post('/settle', body))
    expect(await settled.json()).toMatchObject({ success: true, payer: '0xpayer', network: 'eip155:31337' })
  })

  it('answers a failed check as 200 with a reason, not an HTTP error', async () => {
    const { adapter, handle } = setup()
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5000', nonce: 'x' })
    const response = await handle(post('/verify', body))
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ isValid: false, invalidReason: 'insufficient_funds' })
  })

  it('answers 400 {error, code} for invalid JSON and names bad fields', async () => {
    const { handle } = setup()
    const broken = await handle(post('/verify', '{"x402Version":'))
    expect(broken.status).toBe(400)
    expect(await errorOf(broken)).toMatchObject({ code: 'invalid_json', isValid: false, invalidReason: 'invalid_json' })

    const wrong = await handle(post('/settle', { x402Version: 1, paymentPayload: { x402Version: 1, scheme: 'exact', network: 'base', payload: {} }, paymentRequirements: { scheme: 'exact' } }))
    expect(wrong.status).toBe(400)
    const error = await errorOf(wrong)
    expect(error.code).toBe('invalid_request')
    expect(error.error).toContain('paymentRequirements.network')
    expect(error).toMatchObject({ success: false, errorReason: 'invalid_request', transaction: '' })

    const empty = await handle(post('/verify', ''))
    expect(empty.status).toBe(400)
  })

  it('answers 404 and 405 with error bodies', async () => {
    const { handle } = setup()
    const missing = await handle(new Request('http://facilitator.test/nope'))
    expect(missing.status).toBe(404)
    expect((await errorOf(missing)).code).toBe('not_found')
    const wrongMethod = await handle(new Request('http://facilitator.test/verify'))
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get('allow')).toBe('POST')
    expect((await errorOf(wrongMethod)).code).toBe('method_not_allowed')
  })

  it('refuses bodies over the limit with 413, by header or by stream', async () => {
    const { handle } = setup({ maxBodyBytes: 1024 })
    const big = 'x'.repeat(5000)
    const declared = await handle(post('/verify', { big }))
    expect(declared.status).toBe(413)
    expect((await errorOf(declared)).code).toBe('payload_too_large')
    // No content-length: the streamed body is counted as it arrives.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode(big))
        controller.close()
      },
    })
    const streamed = await handle(
      new Request('http://facilitator.test/verify', { method: 'POST', body: stream, headers: { 'content-type': 'application/json' }, duplex: 'half' } as RequestInit),
    )
    expect(streamed.status).toBe(413)
  })

  it('refuses deeply nested JSON before parsing it', async () => {
    const { handle } = setup()
    const response = await handle(post('/verify', `${'['.repeat(5000)}${']'.repeat(5000)}`))
    expect(response.status).toBe(400)
    expect((await errorOf(response)).error).toContain('nested')
  })

  it('refuses non-JSON content types with 415', async () => {
    const { handle } = setup()
    const response = await handle(post('/verify', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' }))
    expect(response.status).toBe(415)
  })

  it('asks the authentication hook and answers 401 {error, code}', async () => {
    const { handle } = setup({ authenticate: (request) => request.headers.get('authorization') === 'Bearer good' })
    const denied = await handle(new Request('http://facilitator.test/supported'))
    expect(denied.status).toBe(401)
    expect((await errorOf(denied)).code).toBe('unauthorized')
    const allowed = await handle(new Request('http://facilitator.test/supported', { headers: { authorization: 'Bearer good' } }))
    expect(allowed.status).toBe(200)
    const throwing = createHandler(setup().facilitator, { authenticate: () => { throw new Error('db down SECRET') } })
    const failed = await throwing(new Request('http://facilitator.test/supported'))
    expect(failed.status).toBe(401)
    expect(await failed.text()).not.toContain('SECRET')
  })

  it('mounts under a base path', async () => {
    const { handle } = setup({ basePath: '/x402/' })
    expect((await handle(new Request('http://facilitator.test/x402/supported'))).status).toBe(200)
    expect((await handle(new Request('http://facilitator.test/supported'))).status).toBe(404)
    expect((await handle(new Request('http://facilitator.test/x402supported'))).status).toBe(404)
  })

  it('adds CORS headers and answers preflight', async () => {
    const { handle } = setup({ cors: { origin: ['https://app.example'] } })
    const preflight = await handle(new Request('http://facilitator.test/verify', { method: 'OPTIONS', headers: { origin: 'https://app.example' } }))
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example')
    const other = await handle(new Request('http://facilitator.test/supported', { headers: { origin: 'https://evil.example' } }))
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('serves extra routes, public ones without authentication', async () => {
    const { handle } = setup({
      authenticate: () => false,
      routes: [{ path: '/public/stats', handle: () => Response.json({ ok: true }) }],
    })
    const response = await handle(new Request('http://facilitator.test/public/stats'))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ ok: true })
    expect((await handle(post('/public/stats', {}))).status).toBe(405)
  })

  it('answers 5xx faults without stack traces or causes', async () => {
    const adapter = createLedgerAdapter()
    const leaky = { ...adapter, verify: () => Promise.reject(new Error('ECONNREFUSED https://user:SECRETKEY@rpc.example')) }
    const errors: unknown[] = []
    const handle = createHandler(createFacilitator({ schemes: [leaky] }), { onError: (e) => void errors.push(e) })
    const response = await handle(post('/verify', ledgerBody(adapter, { from: 'a', to: 'b', value: '1', nonce: 'n' })))
    expect(response.status).toBe(500)
    const text = await response.text()
    expect(text).not.toMatch(/SECRETKEY|at |\.ts:/)
    expect(JSON.parse(text)).toEqual({ error: 'internal error', code: 'internal_error' })
    expect(errors).toHaveLength(1)
  })

  it('still answers when the error hook itself throws', async () => {
    const adapter = createLedgerAdapter()
    const leaky = { ...adapter, verify: () => Promise.reject(new Error('boom')) }
    const handle = createHandler(createFacilitator({ schemes: [leaky] }), { onError: () => { throw new Error('logger down') } })
    const response = await handle(post('/verify', ledgerBody(adapter, { from: 'a', to: 'b', value: '1', nonce: 'n' })))
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({ error: 'internal error', code: 'internal_error' })
  })
})

describe('settles whose request sets the amount', () => {
  /** An exact adapter, and beside it one whose settle request chooses the charge (as upto does), on its own network. */
  function metered(options: HandlerOptions = {}) {
    const exact = createLedgerAdapter()
    const meter = { ...createLedgerAdapter({ network: 'eip155:31338', balances: exact.balances }), settleSetsAmount: true }
    exact.balances.set('0xpayer', 1_000n)
    const facilitator = createFacilitator({ schemes: [exact, meter] })
    const meterBody = (nonce: string) => ledgerBody(meter, { from: '0xpayer', to: '0xshop', value: '10', nonce }, 'eip155:31338')
    return { exact, meter, meterBody, handle: createHandler(facilitator, options) }
  }

  it('refuses them on a handler without authenticate, with a code and how to opt in; nothing is settled, /verify and other schemes stay open', async () => {
    const { exact, meter, meterBody, handle } = metered()
    const settled = await handle(post('/settle', meterBody('m1')))
    expect(settled.status).toBe(200)
    const answer = (await settled.json()) as Record<string, unknown>
    expect(answer).toMatchObject({ success: false, errorReason: 'settle_requires_authentication', transaction: '', network: 'eip155:31338', amount: '0' })
    expect(answer.errorMessage).toMatch(/authenticate hook.*API_TOKENS.*allowUnauthenticatedSettleAmount/)
    expect(meter.applied.size).toBe(0)
    expect(exact.balances.get('0xpayer')).toBe(1_000n)
    // Verify stays open: a resource server checks the payment before doing the work.
    expect(await (await handle(post('/verify', meterBody('m1')))).json()).toEqual({ isValid: true, payer: '0xpayer' })
    // A payment whose amount the payer signed settles as before.
    const plain = await handle(post('/settle', ledgerBody(exact, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'e1' })))
    expect(await plain.json()).toMatchObject({ success: true })
    // A malformed body keeps its 400 naming the field.
    expect((await handle(post('/settle', { x402Version: 2 }))).status).toBe(400)
  })

  it('is held by the facilitator itself: any framework that names an unauthenticated caller gets the refusal; an in-process call is trusted', async () => {
    const exact = createLedgerAdapter()
    const meter = { ...createLedgerAdapter({ network: 'eip155:31338', balances: exact.balances }), settleSetsAmount: true }
    exact.balances.set('0xpayer', 1_000n)
    const facilitator = createFacilitator({ schemes: [exact, meter] })
    const body = (nonce: string) => ledgerBody(meter, { from: '0xpayer', to: '0xshop', value: '10', nonce }, 'eip155:31338')
    expect(await facilitator.settle(body('w1'), { authenticated: false })).toMatchObject({ success: false, errorReason: 'settle_requires_authentication', amount: '0' })
    expect(meter.applied.size).toBe(0)
    expect(await facilitator.settle(body('w2'), { authenticated: false, mayChooseAmount: true })).toMatchObject({ success: true })
    expect(await facilitator.settle(body('w3'))).toMatchObject({ success: true })
    expect(meter.applied.size).toBe(2)
  })

  it('settles them for callers the authenticate hook admits, and for anyone when the operator opts in', async () => {
    const authed = metered({ authenticate: (request) => (request.headers.get('authorization') === 'Bearer shop' ? { clientId: 'shop' } : false) })
    expect((await authed.handle(post('/settle', authed.meterBody('a1')))).status).toBe(401)
    const settled = await authed.handle(post('/settle', authed.meterBody('a1'), { authorization: 'Bearer shop' }))
    expect(await settled.json()).toMatchObject({ success: true, network: 'eip155:31338' })
    expect(authed.meter.applied.size).toBe(1)

    const open = metered({ allowUnauthenticatedSettleAmount: true })
    expect(await (await open.handle(post('/settle', open.meterBody('o1')))).json()).toMatchObject({ success: true })
    expect(open.meter.applied.size).toBe(1)
  })
})

describe('private routes', () => {
  const ledgerRows = { path: '/ledger', public: false, handle: () => Response.json({ entries: ['row'] }) }
  const authenticate = (request: Request) => {
    const token = request.headers.get('authorization')
    return token === 'Bearer shop-a' ? { clientId: 'shop-a' } : token === 'Bearer shop-b' ? { clientId: 'shop-b' } : false
  }
  const get = (headers: Record<string, string> = {}) => new Request('http://facilitator.test/ledger', { headers })

  it('take an admin credential from authorizeAdmin: a payment client\'s token gets 401, and authenticate is not asked', async () => {
    const asked: string[] = []
    const { handle } = setup({
      authenticate: (request, route) => (asked.push(route), authenticate(request)),
      authorizeAdmin: (request) => request.headers.get('authorization') === 'Bearer admin',
      routes: [ledgerRows],
    })
    const client = await handle(get({ authorization: 'Bearer shop-b' }))
    expect(client.status).toBe(401)
    expect((await errorOf(client)).error).toMatch(/admin credential/)
    expect((await handle(get())).status).toBe(401)
    const admin = await handle(get({ authorization: 'Bearer admin' }))
    expect(admin.status).toBe(200)
    expect(await admin.json()).toEqual({ entries: ['row'] })
    expect(asked).toEqual([])
    // The admin credential does not open the payment routes.
    expect((await handle(new Request('http://facilitator.test/supported', { headers: { authorization: 'Bearer admin' } }))).status).toBe(401)
  })

  it('admit only exactly true from authorizeAdmin, and answer 401 without leaking when it throws', async () => {
    const named = setup({ authorizeAdmin: (() => ({ clientId: 'shop-a' })) as unknown as () => boolean, routes: [ledgerRows] })
    expect((await named.handle(get({ authorization: 'Bearer shop-a' }))).status).toBe(401)
    const throwing = setup({ authorizeAdmin: () => { throw new Error('vault down SECRET') }, routes: [ledgerRows] })
    const failed = await throwing.handle(get())
    expect(failed.status).toBe(401)
    expect(await failed.text()).not.toContain('SECRET')
  })

  it('without authorizeAdmin ask authenticate with "private" as before, and are closed with neither hook', async () => {
    const legacy = setup({ authenticate: (request, route) => (route === 'private' ? request.headers.get('authorization') === 'Bearer admin' : true), routes: [ledgerRows] })
    expect((await legacy.handle(get({ authorization: 'Bearer shop-a' }))).status).toBe(401)
    expect((await legacy.handle(get({ authorization: 'Bearer admin' }))).status).toBe(200)
    expect((await setup({ routes: [ledgerRows] }).handle(get({ authorization: 'Bearer admin' }))).status).toBe(401)
  })
})
