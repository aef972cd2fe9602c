/**
 * Interop of batch-settlement: the official @x402/express middleware with the official
 * batch-settlement server scheme prices a route, our facilitator serves it over real HTTP
 * (batchSettlementEvm on anvil, our contracts at the canonical addresses, our delegated receiver
 * authorizer), and the official @x402/fetch client pays with the official batch-settlement client:
 * one deposit then vouchers; the official channel manager then claims and sweeps through us.
 */
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { x402Client } from '@x402/core/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/express'
import { BatchSettlementEvmScheme as BatchClient } from '@x402/evm/batch-settlement/client'
import { BatchSettlementEvmScheme as BatchServer } from '@x402/evm/batch-settlement/server'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { batchSettlementEvm } from '../../src/evm/batch/index.js'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { installBatchSettlement } from '../support/batch-settlement-contracts.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'
import { installPermit2 } from '../support/permit2-contracts.js'

const NETWORK = 'eip155:84532'
const PRICE = 1_000n
const TOKEN = 'shop-token-0123456789abcdef'
const authorizer = privateKeyToAccount(generatePrivateKey())
const receiver = privateKeyToAccount(generatePrivateKey()).address

let world: EvmFixture
let facilitatorServer: { url: string; close(): Promise<void> }
let shop: LoopbackServer
let scheme: BatchServer
let facilitatorClient: HTTPFacilitatorClient

beforeAll(async () => {
  world = await startEvmFixture()
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  const facilitator = createFacilitator({
    schemes: [batchSettlementEvm({ networks: [{ network: NETWORK, rpcUrls: [world.node.rpcUrl] }], signers: world.signers, receiverAuthorizer: authorizer, allowDelegatedRefunds: true })],
  })
  facilitatorServer = await startNodeHttpServer(facilitator, { authenticate: (request) => request.headers.get('authorization') === `Bearer ${TOKEN}` })
  const headers = { Authorization: `Bearer ${TOKEN}` }
  facilitatorClient = new HTTPFacilitatorClient({ url: facilitatorServer.url, createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }) })
  const server = new x402ResourceServer(facilitatorClient)
  scheme = new BatchServer(receiver, { withdrawDelay: 900 })
  server.register(NETWORK, scheme)
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /call': {
          accepts: { scheme: 'batch-settlement', network: NETWORK, payTo: receiver, price: { amount: PRICE.toString(), asset: world.token.address, extra: { name: world.token.name, version: world.token.version } } },
          description: 'One metered call',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  )
  app.get('/call', (_req, res) => void res.json({ ok: true }))
  shop = await listen(app)
}, 120_000)
afterAll(async () => {
  await shop?.close()
  await facilitatorServer?.close()
  await world?.stop()
})

describe('official batch-settlement client and server through our facilitator', () => {
  it('pays ten calls with one deposit and vouchers, then the official channel manager claims and sweeps through us', async () => {
    const payer = await world.newPayer(1_000_000n)
    const client = new x402Client().setSpendControls(false).register(NETWORK, new BatchClient(payer))
    const pay = wrapFetchWithPayment(fetch, client)
    for (let i = 0; i < 10; i++) {
      const response = await pay(`${shop.url}/call`)
      expect(response.status, `call ${i}`).toBe(200)
    }
    const deposited = 1_000_000n - (await tokenBalance(world.node, world.token, payer.address))
    expect(deposited).toBeGreaterThanOrEqual(10n * PRICE)

    const manager = scheme.createChannelManager(facilitatorClient, NETWORK, world.token.address)
    const claims = await manager.claim()
    expect(claims.length).toBeGreaterThan(0)
    await manager.settle()
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(10n * PRICE)
  }, 120_000)

  it('refunds what is left of a channel at the official client\'s request, signed by our delegated receiver authorizer', async () => {
    const payer = await world.newPayer(1_000_000n)
    const batch = new BatchClient(payer)
    const pay = wrapFetchWithPayment(fetch, new x402Client().setSpendControls(false).register(NETWORK, batch))
    for (let i = 0; i < 3; i++) expect((await pay(`${shop.url}/call`)).status).toBe(200)
    const afterCalls = await tokenBalance(world.node, world.token, payer.address)
    const deposited = 1_000_000n - afterCalls
    const refund = await batch.refund(`${shop.url}/call`)
    expect(refund).toMatchObject({ success: true, amount: (deposited - 3n * PRICE).toString() })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 3n * PRICE)
  }, 120_000)
})
