/**
 * Interop on EVM: resource servers built with the official middleware
 * (@x402/express for v2, x402-express for v1) use our facilitator over HTTP
 * (the node:http example), and the official paying clients (@x402/fetch,
 * x402-fetch) pay them on anvil with our EIP-3009 test token.
 */
import express from 'express'
import { createWalletClient, getAddress, http, publicActions, type LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { x402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/express'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { paymentMiddleware as paymentMiddlewareV1 } from 'x402-express'
import { decodeXPaymentResponse, wrapFetchWithPayment as wrapFetchWithPaymentV1 } from 'x402-fetch'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import type { SettleEvent, VerifyEvent } from '../../src/core/hooks.js'
import { settleResponseSchema } from '../../src/schemas/messages.js'
import { exactEvm } from '../../src/evm/index.js'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'

const PRICE = 10_000n // 0.01 of a 6-decimal token

let world: EvmFixture
let facilitatorServer: { url: string; close(): Promise<void> }
const shops: LoopbackServer[] = []
const verified: VerifyEvent[] = []
const settled: SettleEvent[] = []

beforeAll(async () => {
  world = await startEvmFixture()
  const facilitator = createFacilitator({
    schemes: [exactEvm(world.adapterConfig())],
    hooks: [{ afterVerify: (event) => void verified.push(event), afterSettle: (event) => void settled.push(event) }],
  })
  facilitatorServer = await startNodeHttpServer(facilitator)
})
afterAll(async () => {
  await Promise.all(shops.map((shop) => shop.close()))
  await facilitatorServer?.close()
  await world?.stop()
})

/** The paid route of every shop: it answers only when the middleware let the request through. */
function weather(_req: express.Request, res: express.Response) {
  res.json({ weather: 'sunny' })
}

const balanceOf = (address: `0x${string}`) =>
  world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>

describe('official v2 stack: @x402/express + @x402/fetch through our facilitator', () => {
  let shop: LoopbackServer
  beforeAll(async () => {
    const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorServer.url }))
    server.register('eip155:84532', new ExactEvmServerScheme())
    const app = express()
    app.use(
      paymentMiddleware(
        {
          'GET /weather': {
            accepts: {
              scheme: 'exact',
              network: 'eip155:84532',
              payTo: world.payTo,
              // An explicit asset: the middleware's USDC table knows nothing of our test token.
              price: { amount: PRICE.toString(), asset: world.token.address, extra: { name: world.token.name, version: world.token.version } },
            },
            description: 'Weather',
            mimeType: 'application/json',
          },
        },
        server,
      ),
    )
    app.get('/weather', weather)
    shop = await listen(app)
    shops.push(shop)
  })

  it('answers 402 with a PAYMENT-REQUIRED challenge for our token', async () => {
    const response = await fetch(`${shop.url}/weather`)
    expect(response.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(challenge).toMatchObject({
      x402Version: 2,
      accepts: [{ scheme: 'exact', network: 'eip155:84532', amount: PRICE.toString(), asset: world.token.address, payTo: world.payTo }],
    })
  })

  it('pays: 402, then payment, then 200 with PAYMENT-RESPONSE, and the tokens moved on chain', async () => {
    const payer = await world.newPayer(1_000_000n)
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmClientScheme(payer))
    const pay = wrapFetchWithPayment(fetch, client)
    const before = await balanceOf(world.payTo)
    const verifiedBefore = verified.length

    const response = await pay(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny' })
    const settlement = settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'eip155:84532', payer: payer.address })

    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })
    expect(receipt.status).toBe('success')
    expect(await balanceOf(world.payTo)).toBe(before + PRICE)
    expect(await balanceOf(payer.address)).toBe(1_000_000n - PRICE)
    // The middleware reached our facilitator over HTTP for both steps, as v2.
    expect(verified.slice(verifiedBefore).map((e) => [e.request.x402Version, e.result.isValid])).toEqual([[2, true]])
    expect(settled.at(-1)?.result.transaction).toBe(settlement.transaction)
  })

  it('a replayed PAYMENT-SIGNATURE is refused with 402 after its settlement', async () => {
    const payer = await world.newPayer(1_000_000n)
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmClientScheme(payer))
    let header: string | null = null
    // Record the payment the official client sends, to send it again by hand.
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init)
      header ??= request.headers.get('PAYMENT-SIGNATURE')
      return fetch(request)
    }
    expect((await wrapFetchWithPayment(recording, client)(`${shop.url}/weather`)).status).toBe(200)
    expect(header).toEqual(expect.any(String))
    const settledBefore = settled.length
    const balance = await balanceOf(payer.address)

    const replay = await fetch(`${shop.url}/weather`, { headers: { 'PAYMENT-SIGNATURE': header! } })
    expect(replay.status).toBe(402)
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_nonce_already_used' })
    expect(settled.length).toBe(settledBefore)
    expect(await balanceOf(payer.address)).toBe(balance)
  })

  it('a payer without funds gets 402 and nothing is settled', async () => {
    const broke = await world.newPayer(0n)
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmClientScheme(broke))
    const settledBefore = settled.length
    const response = await wrapFetchWithPayment(fetch, client)(`${shop.url}/weather`)
    expect(response.status).toBe(402)
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'insufficient_funds' })
    expect(settled.length).toBe(settledBefore)
  })
})

