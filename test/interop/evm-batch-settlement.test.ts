/**
 * Interop of batch-settlement: the official @x402/express middleware with the official
 * batch-settlement server scheme prices a route, our facilitator serves it over real HTTP
 * (batchSettlementEvm on anvil, our contracts at the canonical addresses, our delegated receiver
 * authorizer), and the official @x402/fetch client pays with the official batch-settlement client:
 * one deposit then vouchers; the official channel manager then claims and sweeps through us. A
 * route that deposits through Permit2 declares eip2612GasSponsoring: a payer that never approved
 * Permit2 deposits with the permit the official client signs.
 */
import express from 'express'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { x402Client } from '@x402/core/client'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/express'
import { BatchSettlementEvmScheme as BatchClient } from '@x402/evm/batch-settlement/client'
import { BatchSettlementEvmScheme as BatchServer } from '@x402/evm/batch-settlement/server'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { batchSettlementEvm } from '../../src/evm/batch/index.js'
import { batchSettlementAbi } from '../../src/evm/batch/abi.js'
import { PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from '../../src/evm/batch/constants.js'
import { PERMIT2_ADDRESS } from '../../src/evm/codec/permit2-abi.js'
import { decodeFunctionData, type Hex } from 'viem'
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
        'GET /call-permit2': {
          accepts: {
            scheme: 'batch-settlement',
            network: NETWORK,
            payTo: receiver,
            price: { amount: PRICE.toString(), asset: world.token.address, extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' } },
          },
          description: 'One metered call, deposits through Permit2',
          mimeType: 'application/json',
          // As @x402/extensions' declareEip2612GasSponsoringExtension() declares it.
          extensions: { eip2612GasSponsoring: { info: { description: 'The facilitator accepts EIP-2612 gasless Permit to `Permit2` canonical contract.', version: '1' }, schema: { type: 'object' } } },
        },
      },
      server,
    ),
  )
  app.get('/call', (_req, res) => void res.json({ ok: true }))
  app.get('/call-permit2', (_req, res) => void res.json({ ok: true }))
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

  it('a payer that never approved Permit2 (and holds no gas money) deposits through Permit2 with the official client\'s EIP-2612 permit, then pays with vouchers', async () => {
    const payer = await world.newPayer(1_000_000n)
    const allowance = () => world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'allowance', args: [payer.address, PERMIT2_ADDRESS] })
    expect(await allowance()).toBe(0n)
    const pay = wrapFetchWithPayment(fetch, new x402Client().setSpendControls(false).register(NETWORK, new BatchClient(payer, { rpcUrl: world.node.rpcUrl })))
    const first = await pay(`${shop.url}/call-permit2`)
    expect(first.status).toBe(200)
    const settlement = decodePaymentResponseHeader(first.headers.get('PAYMENT-RESPONSE') ?? '')
    expect(settlement).toMatchObject({ success: true, payer: payer.address })
    const tx = await world.node.publicClient.getTransaction({ hash: settlement.transaction as Hex })
    const [, amount, collector] = decodeFunctionData({ abi: batchSettlementAbi, data: tx.input }).args as unknown as [unknown, bigint, string]
    expect(collector).toBe(PERMIT2_DEPOSIT_COLLECTOR_ADDRESS)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - amount)
    for (let i = 0; i < 2; i++) expect((await pay(`${shop.url}/call-permit2`)).status).toBe(200)
    // One deposit: the vouchers after it moved nothing; the payer sent no transaction of its own.
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - amount)
    expect(await world.node.publicClient.getTransactionCount({ address: payer.address })).toBe(0)
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
