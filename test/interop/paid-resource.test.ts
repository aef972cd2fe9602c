/**
 * In-process use in a resource server: examples/paid-resource (node:http +
 * withPayment, no facilitator over HTTP) paid by the official clients,
 * @x402/fetch (v2) and x402-fetch (v1), on EVM (anvil) and Solana (LiteSVM).
 */
import { x402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { ExactSvmScheme } from '@x402/svm/exact/client'
import { createWalletClient, http, publicActions } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeXPaymentResponse, wrapFetchWithPayment as wrapFetchWithPaymentV1 } from 'x402-fetch'
import { startPaidResourceServer } from '../../examples/paid-resource/server.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/index.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import type { PaymentOffer } from '../../src/resource-server/payment-required.js'
import { settleResponseSchema } from '../../src/schemas/messages.js'
import { exactSvm } from '../../src/svm/index.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, type PaymentScenario, startSolanaTestRpc, tokenBalance } from '../support/svm-fixtures.js'

const PRICE = 10_000n // 0.01 of a 6-decimal token

let world: EvmFixture
let chain: LiteSvmRpc
let sol: PaymentScenario
let shop: { url: string; close(): Promise<void> }
let settleCalls = 0

beforeAll(async () => {
  ;[world, chain] = await Promise.all([startEvmFixture(), startSolanaTestRpc()])
  sol = await createPaymentScenario(chain.svm)
  const facilitator = createFacilitator({
    schemes: [
      exactEvm(world.adapterConfig()),
      exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [sol.feePayer], pollIntervalMs: 5 }),
    ],
  })
  const offers: PaymentOffer[] = [
    { scheme: 'exact', network: 'eip155:84532', amount: PRICE.toString(), asset: world.token.address, payTo: world.payTo, extra: { name: world.token.name, version: world.token.version } },
    { scheme: 'exact', network: SOLANA_DEVNET, amount: PRICE.toString(), asset: sol.mint, payTo: sol.payTo, extra: { feePayer: sol.feePayer.address } },
  ]
  // Count settle calls: a refused payment must never reach settlement.
  const counting = { verify: facilitator.verify, settle: async (body: unknown) => (settleCalls++, facilitator.settle(body)) }
  shop = await startPaidResourceServer({ facilitator: counting, offers })
})
afterAll(async () => {
  await shop?.close()
  await Promise.all([world?.stop(), chain?.close()])
})

const evmBalance = (address: `0x${string}`) =>
  world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>

describe('examples/paid-resource: withPayment in-process', () => {
  it('answers 402 with both offers, v2 in PAYMENT-REQUIRED and v1 in the body', async () => {
    const response = await fetch(`${shop.url}/weather`)
    expect(response.status).toBe(402)
    const v2 = decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(v2.accepts.map((a: { network: string }) => a.network)).toEqual(['eip155:84532', SOLANA_DEVNET])
    const v1 = await response.json()
    expect(v1.accepts.map((a: { network: string }) => a.network)).toEqual(['base-sepolia', 'solana-devnet'])
    expect((await fetch(`${shop.url}/elsewhere`)).status).toBe(404)
  })

  it('EVM, v2: @x402/fetch pays and gets PAYMENT-RESPONSE with a mined transaction', async () => {
    const payer = await world.newPayer(1_000_000n)
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmScheme(payer))
    const before = await evmBalance(world.payTo)
    const response = await wrapFetchWithPayment(fetch, client)(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny', paidBy: payer.address })
    const settlement = settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'eip155:84532', payer: payer.address })
    expect((await world.node.publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })).status).toBe('success')
    expect(await evmBalance(world.payTo)).toBe(before + PRICE)
  })

  it('EVM, v1: x402-fetch pays and gets X-PAYMENT-RESPONSE', async () => {
    const payer = await world.newPayer(1_000_000n)
    const wallet = createWalletClient({ account: payer, chain: world.node.chain, transport: http(world.node.rpcUrl) }).extend(publicActions)
    const before = await evmBalance(world.payTo)
    const response = await wrapFetchWithPaymentV1(fetch, wallet)(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    const settlement = settleResponseSchema.parse(decodeXPaymentResponse(response.headers.get('X-PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'base-sepolia', payer: payer.address })
    expect(await evmBalance(world.payTo)).toBe(before + PRICE)
    expect(await evmBalance(payer.address)).toBe(1_000_000n - PRICE)
  })

  it('Solana, v2: @x402/fetch pays and the tokens move', async () => {
    const client = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new ExactSvmScheme(sol.payer, { rpcUrl: chain.url }))
    const before = tokenBalance(chain.svm, sol.payToAta)
    const response = await wrapFetchWithPayment(fetch, client)(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ weather: 'sunny', paidBy: sol.payer.address })
    const settlement = settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: SOLANA_DEVNET, payer: sol.payer.address })
    expect(tokenBalance(chain.svm, sol.payToAta)).toBe(before + PRICE)
  })

  it('Solana, v1: x402-fetch pays against the loopback RPC and the tokens move', async () => {
    const before = tokenBalance(chain.svm, sol.payToAta)
    const pay = wrapFetchWithPaymentV1(fetch, sol.payer, undefined, undefined, { svmConfig: { rpcUrl: chain.url } })
    const response = await pay(`${shop.url}/weather`)
    expect(response.status).toBe(200)
    const settlement = settleResponseSchema.parse(decodeXPaymentResponse(response.headers.get('X-PAYMENT-RESPONSE') ?? ''))
    expect(settlement).toMatchObject({ success: true, network: 'solana-devnet', payer: sol.payer.address })
    expect(tokenBalance(chain.svm, sol.payToAta)).toBe(before + PRICE)
  })

  it('a payer without funds gets 402 and nothing is settled', async () => {
    const broke = await world.newPayer(0n)
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmScheme(broke))
    const settlesBefore = settleCalls
    const response = await wrapFetchWithPayment(fetch, client)(`${shop.url}/weather`)
    expect(response.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(challenge.error).toBe('insufficient_funds')
    expect(settleCalls).toBe(settlesBefore)
  })
})
