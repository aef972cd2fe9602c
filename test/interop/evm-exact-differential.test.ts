/**
 * Differential test of EVM `exact` (EIP-3009): the same /verify requests (v2 and v1 bodies) go to our
 * facilitator (exactEvm) and to the official one (@x402/evm ExactEvmScheme and ExactEvmSchemeV1 under
 * @x402/core's x402Facilitator, with its documented signer) on one anvil, and what a client sees is
 * compared: isValid, invalidReason and payer. Where the answers differ on purpose the case states both
 * answers and why (a safety rule of ours, or a core rule).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/facilitator'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm, signExactEvmPayment } from '../../src/evm/index.js'
import { deployTestToken, type TestToken } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { officialSigner, shape } from '../support/batch-differential.js'
import { exactDifferential, invalid, type Answer, type Body, type Json } from '../support/exact-differential.js'

const NOW = () => BigInt(Math.floor(Date.now() / 1000))

let world: EvmFixture
let otherToken: TestToken
let ours: ReturnType<typeof createFacilitator>
let official: x402Facilitator
const { table, printTable, sameVerify, differentVerify } = exactDifferential(() => ({ ours, official }))

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  otherToken = await deployTestToken(world.node)
  const [ourKey, theirKey] = world.signers as [LocalAccount, LocalAccount]
  ours = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [ourKey] }))] })
  const signer = officialSigner(world, theirKey)
  official = new x402Facilitator().register('eip155:84532', new ExactEvmScheme(signer)).registerV1('base-sepolia' as never, new ExactEvmSchemeV1(signer))
  await world.warmUp(ours)
}, 120_000)

afterAll(async () => {
  printTable()
  await ours?.close()
  await world?.stop()
})

const v2 = (paymentPayload: unknown, paymentRequirements: unknown = world.requirementsV2()): Body => ({ x402Version: 2, paymentPayload: paymentPayload as Json, paymentRequirements: paymentRequirements as Json })
const v1 = (paymentPayload: unknown, paymentRequirements: unknown = world.requirementsV1()): Body => ({ x402Version: 1, paymentPayload: paymentPayload as Json, paymentRequirements: paymentRequirements as Json })
const valid = (payer: LocalAccount): Answer => ({ ok: true, reason: null, payer: payer.address })

/** `payment` with its `payload` fields replaced (authorization fields under `authorization`). */
function patched(payment: unknown, fields: { signature?: unknown; authorization?: Json; drop?: string }): Json {
  const p = payment as { payload: { signature: unknown; authorization: Json } }
  const authorization: Json = { ...p.payload.authorization, ...fields.authorization }
  if (fields.drop) delete authorization[fields.drop]
  const payload: Json = { signature: 'signature' in fields ? fields.signature : p.payload.signature, authorization }
  return { ...(payment as Json), payload }
}

/**
 * The five codes where @x402/evm 2.x renamed the x402 1.x codes: ours keeps the 1.x names that
 * DESIGN.md lists and clients switch on; renaming them is a client-visible change left to a decision.
 */
const RENAMED = {
  signature: ['invalid_exact_evm_payload_signature', 'invalid_exact_evm_signature'],
  value: ['invalid_exact_evm_payload_authorization_value', 'invalid_exact_evm_payload_authorization_value_mismatch'],
  valueV1: ['invalid_exact_evm_payload_authorization_value', 'invalid_exact_evm_authorization_value'],
  recipient: ['invalid_exact_evm_payload_recipient_mismatch', 'invalid_exact_evm_recipient_mismatch'],
  funds: ['insufficient_funds', 'invalid_exact_evm_insufficient_balance'],
} as const

/** A case both refuse for the same cause under a renamed code (see RENAMED), both naming the payer. */
async function renamedVerify(name: string, body: Body, [oursCode, officialCode]: readonly [string, string], payer: string) {
  await differentVerify(name, body, invalid(oursCode, payer), invalid(officialCode, payer))
}

