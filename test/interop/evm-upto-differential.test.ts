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
import { evmSchemes, PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from '../../src/evm/index.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { newPermit2Payer } from '../support/permit2-contracts.js'
import { exactDifferential, invalid, type Answer, type Body, type Json, type Side } from '../support/exact-differential.js'
import { settleLabel, settleSeen, startUptoWorld, type SettleSeen, type UptoWorld } from '../support/upto-differential.js'
import { officialUptoPayload, resignedUpto, uptoRequirements } from '../support/upto-payments.js'
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

describe('upto /verify: requirements for another scheme or network, and malformed payloads', () => {
  it('a network neither serves: ours refuses it, the official facilitator throws (an HTTP 500 through its server)', async () => {
    const payer = await newPermit2Payer(up.world)
    const bodies = await Promise.all(SIDES.map(async (side) => {
      const reqs = requirements(side, { network: 'eip155:1' })
      const p = await officialUptoPayload(payer, requirements(side))
      return body({ ...p, accepted: reqs }, reqs)
    }))
    // DESIGN.md: a well-formed payment that fails a check is a 200 with a code, not an error.
    await differentVerify('upto: network eip155:1 (accepted too)', { ours: bodies[0]!, official: bodies[1]! }, invalid('invalid_network', null), 'throws')
  })

  it('a scheme neither serves: ours refuses it, the official facilitator throws', async () => {
    const payer = await newPermit2Payer(up.world)
    const bodies = await Promise.all(SIDES.map(async (side) => {
      const reqs = requirements(side, { scheme: 'uptoo' })
      const p = await officialUptoPayload(payer, requirements(side))
      return body({ ...p, accepted: reqs }, reqs)
    }))
    await differentVerify('upto: scheme uptoo (accepted too)', { ours: bodies[0]!, official: bodies[1]! }, invalid('unsupported_scheme', null), 'throws')
  })

  it('exact requirements for an upto payment (accepted says upto)', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    const exact = (side: Side) => requirements(side, { scheme: 'exact' })
    // A core rule of ours (as in the exact differential tests): accepted must equal the requirements, scheme included, before any scheme reads the payload.
    await differentVerify('upto payment, exact requirements', { ours: body(p.ours, exact('ours')), official: body(p.official, exact('official')) }, invalid('accepted_requirements_mismatch', null), invalid('unsupported_payload_type', payer.address))
  })

  it('upto requirements, accepted says exact or another network', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    const acceptedAs = (side: Side, overrides: Partial<PaymentRequirementsV2>) => body({ ...p[side], accepted: { ...(p[side].accepted as Json), ...overrides } }, requirements(side))
    // The same core rule answers what the official upto scheme names with its own codes (ours leaves invalid_upto_evm_scheme/network_mismatch unused).
    await differentVerify('upto: accepted.scheme exact', { ours: acceptedAs('ours', { scheme: 'exact' }), official: acceptedAs('official', { scheme: 'exact' }) }, invalid('accepted_requirements_mismatch', null), invalid('invalid_upto_evm_scheme', payer.address))
    await differentVerify('upto: accepted.network eip155:1', { ours: acceptedAs('ours', { network: 'eip155:1' }), official: acceptedAs('official', { network: 'eip155:1' }) }, invalid('accepted_requirements_mismatch', null), invalid('invalid_upto_evm_network_mismatch', payer.address))
  })

  it('a verify request carrying a usage below the maximum as its amount', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    // Only a settle request may name less than accepted (the usage); ours refuses the mismatch itself, as for any other accepted field.
    await differentVerify('upto: verify with amount = a usage', { ours: body(p.ours, used(requirements('ours'), '1234')), official: body(p.official, used(requirements('official'), '1234')) }, invalid('accepted_requirements_mismatch', null), invalid('permit2_amount_mismatch', payer.address))
  })

  it('two faults at once: witness.facilitator not ours and a passed deadline', async () => {
    const payer = await newPermit2Payer(up.world)
    await sameVerify('upto: foreign facilitator + deadline passed', await verifyBodies(payer, (f) => ({ ...f, deadline: String(now() - 10), witness: { ...f.witness, facilitator: stranger() } })), invalid('upto_facilitator_mismatch', payer.address))
    await sameVerify('upto: foreign facilitator + wrong token', await verifyBodies(payer, (f) => ({ ...f, permitted: { ...f.permitted, token: stranger() }, witness: { ...f.witness, facilitator: stranger() } })), invalid('upto_facilitator_mismatch', payer.address))
  })

  it('malformed payloads', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    const patched = (change: (auth: Json) => Json, signature?: unknown) => {
      const make = (side: Side) => {
        const inner = p[side].payload as { signature: string; permit2Authorization: Json }
        const payload: Json = { ...inner, permit2Authorization: change(structuredClone(inner.permit2Authorization)) }
        if (signature !== undefined) payload.signature = signature === null ? undefined : signature
        return body({ ...p[side], payload }, requirements(side))
      }
      return { ours: make('ours'), official: make('official') }
    }
    const drop = (path: string[]) => (auth: Json) => {
      const parent = path.slice(0, -1).reduce<Json>((o, k) => o[k] as Json, auth)
      delete parent[path.at(-1)!]
      return auth
    }
    const cases: [string, ReturnType<typeof patched>, Answer | 'throws'][] = [
      ['no witness.facilitator', patched(drop(['witness', 'facilitator'])), invalid('unsupported_payload_type', '')],
      ['no witness', patched(drop(['witness'])), invalid('unsupported_payload_type', '')],
      ['no signature', patched((a) => a, null), invalid('unsupported_payload_type', '')],
      ['non-hex signature', patched((a) => a, '0xnothex'), invalid('invalid_permit2_signature', payer.address)],
      ['permitted.amount not a number', patched((a) => ({ ...a, permitted: { ...(a.permitted as Json), amount: 'ten' } })), 'throws'],
      ['nonce not a number', patched((a) => ({ ...a, nonce: 'x' })), 'throws'],
      ['from not an address', patched((a) => ({ ...a, from: '0x1234' })), invalid('invalid_permit2_signature', '0x1234')],
      ['witness.facilitator not an address', patched((a) => ({ ...a, witness: { ...(a.witness as Json), facilitator: 'nope' } })), 'throws'],
    ]
    // Ours refuses a payload that is not an upto Permit2 authorization before naming anyone as its payer (the same rule as for exact).
    for (const [name, bodies, officialSees] of cases) await differentVerify(`upto: ${name}`, bodies, invalid('invalid_payload', null), officialSees)
  })
})

