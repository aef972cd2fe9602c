/**
 * Interop of the `eip2612GasSponsoring` extension: a resource server built with the official
 * @x402/express middleware asks for a Permit2 payment and declares the extension; the official
 * @x402/fetch client, whose payer never approved Permit2, signs an EIP-2612 permit; our
 * facilitator (over HTTP, the node:http example) settles it through the proxy's settleWithPermit.
 * Real Permit2 and our proxies at their canonical addresses on anvil.
 */
import express from 'express'
import { decodeFunctionData, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { x402Client } from '@x402/core/client'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/express'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { settleResponseSchema } from '../../src/schemas/messages.js'
import { EIP2612_GAS_SPONSORING, evmSchemes, exactPermit2ProxyAbi, PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from '../../src/evm/index.js'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { fundPayer, tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'
import { installPermit2 } from '../support/permit2-contracts.js'

const PRICE = 10_000n

let world: EvmFixture
let facilitatorServer: { url: string; close(): Promise<void> }
let shop: LoopbackServer

beforeAll(async () => {
  world = await startEvmFixture()
  await installPermit2(world.node)
  facilitatorServer = await startNodeHttpServer(createFacilitator({ schemes: evmSchemes(world.adapterConfig()) }))
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorServer.url }))
  server.register('eip155:84532', new ExactEvmServerScheme())
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /report': {
          accepts: {
            scheme: 'exact',
            network: 'eip155:84532',
            payTo: world.payTo,
            price: { amount: PRICE.toString(), asset: world.token.address, extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' } },
          },
          description: 'Report',
          mimeType: 'application/json',
          // As @x402/extensions' declareEip2612GasSponsoringExtension() declares it.
          extensions: { [EIP2612_GAS_SPONSORING]: { info: { description: 'The facilitator accepts EIP-2612 gasless Permit to `Permit2` canonical contract.', version: '1' }, schema: { type: 'object' } } },
        },
      },
      server,
    ),
  )
  app.get('/report', (_req, res) => void res.json({ report: 'ready' }))
  shop = await listen(app)
}, 120_000)
afterAll(async () => {
  await shop?.close()
  await facilitatorServer?.close()
  await world?.stop()
})

describe('official v2 stack with eip2612GasSponsoring through our facilitator', () => {
  it('the official facilitator client reads eip2612GasSponsoring in our /supported', async () => {
    const supported = await new HTTPFacilitatorClient({ url: facilitatorServer.url }).getSupported()
    expect(supported.extensions).toContain(EIP2612_GAS_SPONSORING)
    expect(supported.kinds).toContainEqual(expect.objectContaining({ x402Version: 2, scheme: 'exact', network: 'eip155:84532' }))
  })

  it('a payer that never approved Permit2 pays: 402, permit + Permit2 payment, 200, tokens moved once through settleWithPermit', async () => {
    const payer = privateKeyToAccount(generatePrivateKey())
    await fundPayer(world.node, world.token, payer.address, 1_000_000n)
    const allowance = () => world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'allowance', args: [payer.address, PERMIT2_ADDRESS] })
    expect(await allowance()).toBe(0n)
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmClientScheme(payer, { rpcUrl: world.node.rpcUrl }))
    const before = await tokenBalance(world.node, world.token, world.payTo)

    const response = await wrapFetchWithPayment(fetch, client)(`${shop.url}/report`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ report: 'ready' })
    const settlement = settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'eip155:84532', payer: payer.address })

    const tx = await world.node.publicClient.getTransaction({ hash: settlement.transaction as Hex })
    expect(tx.to?.toLowerCase()).toBe(X402_EXACT_PERMIT2_PROXY.toLowerCase())
    expect(decodeFunctionData({ abi: exactPermit2ProxyAbi, data: tx.input }).functionName).toBe('settleWithPermit')
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + PRICE)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - PRICE)
    // The payer sent nothing itself (no gas money, no approve): the facilitator paid for the permit.
    expect(await world.node.publicClient.getTransactionCount({ address: payer.address })).toBe(0)
  })
})