describe('exact EIP-3009 /verify: ours against the official facilitator, same requests', () => {
  it('a valid v2 payment: valid, the payer', async () => {
    const payer = await world.newPayer()
    await sameVerify('valid (v2)', v2(await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2() })), valid(payer))
  })

  it('a valid v1 payment: valid, the payer', async () => {
    const payer = await world.newPayer()
    await sameVerify('valid (v1)', v1(await signExactEvmPayment({ signer: payer, requirements: world.requirementsV1() })), valid(payer))
  })

  it('signed by another key than `from`: a bad signature, the named payer', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: privateKeyToAccount(generatePrivateKey()), requirements: world.requirementsV2(), overrides: { from: payer.address } })
    await renamedVerify('signature by another key', v2(payment), RENAMED.signature, payer.address)
  })

  it('an authorization of less than the amount (accepted equal to the requirements)', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2(), overrides: { value: 999n } })
    await renamedVerify('amount below requirements', v2(payment), RENAMED.value, payer.address)
  })

  it('an authorization to another address than payTo', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2(), overrides: { to: privateKeyToAccount(generatePrivateKey()).address } })
    await renamedVerify('wrong payTo', v2(payment), RENAMED.recipient, payer.address)
  })

  it('signed for another token than the requirements\' asset (accepted equal to the requirements)', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2({ asset: otherToken.address }) })
    const requirements = world.requirementsV2()
    await renamedVerify('wrong asset (signed for another token)', v2({ ...payment, accepted: requirements }, requirements), RENAMED.signature, payer.address)
  })

  it('validBefore has passed', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2(), overrides: { validBefore: NOW() - 10n } })
    await sameVerify('validBefore passed', v2(payment), invalid('invalid_exact_evm_payload_authorization_valid_before', payer.address))
  })

  it('validAfter lies in the future', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2(), overrides: { validAfter: NOW() + 3600n } })
    await sameVerify('validAfter in the future', v2(payment), invalid('invalid_exact_evm_payload_authorization_valid_after', payer.address))
  })

  it('a nonce already used on chain', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2() })
    expect(await ours.settle(v2(payment))).toMatchObject({ success: true })
    await sameVerify('nonce already used on chain', v2(payment), invalid('invalid_exact_evm_nonce_already_used', payer.address))
  })

  it('a payer without funds', async () => {
    const payer = await world.newPayer(0n)
    await renamedVerify('payer without funds', v2(await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2() })), RENAMED.funds, payer.address)
  })

  it('a network neither serves: ours refuses it, the official facilitator throws (an HTTP 500 through its server)', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ network: 'eip155:1' })
    // DESIGN.md: a well-formed payment that fails a check is a 200 with a code, not an error.
    await differentVerify('wrong network (eip155:1)', v2(await signExactEvmPayment({ signer: payer, requirements }), requirements), invalid('invalid_network', null), 'throws')
  })

  it('a scheme neither serves: ours refuses it, the official facilitator throws', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ scheme: 'exactly' })
    // As above: a code a client can switch on rather than a server error.
    await differentVerify('wrong scheme (exactly)', v2(await signExactEvmPayment({ signer: payer, requirements }), requirements), invalid('unsupported_scheme', null), 'throws')
  })

  it('malformed payloads: ours `invalid_payload` without a payer; the official facilitator throws or calls it a bad signature', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2() })
    // Ours refuses a payload that is not an EIP-3009 authorization before reading any field as a payer.
    const ourAnswer = invalid('invalid_payload', null)
    const cases: [string, Json, Answer | 'throws'][] = [
      ['missing signature', patched(payment, { signature: undefined }), 'throws'],
      ['missing authorization.nonce', patched(payment, { drop: 'nonce' }), invalid(RENAMED.signature[1], payer.address)],
      ['missing authorization.validBefore', patched(payment, { drop: 'validBefore' }), 'throws'],
      ['non-hex signature', patched(payment, { signature: '0xnothex' }), invalid(RENAMED.signature[1], payer.address)],
      ['from not an address', patched(payment, { authorization: { from: '0x1234' } }), invalid(RENAMED.signature[1], '0x1234')],
      ['to not an address', patched(payment, { authorization: { to: 'nope' } }), invalid(RENAMED.signature[1], payer.address)],
      ['value not a number', patched(payment, { authorization: { value: 'ten' } }), 'throws'],
    ]
    for (const [name, p, officialSees] of cases) await differentVerify(name, v2(p), ourAnswer, officialSees)
  })

  it('extra.name is not the token\'s name (the payment signed with it): the same code', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ extra: { name: 'Wrong Coin', version: world.token.version } })
    const payment = await signExactEvmPayment({ signer: payer, requirements })
    await sameVerify('extra.name wrong (signed with it)', v2(payment, requirements), invalid('invalid_exact_evm_token_name_mismatch', payer.address))
  })

  it('extra.version is not the token\'s version (the payment signed with it): both simulate, and the token refuses', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ extra: { name: world.token.name, version: '9' } })
    const payment = await signExactEvmPayment({ signer: payer, requirements })
    await sameVerify('extra.version wrong (signed with it)', v2(payment, requirements), invalid('invalid_exact_evm_transaction_simulation_failed', payer.address))
  })

  it('accepted differs from the requirements (a payment for another payTo): ours refuses the mismatch itself', async () => {
    const payer = await world.newPayer()
    const signedFor = world.requirementsV2({ payTo: privateKeyToAccount(generatePrivateKey()).address })
    // A core rule of ours: the requirements the client accepted must be the server's, field by field.
    await differentVerify('accepted ≠ requirements (payTo)', v2(await signExactEvmPayment({ signer: payer, requirements: signedFor })), invalid('accepted_requirements_mismatch', null), invalid(RENAMED.recipient[1], payer.address))
  })

  it('accepted names another asset than the requirements (the payment signed for it): ours refuses the mismatch itself', async () => {
    const payer = await world.newPayer()
    const signedFor = world.requirementsV2({ asset: otherToken.address })
    // The same core rule; the official facilitator checks the signature against the requirements' token.
    await differentVerify('accepted ≠ requirements (asset)', v2(await signExactEvmPayment({ signer: payer, requirements: signedFor })), invalid('accepted_requirements_mismatch', null), invalid(RENAMED.signature[1], payer.address))
  })

  it('v1: a payload for another network than the requirements\': the core\'s network_mismatch against the scheme\'s code', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV1() })
    // The core matches the payload's network against the requirements' before any scheme reads it (a core code).
    await differentVerify('v1 payload network ≠ requirements', v1({ ...payment, network: 'base' }), invalid('network_mismatch', null), invalid('invalid_exact_evm_network_mismatch', payer.address))
  })

  it('v1: an authorization of less than maxAmountRequired', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV1(), overrides: { value: 999n } })
    await renamedVerify('v1 amount below requirements', v1(payment), RENAMED.valueV1, payer.address)
  })

  it('v1: signed by another key than `from`', async () => {
    const payer = await world.newPayer()
    const payment = await signExactEvmPayment({ signer: privateKeyToAccount(generatePrivateKey()), requirements: world.requirementsV1(), overrides: { from: payer.address } })
    await renamedVerify('v1 signature by another key', v1(payment), RENAMED.signature, payer.address)
  })
})