describe('upto /settle: each side its own payment, the balances read around it', () => {
  /** Settles on each side a payment made out to it (its permit changed by `change`, its request by `request`), with `usage` as the settle request's amount. */
  async function settleBoth(
    name: string,
    usage: string,
    options: { payer?: LocalAccount; change?: (f: UptoAuthorizationFields) => UptoAuthorizationFields; signer?: LocalAccount; request?: (settle: Body) => Body } = {},
  ) {
    const payer = options.payer ?? (await newPermit2Payer(up.world))
    const p = await payments(payer, options.change, options.signer)
    const seen = {} as Record<Side, SettleSeen | { threw: true }>
    for (const side of SIDES) {
      const settle = body(p[side], used(requirements(side), usage))
      seen[side] = await settleSeen(up, side, options.request?.(settle) ?? settle, payer.address)
    }
    table.push(`| settle: ${name} | ${settleLabel(seen.ours)} | ${settleLabel(seen.official)} |`)
    return { payer, ours: seen.ours, official: seen.official }
  }
  const landed = (payer: LocalAccount, amount: string): SettleSeen => ({ ok: true, reason: null, payer: payer.address, network: 'eip155:84532', transaction: 'hex32-lower', amount, moved: { payTo: amount, payer: amount } })
  const refusedWith = (payer: LocalAccount, reason: string, amount: string | null): SettleSeen => ({ ok: false, reason, payer: payer.address, network: 'eip155:84532', transaction: 'empty', amount, moved: { payTo: '0', payer: '0' } })

  it('a usage below the maximum: both settle it, the usage moves, the answer carries it', async () => {
    const { payer, ours, official } = await settleBoth('usage 1234 of 5000', '1234')
    expect(official).toEqual(landed(payer, '1234'))
    expect(ours).toEqual(official)
  })

  it('a usage equal to the maximum', async () => {
    const { payer, ours, official } = await settleBoth('usage 5000 of 5000', '5000')
    expect(official).toEqual(landed(payer, '5000'))
    expect(ours).toEqual(official)
  })

  it('a usage of zero: success, no transaction, amount "0", nothing moves', async () => {
    const { payer, ours, official } = await settleBoth('usage 0', '0')
    expect(official).toEqual({ ...landed(payer, '0'), transaction: 'empty' })
    expect(ours).toEqual(official)
  })

  it('a usage above the maximum: both refuse it unsent with the same code; ours says amount "0"', async () => {
    const { payer, ours, official } = await settleBoth('usage 5001 of 5000', '5001')
    expect(official).toEqual(refusedWith(payer, 'invalid_upto_evm_payload_settlement_exceeds_amount', null))
    // Every upto settle answer of ours says what was charged (SettleResponse.amount), "0" when nothing was.
    expect(ours).toEqual({ ...official, amount: '0' })
  })

  it('witness.facilitator not the settling side, or a passed deadline: refused unsent, the same codes', async () => {
    const foreign = await settleBoth('witness.facilitator a stranger', '100', { change: (f) => ({ ...f, witness: { ...f.witness, facilitator: stranger() } }) })
    expect(foreign.official).toEqual(refusedWith(foreign.payer, 'upto_facilitator_mismatch', null))
    expect(foreign.ours).toEqual({ ...foreign.official, amount: '0' })
    const late = await settleBoth('deadline passed', '100', { change: (f) => ({ ...f, deadline: String(now() - 10) }) })
    expect(late.official).toEqual(refusedWith(late.payer, 'permit2_deadline_expired', null))
    expect(late.ours).toEqual({ ...late.official, amount: '0' })
  })

  it('a payer without the Permit2 allowance, or without the balance', async () => {
    const unapproved = await settleBoth('no Permit2 allowance', '100', { payer: await newPermit2Payer(up.world, { approve: 0n }) })
    expect(unapproved.official).toEqual(refusedWith(unapproved.payer, 'permit2_allowance_required', null))
    expect(unapproved.ours).toEqual({ ...unapproved.official, amount: '0' })
    const poor = await settleBoth('balance 10, usage 100', '100', { payer: await newPermit2Payer(up.world, { amount: 10n }) })
    expect(poor.official).toEqual(refusedWith(poor.payer, 'permit2_insufficient_balance', null))
    expect(poor.ours).toEqual({ ...poor.official, amount: '0' })
  })

  it('a permit signed by another key than `from`: the same code, unsent', async () => {
    const forged = await settleBoth('signature by another key', '100', { change: (f) => f, signer: privateKeyToAccount(generatePrivateKey()) })
    expect(forged.official).toEqual(refusedWith(forged.payer, 'invalid_permit2_signature', null))
    expect(forged.ours).toEqual({ ...forged.official, amount: '0' })
  })

  it('a malformed payload, a network neither serves, a payTo other than accepted: refused unsent by both, under the codes of /verify', async () => {
    const malformed = await settleBoth('no witness.facilitator', '100', {
      request: (r) => {
        const payment = structuredClone(r.paymentPayload) as { payload: { permit2Authorization: { witness: Json } } }
        delete payment.payload.permit2Authorization.witness.facilitator
        return { ...r, paymentPayload: payment as unknown as Json }
      },
    })
    // As at /verify: ours refuses a payload that is not an upto authorization before naming a payer.
    expect(malformed.official).toEqual({ ...refusedWith(malformed.payer, 'unsupported_payload_type', null), payer: '' })
    expect(malformed.ours).toEqual({ ...refusedWith(malformed.payer, 'invalid_payload', '0'), payer: null })
    const network = await settleBoth('network eip155:1 (accepted too)', '100', {
      request: (r) => ({ ...r, paymentPayload: { ...r.paymentPayload, accepted: { ...(r.paymentPayload.accepted as Json), network: 'eip155:1' } }, paymentRequirements: { ...r.paymentRequirements, network: 'eip155:1' } }),
    })
    // A code rather than a server error (DESIGN.md); no adapter took the request, so no upto amount either.
    expect(network.official).toEqual({ threw: true })
    expect(network.ours).toEqual({ ...refusedWith(network.payer, 'invalid_network', null), payer: null, network: 'eip155:1' })
    const payTo = await settleBoth('requirements payTo ≠ accepted', '100', { request: (r) => ({ ...r, paymentRequirements: { ...r.paymentRequirements, payTo: stranger() } }) })
    // The core rule of /verify: accepted must equal the requirements (amount aside on a settle); the official facilitator compares the permit's witness.to.
    expect(payTo.official).toEqual(refusedWith(payTo.payer, 'invalid_permit2_recipient_mismatch', null))
    expect(payTo.ours).toEqual({ ...refusedWith(payTo.payer, 'accepted_requirements_mismatch', '0'), payer: null })
  })

  it('a payer holding less than the maximum but more than the usage: both refuse (the maximum must be covered)', async () => {
    const poor = await settleBoth('balance 200, usage 100 of 5000', '100', { payer: await newPermit2Payer(up.world, { amount: 200n }) })
    expect(poor.official).toEqual(refusedWith(poor.payer, 'permit2_insufficient_balance', null))
    expect(poor.ours).toEqual({ ...poor.official, amount: '0' })
  })

  it('a usage of zero from a payer without the Permit2 allowance: both refuse it (settle verifies first)', async () => {
    const zero = await settleBoth('usage 0, no Permit2 allowance', '0', { payer: await newPermit2Payer(up.world, { approve: 0n }) })
    expect(zero.official).toEqual(refusedWith(zero.payer, 'permit2_allowance_required', null))
    expect(zero.ours).toEqual({ ...zero.official, amount: '0' })
  })

  it('a replayed settle once it landed: ours answers its settlement again, the official facilitator a failed simulation; nothing moves twice', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    const seen = {} as Record<Side, (SettleSeen | { threw: true })[]>
    const hashes = { ours: [] as string[], official: [] as string[] }
    for (const side of SIDES) {
      const settle = (usage: string) => settleSeen(up, side, body(p[side], used(requirements(side), usage)), payer.address, (r) => hashes[side].push(r.transaction))
      const first = await settle('100')
      expect(first, side).toEqual(landed(payer, '100'))
      seen[side] = [await settle('100'), await settle('200')]
    }
    table.push(`| settle: replayed (usage 100) | ${settleLabel(seen.ours[0]!)} | ${settleLabel(seen.official[0]!)} |`)
    table.push(`| settle: replayed with usage 200 | ${settleLabel(seen.ours[1]!)} | ${settleLabel(seen.official[1]!)} |`)
    // The same request answers the recorded settlement (idempotent settle, DESIGN.md); another usage of the same permit is another payment.
    expect(seen.ours[0]).toEqual({ ...landed(payer, '100'), moved: { payTo: '0', payer: '0' } })
    expect(hashes.ours[1]).toBe(hashes.ours[0])
    expect(seen.ours[1]).toEqual({ ...refusedWith(payer, 'duplicate_settlement', '0'), payer: null, transaction: 'hex32-lower' })
    expect(hashes.ours[2]).toBe(hashes.ours[0])
    // The official facilitator keeps no record of a landed settlement: it simulates again, and Permit2's spent nonce reverts.
    for (const again of seen.official) expect(again).toEqual(refusedWith(payer, 'permit2_simulation_failed', null))
  })

  it('/verify of a permit whose nonce Permit2 has spent, by a facilitator with no record of it: ours names the cause', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    for (const side of SIDES) expect(await settleSeen(up, side, body(p[side], used(requirements(side), '100')), payer.address), side).toEqual(landed(payer, '100'))
    // Ours after a restart (a new instance, an empty store, the same key); the official facilitator keeps no record anyway.
    const restarted = createFacilitator({ schemes: evmSchemes(up.world.adapterConfig({ signers: [up.world.signers[0]!] })) })
    try {
      const [a, b] = [await restarted.verify(body(p.ours, requirements('ours'))), await up.official.verify(p.official as never, requirements('official') as never)]
      table.push(`| verify: nonce spent on chain (no record) | invalid \`${a.invalidReason}\` | invalid \`${b.invalidReason}\` |`)
      // Ours reads Permit2's nonce bitmap and names the cause (as for exact through Permit2); the official facilitator sees only the reverting simulation.
      expect({ ok: a.isValid, reason: a.invalidReason, payer: a.payer }).toEqual({ ok: false, reason: 'permit2_nonce_already_used', payer: payer.address })
      expect({ ok: b.isValid, reason: b.invalidReason, payer: b.payer }).toEqual({ ok: false, reason: 'permit2_simulation_failed', payer: payer.address })
    } finally {
      await restarted.close()
    }
  })

  it('a permit settled with a usage of zero, settled again: ours at most once, the official facilitator charges it later', async () => {
    const payer = await newPermit2Payer(up.world)
    const p = await payments(payer)
    const seen = {} as Record<Side, (SettleSeen | { threw: true })[]>
    for (const side of SIDES) {
      const settle = (usage: string) => settleSeen(up, side, body(p[side], used(requirements(side), usage)), payer.address)
      expect(await settle('0'), side).toEqual({ ...landed(payer, '0'), transaction: 'empty' })
      seen[side] = [await settle('0'), await settle('100')]
    }
    table.push(`| settle: usage 0, then 0 again | ${settleLabel(seen.ours[0]!)} | ${settleLabel(seen.official[0]!)} |`)
    table.push(`| settle: usage 0, then 100 | ${settleLabel(seen.ours[1]!)} | ${settleLabel(seen.official[1]!)} |`)
    expect(seen.ours[0]).toEqual(seen.official[0])
    expect(seen.official[0]).toEqual({ ...landed(payer, '0'), transaction: 'empty' })
    // A settled permit is settled at most once (SCHEMES.md: zero sends nothing, yet the permit is spent here); the official facilitator
    // remembers nothing of a zero settle, so the resource server (or the payer, who may call /settle) can charge it afterwards.
    expect(seen.official[1]).toEqual(landed(payer, '100'))
    expect(seen.ours[1]).toEqual({ ...refusedWith(payer, 'duplicate_settlement', '0'), payer: null })
  })
})

