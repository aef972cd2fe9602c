import { afterAll, describe, expect, it } from 'vitest'
import { createFacilitator, supportedResponseSchema } from '../../src/index.js'
import { startExpressServer } from '../../examples/express/server.js'
import { startFastifyServer } from '../../examples/fastify/server.js'
import { startHonoServer } from '../../examples/hono/server.js'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const servers: { close(): Promise<void> }[] = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
})

const examples = {
  'node:http': startNodeHttpServer,
  express: startExpressServer,
  hono: startHonoServer,
  fastify: startFastifyServer,
} as const

describe.each(Object.entries(examples))('%s example', (_name, start) => {
  const adapter = createLedgerAdapter({ network: 'eip155:8453', v1Name: 'base' })
  adapter.balances.set('0xpayer', 1_000n)
  const facilitator = createFacilitator({ schemes: [adapter] })

  it('serves /supported, /verify and error bodies over real HTTP', async () => {
    const server = await start(facilitator)
    servers.push(server)

    const supported = await fetch(`${server.url}/supported`)
    expect(supported.status).toBe(200)
    const body = supportedResponseSchema.parse(await supported.json())
    expect(body.kinds.map((k) => k.network)).toEqual(['base', 'eip155:8453'])

    const payment = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'ex' }, 'eip155:8453')
    const verified = await fetch(`${server.url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payment) })
    expect(await verified.json()).toEqual({ isValid: true, payer: '0xpayer' })

    const broken = await fetch(`${server.url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' })
    expect(broken.status).toBe(400)
    expect(await broken.json()).toMatchObject({ code: 'invalid_json' })
  })
})
