/**
 * Interop on Solana: resource servers built with the official middleware
 * (@x402/hono for v2, x402-express for v1) use our facilitator over HTTP (the
 * node:http example), and the official paying clients (@x402/fetch,
 * x402-fetch) pay them with SPL tokens on LiteSVM behind the loopback RPC.
 */
import { getRequestListener } from '@hono/node-server'
import { x402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/hono'
import { ExactSvmScheme as ExactSvmClientScheme } from '@x402/svm/exact/client'
import { ExactSvmScheme as ExactSvmServerScheme } from '@x402/svm/exact/server'
import express from 'express'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { paymentMiddleware as paymentMiddlewareV1 } from 'x402-express'
import { decodeXPaymentResponse, wrapFetchWithPayment as wrapFetchWithPaymentV1 } from 'x402-fetch'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import type { SettleEvent, VerifyEvent } from '../../src/core/hooks.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { settleResponseSchema } from '../../src/schemas/messages.js'
import { exactSvm } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, type PaymentScenario, startSolanaTestRpc, tokenBalance } from '../support/svm-fixtures.js'
import { listen, type LoopbackServer } from '../support/listen.js'

const PRICE = 10_000n // 0.01 of a 6-decimal token

let chain: LiteSvmRpc
let s: PaymentScenario
let facilitatorServer: { url: string; close(): Promise<void> }
const shops: LoopbackServer[] = []
const verified: VerifyEvent[] = []
const settled: SettleEvent[] = []

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  s = await createPaymentScenario(chain.svm)
  const facilitator = createFacilitator({
    schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], pollIntervalMs: 5 })],
    hooks: [{ afterVerify: (event) => void verified.push(event), afterSettle: (event) => void settled.push(event) }],
  })
  facilitatorServer = await startNodeHttpServer(facilitator)
})
afterAll(async () => {
  await Promise.all(shops.map((shop) => shop.close()))
  await facilitatorServer?.close()
  await chain?.close()
})

describe.each([
  ['the client fetches its blockhash', false],
  ['the challenge carries extra.recentBlockhash', true],
])('official v2 stack: @x402/hono + @x402/fetch through our facilitator; %s', (_name, embedBlockhash) => {
  let shop: LoopbackServer
  beforeAll(async () => {
    const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorServer.url }))
    // With rpcUrl the scheme embeds extra.recentBlockhash in the challenge, saving the client a round trip.
    server.register(SOLANA_DEVNET, new ExactSvmServerScheme(embedBlockhash ? { rpcUrl: chain.url } : {}))
    const app = new Hono()
    app.use(
      paymentMiddleware(
        {
          'GET /weather': {
            // Our test mint, not devnet USDC; the fee payer comes from our /supported.
            accepts: { scheme: 'exact', network: SOLANA_DEVNET, payTo: s.payTo, price: { amount: PRICE.toString(), asset: s.mint } },
            description: 'Weather',
            mimeType: 'application/json',
          },
        },
        server,
      ),
    )
    app.get('/weather', (c) => c.json({ weather: 'sunny' }))
    shop = await listen(getRequestListener(app.fetch))
    shops.push(shop)
  })

  it('answers 402 with a challenge naming our fee payer', async () => {
    const response = await fetch(`${shop.url}/weather`)
    expect(response.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(challenge).toMatchObject({
      x402Version: 2,
      accepts: [{ network: SOLANA_DEVNET, amount: PRICE.toString(), asset: s.mint, payTo: s.payTo, extra: { feePayer: s.feePayer.address } }],
    })
    expect(typeof challenge.accepts[0]!.extra.recentBlockhash).toBe(embedBlockhash ? 'string' : 'undefined')
  })

  it('pays: 402, then payment, then 200 with PAYMENT-RESPONSE, and the tokens moved', async () => {
    const client = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new ExactSvmClientScheme(s.payer, { rpcUrl: chain.url }))
    const pay = wrapFetchWithPayment(fetch, client)
    const before = { payer: tokenBalance(chain.svm, s.payerAta), payTo: tokenBalance(chain.svm, s.payToAta) }
    const verifiedBefore = verified.length

    const response = await pay(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny' })
    const settlement = settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: SOLANA_DEVNET, payer: s.payer.address })
    expect(settlement.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/)

    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before.payTo + PRICE)
    expect(tokenBalance(chain.svm, s.payerAta)).toBe(before.payer - PRICE)
    expect(verified.slice(verifiedBefore).map((e) => [e.request.x402Version, e.result.isValid])).toEqual([[2, true]])
    expect(settled.at(-1)?.result.transaction).toBe(settlement.transaction)
  })
})

describe('official v1 stack: x402-express + x402-fetch through our facilitator', () => {
  let shop: LoopbackServer
  beforeAll(async () => {
    const app = express()
    app.use(
      paymentMiddlewareV1(
        s.payTo,
        {
          'GET /weather': {
            network: 'solana-devnet',
            price: { amount: PRICE.toString(), asset: { address: s.mint, decimals: s.decimals } },
            config: { description: 'Weather', mimeType: 'application/json' },
          },
        },
        { url: facilitatorServer.url as `${string}://${string}` },
      ),
    )
    app.get('/weather', (_req, res) => void res.json({ weather: 'sunny' }))
    shop = await listen(app)
    shops.push(shop)
  })

  it('pays: 402, then X-PAYMENT, then 200 with X-PAYMENT-RESPONSE, and the tokens moved', async () => {
    const unpaid = await fetch(`${shop.url}/weather`)
    expect(unpaid.status).toBe(402)
    expect(await unpaid.json()).toMatchObject({
      x402Version: 1,
      accepts: [{ network: 'solana-devnet', maxAmountRequired: PRICE.toString(), asset: s.mint, extra: { feePayer: s.feePayer.address } }],
    })

    // The v1 client builds its transaction against our loopback RPC instead of public devnet.
    const pay = wrapFetchWithPaymentV1(fetch, s.payer, undefined, undefined, { svmConfig: { rpcUrl: chain.url } })
    const before = tokenBalance(chain.svm, s.payToAta)
    const verifiedBefore = verified.length
    const response = await pay(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny' })
    const settlement = settleResponseSchema.parse(decodeXPaymentResponse(response.headers.get('X-PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'solana-devnet', payer: s.payer.address })
    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before + PRICE)
    expect(verified.slice(verifiedBefore).map((e) => [e.request.x402Version, e.result.isValid])).toEqual([[1, true]])
  })
})