describe('upto with eip2612GasSponsoring: a payer without the Permit2 allowance signs an EIP-2612 permit of the maximum', () => {
  const sponsored = (payer: LocalAccount, side: Side) => officialUptoPayload(payer, requirements(side), { world: up.world })
  const allowance = (owner: string) => up.world.node.publicClient.readContract({ address: up.world.token.address, abi: up.world.token.abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] })

  it('verify: valid on both', async () => {
    const payer = await newPermit2Payer(up.world, { approve: 0n })
    await sameVerify('upto + eip2612GasSponsoring: valid', { ours: body(await sponsored(payer, 'ours'), requirements('ours')), official: body(await sponsored(payer, 'official'), requirements('official')) }, { ok: true, reason: null, payer: payer.address })
  })

  it('settle a usage: both run settleWithPermit, the usage moves, the permit left the maximum less the usage to Permit2', async () => {
    const seen = {} as Record<Side, SettleSeen | { threw: true }>
    const payers = {} as Record<Side, LocalAccount>
    for (const side of SIDES) {
      payers[side] = await newPermit2Payer(up.world, { approve: 0n })
      seen[side] = await settleSeen(up, side, body(await sponsored(payers[side], side), used(requirements(side), '1234')), payers[side].address)
      expect(await allowance(payers[side].address), side).toBe(5000n - 1234n)
    }
    table.push(`| settle: eip2612GasSponsoring, usage 1234 | ${settleLabel(seen.ours)} | ${settleLabel(seen.official)} |`)
    expect(seen.official).toEqual({ ok: true, reason: null, payer: payers.official.address, network: 'eip155:84532', transaction: 'hex32-lower', amount: '1234', moved: { payTo: '1234', payer: '1234' } })
    expect(seen.ours).toEqual({ ...seen.official, payer: payers.ours.address })
  })
})

