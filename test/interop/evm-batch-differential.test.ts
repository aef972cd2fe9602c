/**
 * Differential test of batch-settlement on EVM: the same /verify and /settle requests go to our
 * facilitator (evmSchemes with batchSettlement) and to the official one (@x402/evm 2.27
 * BatchSettlementEvmScheme under @x402/core's x402Facilitator), on one anvil with our contracts at
 * the canonical addresses, and what a client sees is compared: isValid / success, the reason, the
 * payer and the shape of `extra` (types, hex casing). Each side sends from its own key; a case that
 * changes the chain gets its own channel per side. Where the answers differ on purpose the case
 * states both answers and why (the spec, or a safety rule of ours).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/facilitator'
import { serializeErc6492Signature, zeroAddress, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { evmSchemes } from '../../src/evm/evm-schemes.js'
import { channelId, type ChannelConfig } from '../../src/evm/batch/codec.js'
import { signClaimBatch, signRefund, signVoucher } from '../support/batch-settlement-signing.js'
import { batchChannel, batchRequest, batchRequirements, channelOnChain, depositPayload, newBatchReceiver, startBatchWorld, type BatchReceiver } from '../support/batch-world.js'
import type { EvmFixture } from '../support/evm-fixture.js'
import { depositWindow, highS, label, officialSigner, shape, type Answer, type Body, type Seen } from '../support/batch-differential.js'

const CHAIN = 84532
const PRICE = 1000n
const NOW = () => BigInt(Math.floor(Date.now() / 1000))

let world: EvmFixture
let to: BatchReceiver
let ours: ReturnType<typeof createFacilitator>
let official: x402Facilitator
let requirements: ReturnType<typeof batchRequirements>
/** A channel funded with 10,000 of which 3,000 are claimed (verify-only cases use it). */
let shared: { payer: LocalAccount; config: ChannelConfig; id: Hex }
const table: string[] = []
/** The transaction of the claim that raised the shared channel's total to 3,000. */
let sharedClaimTx: string

beforeAll(async () => {
  world = await startBatchWorld({ signerCount: 2 })
  to = newBatchReceiver()
  const [ourKey, theirKey] = world.signers as [LocalAccount, LocalAccount]
  ours = createFacilitator({ schemes: evmSchemes(world.adapterConfig({ signers: [ourKey] }), { batchSettlement: { receiverAuthorizer: to.authorizer } }) })
  official = new x402Facilitator().register('eip155:84532', new BatchSettlementEvmScheme(officialSigner(world, theirKey), to.authorizer))
  requirements = batchRequirements(world, to, { amount: PRICE.toString() })
  const payer = await world.newPayer(1_000_000n)
  const { config, id } = batchChannel(world, to, payer.address)
  shared = { payer, config, id }
  expect(await ours.settle(batchRequest(requirements, await depositPayload(world, payer, config, 10_000n, PRICE)))).toMatchObject({ success: true })
  const claims = [{ voucher: { channel: config, maxClaimableAmount: 3000n }, signature: await signVoucher(payer, CHAIN, id, 3000n), totalClaimed: 3000n }]
  const wire = claims.map((c) => ({ voucher: { channel: config, maxClaimableAmount: '3000' }, signature: c.signature, totalClaimed: '3000' }))
  const claimed = await ours.settle(batchRequest(requirements, { type: 'claim', claims: wire, claimAuthorizerSignature: await signClaimBatch(to.authorizer, CHAIN, claims) }))
  expect(claimed).toMatchObject({ success: true })
  sharedClaimTx = claimed.transaction
  expect(await channelOnChain(world, id)).toEqual([10_000n, 3000n])
}, 120_000)

afterAll(async () => {
  if (table.length) console.log(['| case | ours | official |', '|---|---|---|', ...table].join('\n'))
  await ours?.close()
  await world?.stop()
})

async function seeVerify(side: 'ours' | 'official', body: Body): Promise<Seen> {
  try {
    const r = side === 'ours' ? await ours.verify(body) : await official.verify(body.paymentPayload as unknown as OfficialPayload, body.paymentRequirements as unknown as OfficialRequirements)
    return { ok: r.isValid, reason: r.invalidReason ?? null, payer: r.payer ?? null, extra: r.extra ?? null }
  } catch {
    return { threw: true }
  }
}