describe('official v1 stack: x402-express + x402-fetch through our facilitator', () => {
  let shop: LoopbackServer
  beforeAll(async () => {
    const app = express()
    app.use(
      paymentMiddlewareV1(
        world.payTo,
        {
          'GET /weather': {
            network: 'base-sepolia',
            // x402 v1 would pick Base Sepolia's USDC for a money price: name our token explicitly.
            price: {
              amount: PRICE.toString(),
              asset: { address: world.token.address, decimals: 6, eip712: { name: world.token.name, version: world.token.version } },
            },
            config: { description: 'Weather', mimeType: 'application/json' },
          },
        },
        { url: facilitatorServer.url as `${string}://${string}` },
      ),
    )
    app.get('/weather', weather)
    shop = await listen(app)
    shops.push(shop)
  })

  /** A viem wallet with public actions (x402 v1's SignerWallet) on chain 84532, which x402 v1 calls `base-sepolia`. */
  const wallet = (payer: LocalAccount) =>
    createWalletClient({ account: payer, chain: world.node.chain, transport: http(world.node.rpcUrl) }).extend(publicActions)

  it('answers 402 with the v1 challenge for our token on base-sepolia', async () => {
    const response = await fetch(`${shop.url}/weather`)
    expect(response.status).toBe(402)
    expect(await response.json()).toMatchObject({
      x402Version: 1,
      // x402-express writes addresses checksummed.
      accepts: [{ scheme: 'exact', network: 'base-sepolia', maxAmountRequired: PRICE.toString(), asset: getAddress(world.token.address), payTo: getAddress(world.payTo) }],
    })
  })

  it('pays: 402, then X-PAYMENT, then 200 with X-PAYMENT-RESPONSE, and the tokens moved on chain', async () => {
    const payer = await world.newPayer(1_000_000n)
    const pay = wrapFetchWithPaymentV1(fetch, wallet(payer))
    const before = await balanceOf(world.payTo)
    const verifiedBefore = verified.length

    const response = await pay(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny' })
    const settlement = settleResponseSchema.parse(decodeXPaymentResponse(response.headers.get('X-PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'base-sepolia', payer: payer.address })

    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })
    expect(receipt.status).toBe('success')
    expect(await balanceOf(world.payTo)).toBe(before + PRICE)
    expect(verified.slice(verifiedBefore).map((e) => [e.request.x402Version, e.result.isValid])).toEqual([[1, true]])
  })
})