describe('GET /supported: the upto kind', () => {
  it('the same kind on both, extra.facilitatorAddress naming the side\'s own signer (checksummed), listed under signers', async () => {
    const ours = await up.ours.supported()
    const official = up.official.getSupported()
    const upto = (kinds: readonly { scheme: string }[]) => kinds.filter((k) => k.scheme === 'upto')
    expect(upto(official.kinds)).toEqual([{ x402Version: 2, scheme: 'upto', network: 'eip155:84532', extra: { facilitatorAddress: up.address.official } }])
    expect(upto(ours.kinds)).toEqual([{ x402Version: 2, scheme: 'upto', network: 'eip155:84532', extra: { facilitatorAddress: up.address.ours } }])
    expect(up.address.ours).toMatch(/^0x(?=.*[a-f])(?=.*[A-F])[0-9a-fA-F]{40}$/)
    expect(official.signers).toEqual({ 'eip155:*': [up.address.official] })
    expect(ours.signers).toEqual({ 'eip155:*': [up.address.ours] })
    // Ours lists the extension it honours; the official facilitator lists only extensions registered on it (none here).
    expect(ours.extensions).toEqual(['eip2612GasSponsoring'])
    expect(official.extensions).toEqual([])
    table.push(`| GET /supported upto kind | {x402Version: 2, upto, eip155:84532, extra.facilitatorAddress: own signer} | the same |`)
  })
})
