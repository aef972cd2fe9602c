/**
 * Interop on EVM through Permit2: a resource server built with the official @x402/express
 * middleware prices one route with `exact` through Permit2 and one with `upto` (the handler
 * settles what it used, through the official settlement overrides), our facilitator serves it over
 * real HTTP (createHandler + createNodeServer, `evmSchemes` on anvil with the real Permit2 and our
 * proxies at their canonical addresses), and the official @x402/fetch client pays with the
 * official @x402/evm client schemes (exact and upto registered together).
 */
import express from 'express'
import { erc20Abi, parseEventLogs, type Hex, type LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { x402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware, setSettlementOverrides } from '@x402/express'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { UptoEvmScheme as UptoEvmClientScheme } from '@x402/evm/upto/client'
import { UptoEvmScheme as UptoEvmServerScheme } from '@x402/evm/upto/server'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import type { SettleEvent, VerifyEvent } from '../../src/core/hooks.js'
import { evmSchemes, X402_EXACT_PERMIT2_PROXY, X402_UPTO_PERMIT2_PROXY } from '../../src/evm/index.js'
import { settleResponseSchema } from '../../src/schemas/messages.js'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'
import { installPermit2, newPermit2Payer } from '../support/permit2-contracts.js'

const NETWORK = 'eip155:84532'
const PRICE = 10_000n // the exact route: 0.01 of a 6-decimal token
const MAXIMUM = 50_000n // the upto route's maximum
const USAGE = 12_345n // what one metered request uses by default (< MAXIMUM)
const FUNDS = 1_000_000n

let world: EvmFixture
let facilitatorServer: { url: string; close(): Promise<void> }
let shop: LoopbackServer
/** The resource server's credential at the facilitator. */
const FACILITATOR_TOKEN = 'shop-token-0123456789abcdef'
const verified: VerifyEvent[] = []
const settled: SettleEvent[] = []

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  const facilitator = createFacilitator({
    schemes: evmSchemes(world.adapterConfig()),
    hooks: [{ afterVerify: (event) => void verified.push(event), afterSettle: (event) => void settled.push(event) }],
  })
  await world.warmUp(facilitator)
  // The resource server authenticates to the facilitator, as it must for upto: an anonymous settle of
  // an upto payment would let a payer set its own charge (settle_requires_authentication).
  facilitatorServer = await startNodeHttpServer(facilitator, { authenticate: (request) => request.headers.get('authorization') === `Bearer ${FACILITATOR_TOKEN}` })
  const headers = { Authorization: `Bearer ${FACILITATOR_TOKEN}` }
  const server = new x402ResourceServer(
    new HTTPFacilitatorClient({ url: facilitatorServer.url, createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }) }),
  )
  server.register(NETWORK, new ExactEvmServerScheme())
  server.register(NETWORK, new UptoEvmServerScheme())
  // An explicit asset: the official USDC tables know nothing of our test token.
  const token = { asset: world.token.address, extra: { name: world.token.name, version: world.token.version } }
  const app = express()
  app.use(
    paymentMiddleware(
      {
        'GET /report': {
          accepts: {
            scheme: 'exact',
            network: NETWORK,
            payTo: world.payTo,
            price: { amount: PRICE.toString(), ...token, extra: { ...token.extra, assetTransferMethod: 'permit2' } },
          },
          description: 'A report at a fixed price, paid through Permit2',
          mimeType: 'application/json',
        },
        'GET /generate': {
          accepts: { scheme: 'upto', network: NETWORK, payTo: world.payTo, price: { amount: MAXIMUM.toString(), ...token } },
          description: 'Metered generation: pay for what you use, up to a maximum',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  )
  app.get('/report', (_req, res) => void res.json({ report: 'ready' }))
  // The metered route tells the middleware what it used (?used=N, USAGE by default) through the
  // official settlement overrides; the middleware settles that amount instead of the maximum.
  app.get('/generate', (req, res) => {
    const used = typeof req.query.used === 'string' ? req.query.used : USAGE.toString()
    setSettlementOverrides(res, { amount: used })
    res.json({ tokens: Number(used) })
  })
  shop = await listen(app)
}, 120_000)
afterAll(async () => {
  await shop?.close()
  await facilitatorServer?.close()
  await world?.stop()
})

const balanceOf = (address: Hex) => tokenBalance(world.node, world.token, address)

/** A payer with FUNDS of the token, gas money, and (unless `approve: false`) Permit2 approved for everything. */
const permit2Payer = (options: { approve?: boolean } = {}): Promise<LocalAccount> => newPermit2Payer(world, { amount: FUNDS, approve: options.approve === false ? 0n : undefined })

/** The official paying fetch of `payer`, with the exact and upto EVM client schemes registered. */
function payingFetch(payer: LocalAccount, recordTo?: string[], statuses?: number[]) {
  const client = new x402Client()
    .setSpendControls(false)
    .register(NETWORK, new ExactEvmClientScheme(payer))
    .register(NETWORK, new UptoEvmClientScheme(payer))
  // Records each PAYMENT-SIGNATURE the client sends (to look at what it signed) and each status it got.
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    const header = request.headers.get('PAYMENT-SIGNATURE')
    if (header && recordTo) recordTo.push(header)
    const response = await fetch(request)
    statuses?.push(response.status)
    return response
  }
  return wrapFetchWithPayment(recording, client)
}