describe('exact EIP-3009 /settle: ours against the official facilitator, each side its own payment', () => {
  async function settleSeen(side: 'ours' | 'official', body: Body) {
    const r = side === 'ours' ? await ours.settle(body) : await official.settle(body.paymentPayload as unknown as OfficialPayload, body.paymentRequirements as unknown as OfficialRequirements)
    return { success: r.success, errorReason: r.errorReason ?? null, payer: r.payer ?? null, network: r.network, transaction: shape(r.transaction) }
  }

  it('a valid v2 payment: settled, the same payer, network and transaction form', async () => {
    for (const side of ['ours', 'official'] as const) {
      const payer = await world.newPayer()
      const answer = await settleSeen(side, v2(await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2() })))
      expect(answer, side).toEqual({ success: true, errorReason: null, payer: payer.address, network: 'eip155:84532', transaction: 'hex32-lower' })
    }
    table.push(`| settle: valid (v2) | success | success |`)
  })

  it('a valid v1 payment: settled, the network under its v1 name', async () => {
    for (const side of ['ours', 'official'] as const) {
      const payer = await world.newPayer()
      const answer = await settleSeen(side, v1(await signExactEvmPayment({ signer: payer, requirements: world.requirementsV1() })))
      expect(answer, side).toEqual({ success: true, errorReason: null, payer: payer.address, network: 'base-sepolia', transaction: 'hex32-lower' })
    }
    table.push(`| settle: valid (v1) | success | success |`)
  })

  it('a payment whose nonce is already used: both refuse it with the same code, no transaction', async () => {
    const seen = []
    for (const side of ['ours', 'official'] as const) {
      const payer = await world.newPayer()
      const payment = await signExactEvmPayment({ signer: payer, requirements: world.requirementsV2() })
      // The nonce is spent on chain by the other facilitator (ours answers a payment it settled itself with that settlement).
      const spend = side === 'ours' ? await settleSeen('official', v2(payment)) : await settleSeen('ours', v2(payment))
      expect(spend.success).toBe(true)
      const answer = await settleSeen(side, v2(payment))
      seen.push({ ...answer, payer: answer.payer === payer.address ? 'the payer' : answer.payer })
    }
    table.push(`| settle: nonce already used | ${seen[0]?.errorReason} | ${seen[1]?.errorReason} |`)
    expect(seen[1]).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used' })
    expect(seen[0]).toEqual(seen[1])
  })
})
