/**
 * Differential test of EVM `exact` through Permit2: the same /verify requests go to our facilitator
 * (exactEvm) and to the official one (@x402/evm ExactEvmScheme under @x402/core's x402Facilitator)
 * on one anvil with Permit2 and the x402 exact proxy at their canonical addresses. Payloads come from
 * the official client; hostile variants are re-signed here. Same comparison as the EIP-3009 file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { LocalAccount } from 'viem'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/index.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { installPermit2, newPermit2Payer, signPermit2Authorization, type Permit2AuthorizationFields } from '../support/permit2-contracts.js'
import { officialSigner } from '../support/batch-differential.js'
import { exactDifferential, invalid, type Body, type Json } from '../support/exact-differential.js'

let world: EvmFixture
let ours: ReturnType<typeof createFacilitator>
let official: x402Facilitator
const { printTable, sameVerify, differentVerify } = exactDifferential(() => ({ ours, official }))

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  const [ourKey, theirKey] = world.signers as [LocalAccount, LocalAccount]
  ours = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [ourKey] }))] })
  official = new x402Facilitator().register('eip155:84532', new ExactEvmScheme(officialSigner(world, theirKey)))
  await world.warmUp(ours)
}, 120_000)

afterAll(async () => {
  printTable()
  await ours?.close()
  await world?.stop()
})

const requirements = (overrides: Partial<PaymentRequirementsV2> = {}): PaymentRequirementsV2 =>
  world.requirementsV2({ extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' }, ...overrides })
const body = (paymentPayload: Json, reqs: PaymentRequirementsV2 = requirements()): Body => ({ x402Version: 2, paymentPayload, paymentRequirements: reqs as unknown as Json })
const now = () => Math.floor(Date.now() / 1000)

type PermitFields = Permit2AuthorizationFields

/** A payload made by the official client. */
async function officialPayload(payer: LocalAccount, reqs = requirements()): Promise<Json> {
  const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmClient(payer))
  return (await client.createPaymentPayload({ x402Version: 2, resource: { url: 'https://example.test/paid', description: 'paid', mimeType: 'application/json' }, accepts: [{ ...reqs, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: reqs.extra ?? {} }] })) as unknown as Json
}

/** The official payload with some permit fields changed, re-signed by `signer` (the payer by default). */
async function hostile(payer: LocalAccount, change: (fields: PermitFields) => PermitFields, signer: LocalAccount = payer): Promise<Json> {
  const base = await officialPayload(payer)
  const fields = change(structuredClone((base.payload as { permit2Authorization: PermitFields }).permit2Authorization))
  const signature = await signPermit2Authorization(world, signer, fields)
  return { ...base, payload: { signature, permit2Authorization: fields } }
}

const stranger = () => privateKeyToAccount(generatePrivateKey())

describe('exact through Permit2 /verify: ours against the official facilitator, same requests', () => {
  it('a valid payment from the official client', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: valid', body(await officialPayload(payer)), { ok: true, reason: null, payer: payer.address })
  })

  it('signed by another key than `from`', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: signature by another key', body(await hostile(payer, (f) => f, stranger())), invalid('invalid_permit2_signature', payer.address))
  })

  it('a permitted amount below the requirements', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: amount below', body(await hostile(payer, (f) => ({ ...f, permitted: { ...f.permitted, amount: '999' } }))), invalid('permit2_amount_mismatch', payer.address))
  })

  it('witness.to is not payTo', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: wrong witness.to', body(await hostile(payer, (f) => ({ ...f, witness: { ...f.witness, to: stranger().address } }))), invalid('invalid_permit2_recipient_mismatch', payer.address))
  })

  it('a spender other than the x402 exact proxy', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: wrong spender', body(await hostile(payer, (f) => ({ ...f, spender: stranger().address }))), invalid('invalid_permit2_spender', payer.address))
  })

  it('a permitted token other than the asset', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: wrong token', body(await hostile(payer, (f) => ({ ...f, permitted: { ...f.permitted, token: stranger().address } }))), invalid('permit2_token_mismatch', payer.address))
  })

  it('a deadline that has passed', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: deadline passed', body(await hostile(payer, (f) => ({ ...f, deadline: String(now() - 10) }))), invalid('permit2_deadline_expired', payer.address))
  })

  it('witness.validAfter in the future', async () => {
    const payer = await newPermit2Payer(world)
    await sameVerify('permit2: validAfter in the future', body(await hostile(payer, (f) => ({ ...f, witness: { ...f.witness, validAfter: String(now() + 3600) } }))), invalid('permit2_not_yet_valid', payer.address))
  })

  it('a payer who has not approved Permit2', async () => {
    const payer = await newPermit2Payer(world, { approve: 0n })
    await sameVerify('permit2: no allowance', body(await officialPayload(payer)), invalid('permit2_allowance_required', payer.address))
  })

  it('a payer without the funds', async () => {
    const payer = await newPermit2Payer(world, { amount: 10n })
    await sameVerify('permit2: balance too low', body(await officialPayload(payer)), invalid('permit2_insufficient_balance', payer.address))
  })

  it('a Permit2 nonce already used on chain: ours names it, the official facilitator calls it a failed simulation', async () => {
    const payer = await newPermit2Payer(world)
    const payment = await officialPayload(payer)
    expect(await official.settle(payment as never, requirements() as never)).toMatchObject({ success: true })
    // Ours reads Permit2's nonce bitmap and names the cause (a documented code of ours); the official facilitator sees only the reverting simulation.
    await differentVerify('permit2: nonce already used', body(payment), invalid('permit2_nonce_already_used', payer.address), invalid('permit2_simulation_failed', payer.address))
  })
})

describe('exact through Permit2: malformed payloads and settle', () => {
  it('a permit without its witness, or with a non-numeric amount: what each answers', async () => {
    const payer = await newPermit2Payer(world)
    const base = await officialPayload(payer)
    const permit = (base.payload as { permit2Authorization: Json }).permit2Authorization
    const { witness: _witness, ...withoutWitness } = permit
    const noWitness = { ...base, payload: { ...(base.payload as Json), permit2Authorization: withoutWitness } }
    const badAmount = { ...base, payload: { ...(base.payload as Json), permit2Authorization: { ...permit, permitted: { ...(permit.permitted as Json), amount: 'ten' } } } }
    // Ours refuses a payload that is not a Permit2 authorization before naming anyone as its payer.
    await differentVerify('permit2: missing witness', body(noWitness), invalid('invalid_payload', null), 'throws')
    await differentVerify('permit2: amount not a number', body(badAmount), invalid('invalid_payload', null), 'throws')
  })

  it('a valid payment settles on both, each side its own: the same payer, network and transaction form', async () => {
    for (const side of ['ours', 'official'] as const) {
      const payer = await newPermit2Payer(world)
      const payment = await officialPayload(payer)
      const r = side === 'ours' ? await ours.settle(body(payment)) : await official.settle(payment as never, requirements() as never)
      expect({ success: r.success, errorReason: r.errorReason ?? null, payer: r.payer, network: r.network, transaction: /^0x[0-9a-f]{64}$/.test(r.transaction) }, side)
        .toEqual({ success: true, errorReason: null, payer: payer.address, network: 'eip155:84532', transaction: true })
    }
  })
})
