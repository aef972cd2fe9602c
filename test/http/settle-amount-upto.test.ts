/**
 * Who may settle an `upto` payment, over HTTP on anvil (the real Permit2 and the x402 proxies at their
 * canonical addresses, payloads from the official @x402/evm clients): the payer itself posting its own
 * payload for 0 to a handler without authentication is refused and nothing is sent; the resource
 * server's authenticated settle then charges the usage; payments whose amount the payer signed
 * (EIP-3009 and Permit2 `exact`) settle through the open handler as before.
 */
import { x402Client } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import type { LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { evmSchemes } from '../../src/evm/index.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createHandler, createNodeListener } from '../../src/http/index.js'
import { SETTLE_REQUIRES_AUTHENTICATION } from '../../src/facilitator/settle-caller.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { listen, type LoopbackServer } from '../support/listen.js'
import { installPermit2, newPermit2Payer } from '../support/permit2-contracts.js'

let world: EvmFixture
let facilitator: ReturnType<typeof createFacilitator>
let facilitatorAddress: string
let open: LoopbackServer
let authed: LoopbackServer
const SHOP_TOKEN = 'shop-token-0123456789'

beforeAll(async () => {
  world = await startEvmFixture()
  await installPermit2(world.node)
  facilitator = createFacilitator({ schemes: evmSchemes(world.adapterConfig()) })
  await world.warmUp(facilitator)
  const kind = (await facilitator.supported()).kinds.find((k) => k.scheme === 'upto')
  facilitatorAddress = (kind?.extra as { facilitatorAddress: string }).facilitatorAddress
  // One facilitator behind two handlers: the quick start's (no authentication), and one with API tokens.
  open = await listen(createNodeListener(createHandler(facilitator)))
  authed = await listen(createNodeListener(createHandler(facilitator, { authenticate: (request) => request.headers.get('authorization') === `Bearer ${SHOP_TOKEN}` })))
}, 120_000)
afterAll(async () => {
  await Promise.all([open?.close(), authed?.close()])
  await facilitator?.close()
  await world?.stop()
})

const uptoRequirements = (): PaymentRequirementsV2 =>
  world.requirementsV2({ scheme: 'upto', amount: '5000', extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2', facilitatorAddress } })

async function officialPayload(payer: LocalAccount, requirements: PaymentRequirementsV2, scheme: 'upto' | 'exact'): Promise<PaymentPayload> {
  const client = new x402Client().setSpendControls(false).register('eip155:84532', scheme === 'upto' ? new UptoEvmScheme(payer) : new ExactEvmScheme(payer))
  return (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://example.test/metered', description: 'metered', mimeType: 'application/json' },
    accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }],
  })) as PaymentPayload
}

async function post(server: LoopbackServer, route: 'verify' | 'settle', body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/** Transactions the facilitator's signers have sent (pending included): unchanged means nothing was sent. */
const sentByFacilitator = async () => {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}

describe('upto settles over HTTP', () => {
  it('a payer settling its own upto payment for 0 on an open handler is refused and nothing is sent; the resource server then charges its usage', async () => {
    const payer = await newPermit2Payer(world)
    const requirements = uptoRequirements()
    const paymentPayload = await officialPayload(payer, requirements, 'upto')
    const maximum = { x402Version: 2, paymentPayload, paymentRequirements: requirements }
    // Verify stays open: the resource server checks the payment before doing the work.
    expect((await post(open, 'verify', maximum)).json).toMatchObject({ isValid: true })

    const sent = await sentByFacilitator()
    const payee = await tokenBalance(world.node, world.token, requirements.payTo as `0x${string}`)
    const grab = await post(open, 'settle', { ...maximum, paymentRequirements: { ...requirements, amount: '0' } })
    expect(grab.status).toBe(200)
    expect(grab.json).toMatchObject({ success: false, errorReason: SETTLE_REQUIRES_AUTHENTICATION, amount: '0', transaction: '' })
    expect(grab.json.errorMessage).toMatch(/"upto" settle request chooses the amount charged/)
    expect(await sentByFacilitator()).toBe(sent)

    // Without the token the authenticated handler says 401; with it, the usage is charged (not refused as a duplicate).
    expect((await post(authed, 'settle', { ...maximum, paymentRequirements: { ...requirements, amount: '3000' } })).status).toBe(401)
    const charged = await post(authed, 'settle', { ...maximum, paymentRequirements: { ...requirements, amount: '3000' } }, { authorization: `Bearer ${SHOP_TOKEN}` })
    expect(charged.json).toMatchObject({ success: true, amount: '3000' })
    expect(await tokenBalance(world.node, world.token, requirements.payTo as `0x${string}`)).toBe(payee + 3000n)
  })

  it('an open handler still settles payments whose amount the payer signed: EIP-3009 and Permit2 exact', async () => {
    const eip3009Payer = await world.newPayer(10_000n)
    const eip3009 = world.requirementsV2({ amount: '1000' })
    const eip3009Body = { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: eip3009Payer, requirements: eip3009 }), paymentRequirements: eip3009 }
    expect((await post(open, 'settle', eip3009Body)).json).toMatchObject({ success: true })

    const permit2Payer = await newPermit2Payer(world)
    const permit2 = world.requirementsV2({ amount: '1000', extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' } })
    const permit2Body = { x402Version: 2, paymentPayload: await officialPayload(permit2Payer, permit2, 'exact'), paymentRequirements: permit2 }
    expect((await post(open, 'settle', permit2Body)).json).toMatchObject({ success: true })
  })
})
