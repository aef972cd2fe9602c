/**
 * Differential test of EVM `upto` (Permit2, v2): /verify, /settle and GET /supported of our facilitator
 * (evmSchemes) against the official one (@x402/evm 2.27 UptoEvmScheme under @x402/core's
 * x402Facilitator) on one anvil with Permit2 and the x402 proxies at their canonical addresses. An upto
 * witness names the facilitator that may settle it, so each side gets the same payment made out to
 * itself (the official client, with the `extra.facilitatorAddress` that side lists); hostile variants
 * are re-signed here. Settles run a payment of each side's own and read the balances around it. Where
 * the answers differ on purpose the case states both answers and why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { X402_EXACT_PERMIT2_PROXY } from '../../src/evm/index.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { newPermit2Payer } from '../support/permit2-contracts.js'
import { exactDifferential, invalid, type Answer, type Body, type Json, type Side } from '../support/exact-differential.js'
import { officialUptoPayload, resignedUpto, settleLabel, settleSeen, startUptoWorld, uptoRequirements, type SettleSeen, type UptoWorld } from '../support/upto-differential.js'
import type { UptoAuthorizationFields } from '../support/permit2-contracts.js'

const SIDES = ['ours', 'official'] as const
const now = () => Math.floor(Date.now() / 1000)
const stranger = () => privateKeyToAccount(generatePrivateKey()).address

let up: UptoWorld
const { table, printTable, sameVerify, differentVerify } = exactDifferential(() => ({ ours: up.ours, official: up.official }))

beforeAll(async () => {
  up = await startUptoWorld()
}, 120_000)

afterAll(async () => {
  printTable()
  await up?.stop()
})

/** Upto requirements (maximum 5000) for `side`'s facilitator. */
const requirements = (side: Side, overrides: Partial<PaymentRequirementsV2> = {}) => uptoRequirements(up.world, up.address[side], overrides)
const body = (paymentPayload: Json, reqs: PaymentRequirementsV2): Body => ({ x402Version: 2, paymentPayload, paymentRequirements: reqs as unknown as Json })
/** The settle request of a resource server that used `amount` of the maximum. */
const used = (reqs: PaymentRequirementsV2, amount: string): PaymentRequirementsV2 => ({ ...reqs, amount })

/** For each side, the official client's payment of `payer` made out to that side, re-signed with `change` (by `signer`) when given. */
async function payments(payer: LocalAccount, change?: (f: UptoAuthorizationFields) => UptoAuthorizationFields, signer: LocalAccount = payer) {
  const made = async (side: Side) => {
    const payment = await officialUptoPayload(payer, requirements(side))
    return change ? resignedUpto(up.world, payment, change, signer) : payment
  }
  return { ours: await made('ours'), official: await made('official') }
}

/** Verify bodies: each side its own payment against its own requirements. */
async function verifyBodies(payer: LocalAccount, change?: (f: UptoAuthorizationFields) => UptoAuthorizationFields, signer?: LocalAccount) {
  const p = await payments(payer, change, signer)
  return { ours: body(p.ours, requirements('ours')), official: body(p.official, requirements('official')) }
}

describe('upto /verify: ours against the official facilitator, the same payment made out to each', () => {
  it('a valid payment from the official upto client: valid, the payer', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: valid', await verifyBodies(payer), { ok: true, reason: null, payer: payer.address })
  })

  it('witness.facilitator is not ours: a stranger, or the other facilitator', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer, (f) => ({ ...f, witness: { ...f.witness, facilitator: stranger() } }))
    await sameVerify('upto: witness.facilitator a stranger', { ours: body(p.ours, requirements('ours')), official: body(p.official, requirements('official')) }, invalid('upto_facilitator_mismatch', payer.address))
    // Each side gets the payment made out to the other (its requirements copied from the other's /supported).
    const q = await payments(payer)
    await sameVerify('upto: witness.facilitator the other side', { ours: body(q.official, requirements('official')), official: body(q.ours, requirements('ours')) }, invalid('upto_facilitator_mismatch', payer.address))
  })

  it('a spender other than the upto proxy: the exact proxy, or a stranger', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: spender the exact proxy', await verifyBodies(payer, (f) => ({ ...f, spender: X402_EXACT_PERMIT2_PROXY })), invalid('invalid_permit2_spender', payer.address))
    await sameVerify('upto: spender a stranger', await verifyBodies(payer, (f) => ({ ...f, spender: stranger() })), invalid('invalid_permit2_spender', payer.address))
  })

  it('a permitted token other than the asset', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: wrong token', await verifyBodies(payer, (f) => ({ ...f, permitted: { ...f.permitted, token: stranger() } })), invalid('permit2_token_mismatch', payer.address))
  })

  it('witness.to is not payTo', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: wrong witness.to', await verifyBodies(payer, (f) => ({ ...f, witness: { ...f.witness, to: stranger() } })), invalid('invalid_permit2_recipient_mismatch', payer.address))
  })

  it('a permitted amount other than the maximum, below or above', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: permitted below the maximum', await verifyBodies(payer, (f) => ({ ...f, permitted: { ...f.permitted, amount: '4999' } })), invalid('permit2_amount_mismatch', payer.address))
    await sameVerify('upto: permitted above the maximum', await verifyBodies(payer, (f) => ({ ...f, permitted: { ...f.permitted, amount: '5001' } })), invalid('permit2_amount_mismatch', payer.address))
  })

  it('signed by another key than `from`', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: signature by another key', await verifyBodies(payer, (f) => f, privateKeyToAccount(generatePrivateKey())), invalid('invalid_permit2_signature', payer.address))
  })

  it('a deadline that has passed, and a validAfter in the future', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: deadline passed', await verifyBodies(payer, (f) => ({ ...f, deadline: String(now() - 10) })), invalid('permit2_deadline_expired', payer.address))
    await sameVerify('upto: validAfter in the future', await verifyBodies(payer, (f) => ({ ...f, witness: { ...f.witness, validAfter: String(now() + 3600) } })), invalid('permit2_not_yet_valid', payer.address))
  })

  it('a payer without the balance, or without the Permit2 allowance', async () => {
    const poor = await newPermit2Payer(up.world, { amount: 10n })
    await sameVerify('upto: balance below the maximum', await verifyBodies(poor), invalid('permit2_insufficient_balance', poor.address))
    const unapproved = await newPermit2Payer(up.world, { approve: 0n })
    await sameVerify('upto: no Permit2 allowance', await verifyBodies(unapproved), invalid('permit2_allowance_required', unapproved.address))
    const short = await newPermit2Payer(up.world, { approve: 4999n })
    await sameVerify('upto: allowance below the maximum', await verifyBodies(short), invalid('permit2_allowance_required', short.address))
  })
})