const settlementOf = (response: Response) => settleResponseSchema.parse(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') ?? ''))

async function transactionOf(hash: string) {
  const [transaction, receipt] = await Promise.all([
    world.node.publicClient.getTransaction({ hash: hash as Hex }),
    world.node.publicClient.getTransactionReceipt({ hash: hash as Hex }),
  ])
  return { transaction, receipt, transfers: parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: 'Transfer' }) }
}

/** How many transactions the facilitator's signers have sent (pending included): unchanged means nothing was sent. */
const sentByFacilitator = async () => {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}

async function supportedUptoFacilitator(): Promise<string> {
  const supported = (await (await fetch(`${facilitatorServer.url}/supported`, { headers: { authorization: `Bearer ${FACILITATOR_TOKEN}` } })).json()) as { kinds: { scheme: string; network: string; extra?: { facilitatorAddress?: string } }[] }
  const kind = supported.kinds.find((k) => k.scheme === 'upto' && k.network === NETWORK)
  if (!kind?.extra?.facilitatorAddress) throw new Error('our /supported lists no upto kind with a facilitatorAddress')
  return kind.extra.facilitatorAddress
}

describe('official @x402/express + @x402/fetch, exact through Permit2, through our facilitator', () => {
  it('answers 402 with a Permit2 exact challenge for our token', async () => {
    const response = await fetch(`${shop.url}/report`)
    expect(response.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(challenge.accepts).toEqual([
      expect.objectContaining({
        scheme: 'exact',
        network: NETWORK,
        amount: PRICE.toString(),
        asset: world.token.address,
        payTo: world.payTo,
        extra: expect.objectContaining({ assetTransferMethod: 'permit2' }),
      }),
    ])
  })

  it('pays: 402, then a Permit2 payment, then 200; the exact proxy moved the price from the payer to payTo', async () => {
    const payer = await permit2Payer()
    const signatures: string[] = []
    const before = await balanceOf(world.payTo)
    const verifiedBefore = verified.length

    const statuses: number[] = []
    const response = await payingFetch(payer, signatures, statuses)(`${shop.url}/report`)
    expect(statuses).toEqual([402, 200])
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ report: 'ready' })
    // The official client signed a Permit2 permit for the exact proxy, not an EIP-3009 authorization.
    expect(signatures).toHaveLength(1)
    const sent = JSON.parse(Buffer.from(signatures[0]!, 'base64').toString('utf8')) as { payload: { permit2Authorization?: { spender: string } } }
    expect(sent.payload.permit2Authorization?.spender).toBe(X402_EXACT_PERMIT2_PROXY)

    const settlement = settlementOf(response)
    expect(settlement).toMatchObject({ success: true, network: NETWORK, payer: payer.address, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
    const { transaction, receipt, transfers } = await transactionOf(settlement.transaction)
    expect(receipt.status).toBe('success')
    expect(transaction.to?.toLowerCase()).toBe(X402_EXACT_PERMIT2_PROXY.toLowerCase())
    expect(transfers.map((t) => [t.args.from, t.args.to, t.args.value])).toEqual([[payer.address, world.payTo, PRICE]])
    expect(await balanceOf(world.payTo)).toBe(before + PRICE)
    expect(await balanceOf(payer.address)).toBe(FUNDS - PRICE)
    expect(verified.slice(verifiedBefore).map((e) => [e.request.paymentRequirements.scheme, e.result.isValid])).toEqual([['exact', true]])
  })

  it('a payer without Permit2 allowance gets 412 from the official resource server (our verify: permit2_allowance_required), and nothing moves', async () => {
    const payer = await permit2Payer({ approve: false })
    const sent = await sentByFacilitator()
    const before = await balanceOf(world.payTo)

    const response = await payingFetch(payer)(`${shop.url}/report`)
    expect(response.status).toBe(412)
    expect(decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')).toMatchObject({ error: 'permit2_allowance_required' })
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'permit2_allowance_required', payer: payer.address })
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(world.payTo)).toBe(before)
    expect(await balanceOf(payer.address)).toBe(FUNDS)
  })
})