async function seeSettle(side: 'ours' | 'official', body: Body): Promise<Seen> {
  try {
    const r = side === 'ours' ? await ours.settle(body) : await official.settle(body.paymentPayload as unknown as OfficialPayload, body.paymentRequirements as unknown as OfficialRequirements)
    return { ok: r.success, reason: r.errorReason ?? null, payer: r.payer ?? null, extra: r.extra ?? null, raw: r as unknown as Record<string, unknown> }
  } catch {
    return { threw: true }
  }
}

/** Both sides verify `body`: the same client-visible answer (extra compared whole: one chain state). */
async function sameVerify(name: string, body: Body, expected: { ok: boolean; reason?: string }) {
  const [a, b] = [await seeVerify('ours', body), await seeVerify('official', body)]
  table.push(`| ${name} | ${label(a)} | ${label(b)} |`)
  expect(b, 'official').toMatchObject({ ok: expected.ok, reason: expected.reason ?? null })
  expect(a).toEqual(b)
  return a as Answer
}

/** Both sides verify `body`, with a documented difference: each answer is asserted exactly. */
async function differentVerify(name: string, body: Body, oursSees: Partial<Answer>, officialSees: Partial<Answer> | 'throws') {
  const [a, b] = [await seeVerify('ours', body), await seeVerify('official', body)]
  table.push(`| ${name} | ${label(a)} | ${label(b)} |`)
  expect(a).toMatchObject(oursSees)
  if (officialSees === 'throws') expect(b).toEqual({ threw: true })
  else expect(b).toMatchObject(officialSees)
}

const body = (payload: unknown, reqs: Record<string, unknown> = requirements): Body => batchRequest(reqs, payload) as unknown as Body
const voucherOf = async (signer: LocalAccount, id: Hex, max: bigint) => ({ channelId: id, maxClaimableAmount: max.toString(), signature: await signVoucher(signer, CHAIN, id, max) })
const voucherPayload = async (max: bigint, signer = shared.payer) => ({ type: 'voucher', channelConfig: shared.config, voucher: await voucherOf(signer, shared.id, max) })
const snapshot = (balance: string, totalClaimed: string, id = shared.id) => ({ channelId: id, balance, totalClaimed, withdrawRequestedAt: 0, refundNonce: '0' })

/** A channel of `payer` whose config differs from the requirements in `fields`, with a voucher that matches its own id. */
async function variantVoucher(fields: Partial<ChannelConfig>) {
  const config = { ...shared.config, ...fields }
  const id = channelId(config, CHAIN)
  return { type: 'voucher', channelConfig: config, voucher: await voucherOf(shared.payer, id, 4000n) }
}