describe('official @x402/express + @x402/fetch, upto through Permit2, through our facilitator', () => {
  it('answers 402 with an upto challenge for the maximum whose extra.facilitatorAddress is the one our /supported lists', async () => {
    const facilitatorAddress = await supportedUptoFacilitator()
    expect(world.signers.map((s) => s.address)).toContain(facilitatorAddress)
    const response = await fetch(`${shop.url}/generate`)
    expect(response.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(challenge.accepts).toEqual([
      {
        scheme: 'upto',
        network: NETWORK,
        amount: MAXIMUM.toString(),
        asset: world.token.address,
        payTo: world.payTo,
        maxTimeoutSeconds: expect.any(Number),
        extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2', facilitatorAddress },
      },
    ])
  })

  it('pays: the client authorizes the maximum, the route settles its usage U < M; exactly U moves, from the named signer, and PAYMENT-RESPONSE says amount U', async () => {
    const facilitatorAddress = await supportedUptoFacilitator()
    const payer = await permit2Payer()
    const signatures: string[] = []
    const before = await balanceOf(world.payTo)
    const settledBefore = settled.length

    const statuses: number[] = []
    const response = await payingFetch(payer, signatures, statuses)(`${shop.url}/generate`)
    expect(statuses).toEqual([402, 200])
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ tokens: Number(USAGE) })
    // What the client signed: the maximum, for the upto proxy, naming our facilitator in the witness.
    const sent = JSON.parse(Buffer.from(signatures[0]!, 'base64').toString('utf8')) as {
      payload: { permit2Authorization: { spender: string; permitted: { amount: string }; witness: { facilitator: string } } }
    }
    expect(sent.payload.permit2Authorization).toMatchObject({ spender: X402_UPTO_PERMIT2_PROXY, permitted: { amount: MAXIMUM.toString() }, witness: { facilitator: facilitatorAddress } })

    const settlement = settlementOf(response)
    expect(settlement).toMatchObject({ success: true, network: NETWORK, payer: payer.address, amount: USAGE.toString(), transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
    const { transaction, receipt, transfers } = await transactionOf(settlement.transaction)
    expect(receipt.status).toBe('success')
    expect(transaction.to?.toLowerCase()).toBe(X402_UPTO_PERMIT2_PROXY.toLowerCase())
    expect(transaction.from.toLowerCase()).toBe(facilitatorAddress.toLowerCase())
    expect(transfers.map((t) => [t.args.from, t.args.to, t.args.value])).toEqual([[payer.address, world.payTo, USAGE]])
    expect(await balanceOf(world.payTo)).toBe(before + USAGE)
    expect(await balanceOf(payer.address)).toBe(FUNDS - USAGE)
    // The middleware's settle request to our facilitator carried the usage, not the maximum.
    expect(settled.slice(settledBefore).map((e) => [e.request.paymentRequirements.amount, e.result.success])).toEqual([[USAGE.toString(), true]])
  })

  it('a zero usage settles as success with no transaction and amount 0: nothing is sent, nothing moves', async () => {
    const payer = await permit2Payer()
    const sent = await sentByFacilitator()
    const before = await balanceOf(world.payTo)
    const settledBefore = settled.length

    const response = await payingFetch(payer)(`${shop.url}/generate?used=0`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ tokens: 0 })
    expect(settlementOf(response)).toMatchObject({ success: true, network: NETWORK, payer: payer.address, transaction: '', amount: '0' })
    // The middleware did ask our facilitator to settle, with amount 0.
    expect(settled.slice(settledBefore).map((e) => [e.request.paymentRequirements.amount, e.result])).toEqual([
      ['0', { success: true, transaction: '', network: NETWORK, payer: payer.address, amount: '0' }],
    ])
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(world.payTo)).toBe(before)
    expect(await balanceOf(payer.address)).toBe(FUNDS)
  })

  it('a payer without Permit2 allowance gets 412 on the upto route too, and nothing moves', async () => {
    const payer = await permit2Payer({ approve: false })
    const sent = await sentByFacilitator()
    const response = await payingFetch(payer)(`${shop.url}/generate`)
    expect(response.status).toBe(412)
    expect(decodePaymentRequiredHeader(response.headers.get('PAYMENT-REQUIRED') ?? '')).toMatchObject({ error: 'permit2_allowance_required' })
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'permit2_allowance_required', payer: payer.address })
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(FUNDS)
  })

  it('a percentage override ("25%") is resolved by the official resource server against the maximum: exactly a quarter moves', async () => {
    const payer = await permit2Payer()
    const before = await balanceOf(world.payTo)
    const response = await payingFetch(payer)(`${shop.url}/generate?used=${encodeURIComponent('25%')}`)
    expect(response.status).toBe(200)
    const quarter = MAXIMUM / 4n
    const settlement = settlementOf(response)
    expect(settlement).toMatchObject({ success: true, payer: payer.address, amount: quarter.toString() })
    expect((await transactionOf(settlement.transaction)).transfers.map((t) => t.args.value)).toEqual([quarter])
    expect(await balanceOf(world.payTo)).toBe(before + quarter)
    expect(await balanceOf(payer.address)).toBe(FUNDS - quarter)
  })

  it('a usage above the maximum is refused by our settle unsent (invalid_upto_evm_payload_settlement_exceeds_amount): the client gets 402 and not the content', async () => {
    const payer = await permit2Payer()
    const sent = await sentByFacilitator()
    const response = await payingFetch(payer)(`${shop.url}/generate?used=${MAXIMUM + 1n}`)
    expect(response.status).toBe(402)
    expect(await response.json()).toEqual({})
    expect(settlementOf(response)).toMatchObject({ success: false, errorReason: 'invalid_upto_evm_payload_settlement_exceeds_amount', transaction: '' })
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(FUNDS)
  })

  it('a replayed upto PAYMENT-SIGNATURE after its settlement gets 402 and is not charged again', async () => {
    const payer = await permit2Payer()
    const signatures: string[] = []
    expect((await payingFetch(payer, signatures)(`${shop.url}/generate`)).status).toBe(200)
    const before = await balanceOf(world.payTo)
    const sent = await sentByFacilitator()
    const settledBefore = settled.length
    const replay = await fetch(`${shop.url}/generate`, { headers: { 'PAYMENT-SIGNATURE': signatures[0]! } })
    expect(replay.status).toBe(402)
    // Refused at verify (the Permit2 nonce is spent on chain): the handler never ran, no settle was asked.
    expect(decodePaymentRequiredHeader(replay.headers.get('PAYMENT-REQUIRED') ?? '')).toMatchObject({ error: 'permit2_nonce_already_used' })
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'permit2_nonce_already_used', payer: payer.address })
    expect(settled.length).toBe(settledBefore)
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(world.payTo)).toBe(before)
    expect(await balanceOf(payer.address)).toBe(FUNDS - USAGE)
  })

  it('a replayed upto PAYMENT-SIGNATURE after a zero settlement is refused at verify (402, duplicate_settlement): the route does not run again, nothing moves', async () => {
    const payer = await permit2Payer()
    const signatures: string[] = []
    expect((await payingFetch(payer, signatures)(`${shop.url}/generate?used=0`)).status).toBe(200)
    const sent = await sentByFacilitator()
    const settledBefore = settled.length
    const replay = await fetch(`${shop.url}/generate`, { headers: { 'PAYMENT-SIGNATURE': signatures[0]! } })
    expect(replay.status).toBe(402)
    // Nothing on chain marks a zero settlement: our verify asks the settle store, which remembers the
    // permit as spent, so the metered work is not bought again with it (no settle is even asked).
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'duplicate_settlement', payer: payer.address })
    expect(settled.length).toBe(settledBefore)
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(FUNDS)
  })
})

describe('replays through the middleware, exact through Permit2', () => {
  it('a replayed exact Permit2 PAYMENT-SIGNATURE is refused with 402 (permit2_nonce_already_used) after its settlement', async () => {
    const payer = await permit2Payer()
    const signatures: string[] = []
    expect((await payingFetch(payer, signatures)(`${shop.url}/report`)).status).toBe(200)
    const sent = await sentByFacilitator()
    const replay = await fetch(`${shop.url}/report`, { headers: { 'PAYMENT-SIGNATURE': signatures[0]! } })
    expect(replay.status).toBe(402)
    expect(verified.at(-1)?.result).toMatchObject({ isValid: false, invalidReason: 'permit2_nonce_already_used', payer: payer.address })
    expect(await sentByFacilitator()).toBe(sent)
    expect(await balanceOf(payer.address)).toBe(FUNDS - PRICE)
  })
})