describe('batch-settlement /verify: ours against the official facilitator, same requests', () => {
  it('a valid EIP-3009 deposit into a new channel: valid, the payer, an empty snapshot of the new channel', async () => {
    const payer = await world.newPayer(100_000n)
    const { config, id } = batchChannel(world, to, payer.address)
    const seen = await sameVerify('deposit (EIP-3009), new channel', body(await depositPayload(world, payer, config, 10_000n, PRICE)), { ok: true })
    expect(seen).toEqual({ ok: true, reason: null, payer: payer.address, extra: { channelId: id, balance: '0', totalClaimed: '0', withdrawRequestedAt: 0, refundNonce: '0' } })
    expect(shape(seen.extra)).toEqual({ balance: 'decimal', channelId: 'hex32-lower', refundNonce: 'decimal', totalClaimed: 'decimal', withdrawRequestedAt: 'number' })
  })

  it('a valid voucher (the next price over the claimed total): valid with the channel snapshot', async () => {
    const seen = await sameVerify('voucher, totalClaimed + price', body(await voucherPayload(4000n)), { ok: true })
    expect(seen.extra).toEqual(snapshot('10000', '3000'))
  })

  it('a voucher signed by someone else', async () => {
    await sameVerify('voucher signed by another key', body(await voucherPayload(4000n, privateKeyToAccount(generatePrivateKey()))), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_signature' })
  })

  it('a voucher above the channel balance', async () => {
    await sameVerify('voucher above the balance', body(await voucherPayload(10_001n)), { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_exceeds_balance' })
  })

  it('a voucher at or below the claimed total', async () => {
    await sameVerify('voucher = totalClaimed', body(await voucherPayload(3000n)), { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_below_claimed' })
    await sameVerify('voucher < totalClaimed', body(await voucherPayload(2000n)), { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_below_claimed' })
  })

  it('a voucher above the claimed total by less than the price: refused by us (spec rule 10), accepted by the official', async () => {
    // Spec rule 10: a paid voucher must reach totalClaimed + requirements.amount; the official only checks > totalClaimed.
    await differentVerify('voucher in (totalClaimed, totalClaimed + price)', body(await voucherPayload(3500n)), { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_below_claimed', payer: shared.payer.address }, { ok: true, payer: shared.payer.address })
  })

  it('a cumulative amount off the price increments: valid on both (cumulative_amount_mismatch is the resource server’s check)', async () => {
    // The spec puts maxClaimableAmount == chargedCumulativeAmount + amount on the server, which alone knows the charged total.
    await sameVerify('voucher off the increments (+7)', body(await voucherPayload(5007n)), { ok: true })
  })

  it('a channel config that does not hash to the voucher’s channel id', async () => {
    const payload = await voucherPayload(4000n)
    await sameVerify('config not hashing to channelId', body({ ...payload, channelConfig: { ...shared.config, salt: generatePrivateKey() } }), { ok: false, reason: 'invalid_batch_settlement_evm_channel_id_mismatch' })
  })

  it('configs that disagree with the requirements: receiver, token, receiver authorizer, withdraw delay', async () => {
    const other = privateKeyToAccount(generatePrivateKey()).address
    await sameVerify('receiver ≠ payTo', body(await variantVoucher({ receiver: other })), { ok: false, reason: 'invalid_batch_settlement_evm_receiver_mismatch' })
    await sameVerify('token ≠ asset', body(await variantVoucher({ token: other })), { ok: false, reason: 'invalid_batch_settlement_evm_token_mismatch' })
    await sameVerify('receiverAuthorizer ≠ extra', body(await variantVoucher({ receiverAuthorizer: other })), { ok: false, reason: 'invalid_batch_settlement_evm_receiver_authorizer_mismatch' })
    await sameVerify('withdrawDelay ≠ extra', body(await variantVoucher({ withdrawDelay: 1000 })), { ok: false, reason: 'invalid_batch_settlement_evm_withdraw_delay_mismatch' })
    for (const delay of [899, 2_592_001]) {
      const reqs = batchRequirements(world, to, { extra: { withdrawDelay: delay } })
      await sameVerify(`withdrawDelay ${delay} (out of range)`, body(await variantVoucher({ withdrawDelay: delay }), reqs), { ok: false, reason: 'invalid_batch_settlement_evm_withdraw_delay_out_of_range' })
    }
  })

  it('deposits that cannot land: a payer without funds, an expired or not-yet-valid authorization, a voucher over balance + deposit', async () => {
    const broke = await world.newPayer(0n)
    const brokeChannel = batchChannel(world, to, broke.address)
    await sameVerify('deposit, payer without funds', body(await depositPayload(world, broke, brokeChannel.config)), { ok: false, reason: 'invalid_batch_settlement_evm_insufficient_balance' })
    const payer = await world.newPayer(100_000n)
    const { config } = batchChannel(world, to, payer.address)
    await sameVerify('deposit, validBefore passed', body(await depositWindow(world, payer, config, 10_000n, PRICE, 0n, NOW() - 10n)), { ok: false, reason: 'invalid_batch_settlement_evm_payload_authorization_valid_before' })
    // Both want the authorization to outlive verify by 6 s (our settleMarginSeconds default, the official's constant).
    await sameVerify('deposit, validBefore within 6 s', body(await depositWindow(world, payer, config, 10_000n, PRICE, 0n, NOW() + 3n)), { ok: false, reason: 'invalid_batch_settlement_evm_payload_authorization_valid_before' })
    await sameVerify('deposit, validAfter in the future', body(await depositWindow(world, payer, config, 10_000n, PRICE, NOW() + 3600n, NOW() + 7200n)), { ok: false, reason: 'invalid_batch_settlement_evm_payload_authorization_valid_after' })
    await sameVerify('deposit, voucher > balance + deposit', body(await depositPayload(world, payer, config, 10_000n, 10_001n)), { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_exceeds_balance' })
  })

  it('payload types: unknown, missing, and server-made claim/settle payloads at /verify', async () => {
    await sameVerify('type "foo"', body({ ...(await voucherPayload(4000n)), type: 'foo' }), { ok: false, reason: 'invalid_batch_settlement_evm_payload_type' })
    const { type: _type, ...untyped } = await voucherPayload(4000n)
    await sameVerify('type missing', body(untyped), { ok: false, reason: 'invalid_batch_settlement_evm_payload_type' })
    await sameVerify('settle payload at /verify', body({ type: 'settle', receiver: to.receiver, token: world.token.address }), { ok: false, reason: 'invalid_batch_settlement_evm_payload_type' })
  })
})

describe('batch-settlement /verify: malformed payloads, envelope and casing', () => {
  it('malformed payloads: refused by us with the spec’s payload code, where the official says payload_type, voucher_signature or throws', async () => {
    const good = await voucherPayload(4000n)
    const { signature: _signature, ...unsigned } = good.voucher
    // The spec's table names `_voucher_payload` for a malformed voucher payload; the official's type guard falls through to `_payload_type`.
    await differentVerify('voucher.signature missing', body({ ...good, voucher: unsigned }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_payload', payer: shared.payer.address }, { ok: false, reason: 'invalid_batch_settlement_evm_payload_type' })
    // Not hex is malformed, not a wrong signer: ours says so; the official fails the recovery.
    await differentVerify('voucher.signature not hex', body({ ...good, voucher: { ...good.voucher, signature: '0xzz' } }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_payload' }, { ok: false, reason: 'invalid_batch_settlement_evm_voucher_signature' })
    const { salt: _salt, ...saltless } = shared.config
    // The official hashes `undefined` and throws (an HTTP 500 through its server); ours answers the payload code.
    await differentVerify('channelConfig.salt missing', body({ ...good, channelConfig: saltless }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_payload' }, 'throws')
    await differentVerify('maxClaimableAmount not decimal', body({ ...good, voucher: { ...good.voucher, maxClaimableAmount: 'abc' } }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_payload' }, 'throws')
    const fresh = batchChannel(world, to, shared.payer.address)
    const deposit = await depositPayload(world, shared.payer, fresh.config)
    const noAuthorization = body({ ...deposit, deposit: { ...deposit.deposit, authorization: {} } })
    await sameVerify('deposit.authorization empty', noAuthorization, { ok: false, reason: 'invalid_batch_settlement_evm_erc3009_authorization_required' })
    // Requirements asking for Permit2: the spec's `_permit2_authorization_required`, where the official answers `_payload_type`.
    const permit2Requirements = batchRequirements(world, to, { extra: { assetTransferMethod: 'permit2' } })
    await differentVerify('deposit.authorization empty, permit2 required', body(noAuthorization.paymentPayload.payload, permit2Requirements), { ok: false, reason: 'invalid_batch_settlement_evm_permit2_authorization_required' }, { ok: false, reason: 'invalid_batch_settlement_evm_payload_type' })
    // The spec: exactly one of erc3009Authorization and permit2Authorization; the official picks the Permit2 one and checks it alone.
    const both = { ...deposit.deposit.authorization, permit2Authorization: { from: shared.payer.address, permitted: { token: world.token.address, amount: '10000' }, spender: shared.payer.address, nonce: '1', deadline: '1', witness: { channelId: fresh.id }, signature: '0x' } }
    await differentVerify('deposit with both authorizations', body({ ...deposit, deposit: { ...deposit.deposit, authorization: both } }), { ok: false, reason: 'invalid_batch_settlement_evm_deposit_payload' }, { ok: false, reason: 'invalid_batch_settlement_evm_permit2_invalid_spender' })
  })

  it('the envelope: wrong network, wrong scheme, a v1 request, answered by our core’s shared codes where the official throws or uses its scheme’s', async () => {
    const payload = await voucherPayload(4000n)
    // Our core checks `accepted` against the requirements for every scheme, before any adapter, with one code.
    const accepted = (field: string, value: string): Body => {
      const b = body(payload)
      return { ...b, paymentPayload: { ...b.paymentPayload, accepted: { ...b.paymentPayload.accepted, [field]: value } } } as Body
    }
    await differentVerify('accepted.network ≠ requirements', accepted('network', 'eip155:8453'), { ok: false, reason: 'accepted_requirements_mismatch' }, { ok: false, reason: 'invalid_batch_settlement_evm_network_mismatch' })
    await differentVerify('accepted.scheme ≠ requirements', accepted('scheme', 'exact'), { ok: false, reason: 'accepted_requirements_mismatch' }, { ok: false, reason: 'invalid_batch_settlement_evm_scheme' })
    // A network or scheme nobody registered: the official x402Facilitator throws, ours answers.
    const elsewhere = { ...requirements, network: 'eip155:1' }
    await differentVerify('network not served', body(payload, elsewhere), { ok: false, reason: 'invalid_network' }, 'throws')
    const unknown = { ...requirements, scheme: 'batch-settlement-x' }
    await differentVerify('scheme not served', body(payload, unknown), { ok: false, reason: 'unsupported_scheme' }, 'throws')
    const v1: Body = { x402Version: 1, paymentPayload: { x402Version: 1, scheme: 'batch-settlement', network: 'base-sepolia', payload }, paymentRequirements: { ...requirements, network: 'base-sepolia', maxAmountRequired: '1000', resource: 'https://example.test/r', description: '', mimeType: 'application/json' } } as unknown as Body
    await differentVerify('x402 v1 request', v1, { ok: false, reason: 'invalid_network' }, 'throws')
  })

  it('casing: a mixed-case channel id and lower-case config addresses', async () => {
    const upper = `0x${shared.id.slice(2).toUpperCase()}` as Hex
    const mixed = await voucherPayload(4000n)
    // We answer the channel id as the contract hashes it (lower case), whatever the client wrote: one key per channel for a server.
    await differentVerify('channelId in upper case', body({ ...mixed, voucher: { ...mixed.voucher, channelId: upper } }), { ok: true, extra: snapshot('10000', '3000') }, { ok: true, extra: { ...snapshot('10000', '3000'), channelId: upper } })
    const lower = Object.fromEntries(Object.entries(shared.config).map(([k, v]) => [k, typeof v === 'string' ? v.toLowerCase() : v]))
    // We answer the payer checksummed (EIP-55), as every other answer of ours; the official echoes the client's casing.
    await differentVerify('config addresses in lower case', body({ ...mixed, channelConfig: lower }), { ok: true, payer: shared.payer.address }, { ok: true, payer: shared.payer.address.toLowerCase() })
  })
})

describe('batch-settlement /verify: our safety rules against the official', () => {
  it('a high-s voucher signature: refused by us (the contract’s ECDSA rejects it, so its claim would revert), accepted by the official', async () => {
    const good = await voucherPayload(4000n)
    await differentVerify('voucher with a high-s signature', body({ ...good, voucher: { ...good.voucher, signature: highS(good.voucher.signature) } }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_signature' }, { ok: true })
  })

  it('an ERC-6492-wrapped voucher signature of an EOA authorizer: refused by both', async () => {
    const good = await voucherPayload(4000n)
    const wrapped = serializeErc6492Signature({ address: world.factory.address, data: '0xdeadbeef', signature: good.voucher.signature })
    await sameVerify('voucher in an ERC-6492 envelope', body({ ...good, voucher: { ...good.voucher, signature: wrapped } }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_signature' })
  })

  it('a voucher of a channel without payer authorizer (checked through the payer, an EOA): valid on both, refused on both when signed by another key', async () => {
    const payer = await world.newPayer(100_000n)
    const { config, id } = batchChannel(world, to, payer.address, zeroAddress)
    expect(await ours.settle(body(await depositPayload(world, payer, config, 10_000n, PRICE)))).toMatchObject({ success: true })
    const seen = await sameVerify('voucher, zero payerAuthorizer (SignatureChecker)', body({ type: 'voucher', channelConfig: config, voucher: await voucherOf(payer, id, 2000n) }), { ok: true })
    expect(seen.extra).toEqual(snapshot('10000', '0', id))
    const wrapped = serializeErc6492Signature({ address: world.factory.address, data: '0xdeadbeef', signature: await signVoucher(payer, CHAIN, id, 2000n) })
    await sameVerify('voucher, zero payerAuthorizer, ERC-6492 envelope', body({ type: 'voucher', channelConfig: config, voucher: { channelId: id, maxClaimableAmount: '2000', signature: wrapped } }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_signature' })
    await sameVerify('voucher, zero payerAuthorizer, another signer', body({ type: 'voucher', channelConfig: config, voucher: await voucherOf(privateKeyToAccount(generatePrivateKey()), id, 2000n) }), { ok: false, reason: 'invalid_batch_settlement_evm_voucher_signature' })
  })
})

describe('batch-settlement /settle: the same flow on a channel of each side', () => {
  type Step = Awaited<ReturnType<typeof seeSettle>>
  /** What a client compares across sides: everything but the values that name the side's own channel, payer and transaction. */
  const comparable = (step: Step, payer: string) => {
    if ('threw' in step) return step
    // Messages are free text; the rest is compared.
    const { transaction, payer: answeredPayer, extra, errorMessage: _message, ...rest } = step.raw!
    const state = (extra as { channelState?: Record<string, unknown> } | undefined)?.channelState
    return {
      ...rest,
      transaction: shape(transaction),
      payer: answeredPayer === undefined ? 'absent' : answeredPayer === payer ? 'the payer' : answeredPayer,
      extra: extra === undefined ? 'absent' : { ...(extra as object), ...(state ? { channelState: { ...state, channelId: shape(state.channelId) } } : {}) },
    }
  }

  it('deposit, claim, sweep, refund, then a stale refund and a voucher at /settle: the same answers on both', async () => {
    const runs: Record<'ours' | 'official', Record<string, ReturnType<typeof comparable>>> = { ours: {}, official: {} }
    for (const side of ['ours', 'official'] as const) {
      const mine: BatchReceiver = { receiver: privateKeyToAccount(generatePrivateKey()).address, authorizer: to.authorizer }
      const reqs = batchRequirements(world, mine)
      const payer = await world.newPayer(100_000n)
      const { config, id } = batchChannel(world, mine, payer.address)
      const step = async (name: string, payload: unknown) => {
        const seen = await seeSettle(side, body(payload, reqs))
        runs[side][name] = comparable(seen, payer.address)
        return seen
      }
      const deposit = await depositPayload(world, payer, config, 10_000n, PRICE)
      const first = await step('deposit', deposit)
      expect(first, `${side} deposit`).toMatchObject({ ok: true })
      const again = await step('the same deposit again', deposit)
      if (side === 'ours') expect(again).toMatchObject({ raw: { transaction: (first as Answer).raw!.transaction } })
      const voucher = await voucherOf(payer, id, 2000n)
      const claims = [{ voucher: { channel: config, maxClaimableAmount: 2000n }, signature: voucher.signature, totalClaimed: 2000n }]
      const claimRows = [{ voucher: { channel: config, maxClaimableAmount: '2000' }, signature: voucher.signature, totalClaimed: '2000' }]
      expect(await step('claim', { type: 'claim', claims: claimRows, claimAuthorizerSignature: await signClaimBatch(to.authorizer, CHAIN, claims) }), `${side} claim`).toMatchObject({ ok: true })
      expect(await step('sweep', { type: 'settle', receiver: mine.receiver, token: world.token.address }), `${side} sweep`).toMatchObject({ ok: true })
      const refund = async (nonce: bigint, amount: bigint) => ({ type: 'refund', channelConfig: config, voucher, amount: amount.toString(), refundNonce: nonce.toString(), claims: [], refundAuthorizerSignature: await signRefund(to.authorizer, CHAIN, id, nonce, amount) })
      expect(await step('refund', await refund(0n, 3000n)), `${side} refund`).toMatchObject({ ok: true })
      expect(await channelOnChain(world, id)).toEqual([7000n, 2000n])
      await step('stale refund (nonce used)', await refund(0n, 500n))
      await step('refund, nonce ahead', await refund(5n, 500n))
      await step('voucher at /settle', { type: 'voucher', channelConfig: config, voucher: await voucherOf(payer, id, 3000n) })
      expect(await channelOnChain(world, id)).toEqual([7000n, 2000n])
    }
    for (const name of Object.keys(runs.ours)) {
      const [a, b] = [runs.ours[name]!, runs.official[name]!]
      table.push(`| settle: ${name} | ${JSON.stringify(a)} | ${JSON.stringify(b)} |`)
    }
    const differences = {
      // The spec's deposit answer carries `asset`; the official leaves it out.
      deposit: { ...runs.official.deposit, asset: world.token.address },
      // A repeat of a settled deposit (a retry after a lost answer) is answered from its record: the first answer, amount, asset and
      // channel state included, not a failure (the official's repeat fails its simulation).
      'the same deposit again': { ...runs.official.deposit, asset: world.token.address },
      // The spec's claim answer has `amount: ""` (no funds move); the official leaves it out.
      claim: { ...runs.official.claim, amount: '' },
      // Our core keys a refund by channel and nonce: a second refund on a used nonce is a duplicate, naming the transaction that used it.
      // A refused refund names its payer with us, as our other settle refusals on a payload that names one.
      'refund, nonce ahead': { ...runs.official['refund, nonce ahead'], payer: 'the payer' },
      'stale refund (nonce used)': { success: false, errorReason: 'duplicate_settlement', network: 'eip155:84532', transaction: 'hex32-lower', payer: 'absent', extra: 'absent' },
    }
    expect(runs.official['stale refund (nonce used)']).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_refund_simulation_failed', transaction: 'empty' })
    expect(runs.official['the same deposit again']).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_deposit_simulation_failed' })
    expect(runs.official['refund, nonce ahead']).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_refund_simulation_failed' })
    expect(runs.ours).toEqual({ ...runs.official, ...differences })
  })
})

describe('batch-settlement: channels, deposit signatures, refunds at /verify, claims and sweeps at /settle', () => {
  it('a voucher of a channel nobody funded; a deposit signed by another key; requirements without the token’s EIP-712 domain', async () => {
    const payer = await world.newPayer(100_000n)
    const { config, id } = batchChannel(world, to, payer.address)
    await sameVerify('voucher, channel never funded', body({ type: 'voucher', channelConfig: config, voucher: await voucherOf(payer, id, PRICE) }), { ok: false, reason: 'invalid_batch_settlement_evm_channel_not_found' })
    const deposit = await depositPayload(world, payer, config)
    const forged = await depositPayload(world, privateKeyToAccount(generatePrivateKey()), config)
    const authorization = { erc3009Authorization: forged.deposit.authorization.erc3009Authorization }
    await sameVerify('deposit, authorization signed by another key', body({ ...deposit, deposit: { ...deposit.deposit, authorization } }), { ok: false, reason: 'invalid_batch_settlement_evm_receive_authorization_signature' })
    const { name: _name, version: _version, ...domainless } = requirements.extra
    await sameVerify('deposit, requirements without name/version', body(deposit, { ...requirements, extra: domainless }), { ok: false, reason: 'invalid_batch_settlement_evm_missing_eip712_domain' })
  })

  it('a client’s refund at /verify: the zero-charge voucher on both; the refund’s own terms only with us', async () => {
    const zeroCharge = await voucherOf(shared.payer, shared.id, 3000n)
    const refund = (fields: Record<string, unknown> = {}) => body({ type: 'refund', channelConfig: shared.config, voucher: zeroCharge, ...fields })
    const seen = await sameVerify('refund, voucher = totalClaimed', refund(), { ok: true })
    expect(seen.extra).toEqual(snapshot('10000', '3000'))
    await sameVerify('refund, voucher < totalClaimed', body({ type: 'refund', channelConfig: shared.config, voucher: await voucherOf(shared.payer, shared.id, 2999n) }), { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_below_claimed' })
    // The official's verify checks the voucher alone; we check the refund itself as settle will (its server raises the same code).
    await differentVerify('refund, amount > refundable', refund({ amount: '7001' }), { ok: false, reason: 'invalid_batch_settlement_evm_refund_amount_invalid' }, { ok: true })
    await differentVerify('refund, amount 0', refund({ amount: '0' }), { ok: false, reason: 'invalid_batch_settlement_evm_refund_amount_invalid' }, { ok: true })
    const signed = await signRefund(to.authorizer, CHAIN, shared.id, 1n, 1000n)
    await differentVerify('refund, nonce not the next', refund({ amount: '1000', refundNonce: '1', claims: [], refundAuthorizerSignature: signed }), { ok: false, reason: 'invalid_batch_settlement_evm_refund_simulation_failed' }, { ok: true })
  })

  it('claims that cannot raise anything, and a sweep with nothing claimed', async () => {
    const claim = async (max: bigint, total: bigint, signer = shared.payer) => {
      const signature = await signVoucher(signer, CHAIN, shared.id, max)
      const rows = [{ voucher: { channel: shared.config, maxClaimableAmount: max }, signature, totalClaimed: total }]
      const wire = [{ voucher: { channel: shared.config, maxClaimableAmount: max.toString() }, signature, totalClaimed: total.toString() }]
      return body({ type: 'claim', claims: wire, claimAuthorizerSignature: await signClaimBatch(to.authorizer, CHAIN, rows) })
    }
    const both = async (name: string, b: Body) => {
      const [a, o] = [await seeSettle('ours', b), await seeSettle('official', b)]
      table.push(`| settle: ${name} | ${label(a)} | ${label(o)} |`)
      return [a, o] as const
    }
    const [a1, o1] = await both('claim, voucher signed by another key', await claim(4000n, 4000n, privateKeyToAccount(generatePrivateKey())))
    expect([a1, o1]).toMatchObject([{ ok: false, reason: 'invalid_batch_settlement_evm_claim_simulation_failed' }, { ok: false, reason: 'invalid_batch_settlement_evm_claim_simulation_failed' }])
    // A row claiming more than its voucher: malformed, refused before simulating (the spec's claim code); the contract's revert gives the official its simulation code.
    const [a2, o2] = await both('claim, totalClaimed > maxClaimableAmount', await claim(4000n, 4001n))
    expect([a2, o2]).toMatchObject([{ ok: false, reason: 'invalid_batch_settlement_evm_claim_payload' }, { ok: false, reason: 'invalid_batch_settlement_evm_claim_simulation_failed' }])
    // The very claim that raised the total to 3,000, again: we answer it from its record (its transaction); the official sends a no-op claim.
    const [a3, o3] = await both('claim repeated (same request)', await claim(3000n, 3000n))
    expect(a3).toMatchObject({ ok: true, raw: { transaction: sharedClaimTx } })
    expect(o3).toMatchObject({ ok: true })
    expect(o3).not.toMatchObject({ raw: { transaction: sharedClaimTx } })
    // A claim under the claimed total raises nothing: we send nothing (it would only spend gas); the official sends it.
    const [a5, o5] = await both('claim below the claimed total', await claim(3500n, 2500n))
    expect([a5, o5]).toMatchObject([{ ok: false, reason: 'invalid_batch_settlement_evm_claim_payload' }, { ok: true }])
    expect(await channelOnChain(world, shared.id)).toEqual([10_000n, 3000n])
    const nobody = privateKeyToAccount(generatePrivateKey()).address
    const [a4, o4] = await both('sweep, nothing claimed', body({ type: 'settle', receiver: nobody, token: world.token.address }))
    expect(a4).toEqual({ ...o4, raw: expect.anything() })
    expect(o4).toMatchObject({ ok: false, reason: 'invalid_batch_settlement_evm_nothing_to_settle' })
  })
})
