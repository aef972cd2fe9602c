/**
 * `upto` on EVM through Permit2, on anvil: the real Permit2 and our x402 upto proxy (written to the
 * spec) at their canonical addresses; payloads from the official @x402/evm upto client and from our
 * own signer to the spec's typed data.
 */
import { parseEventLogs, serializeErc6492Signature, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, REJECTION } from '../../src/index.js'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import { evmSchemes, PERMIT2_ADDRESS, permitWitnessTransferFromTypes, X402_EXACT_PERMIT2_PROXY, X402_UPTO_PERMIT2_PROXY } from '../../src/evm/index.js'
import type { BroadcastRecord } from '../../src/core/adapter.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { fundPayer, tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { resumeDirectly, settleDirectly, verifyDirectly } from '../support/adapter-steps.js'
import { requestsDuring, startFaultProxy } from '../support/fault-proxy.js'
import { installPermit2, newPermit2Payer, signUptoAuthorization } from '../support/permit2-contracts.js'
import { officialUptoPayload, uptoRequirements as requirementsFor } from '../support/upto-payments.js'

let world: EvmFixture
let facilitator: ReturnType<typeof createFacilitator>
let facilitatorAddress: string

const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirementsV2) => ({ x402Version: 2, paymentPayload, paymentRequirements })

/** Upto requirements (maximum 5000) naming the facilitator's listed address. */
const uptoRequirements = (overrides: Partial<PaymentRequirementsV2> = {}): PaymentRequirementsV2 => requirementsFor(world, facilitatorAddress, overrides)

/** The settle request of a resource server that used `amount` of the maximum. */
const used = (requirements: PaymentRequirementsV2, amount: string): PaymentRequirementsV2 => ({ ...requirements, amount })

const uptoPayer = (): Promise<LocalAccount> => newPermit2Payer(world)

const officialPayload = async (payer: LocalAccount, requirements: PaymentRequirementsV2): Promise<PaymentPayload> => (await officialUptoPayload(payer, requirements)) as unknown as PaymentPayload

/** A payload signed here to the spec's typed data (witness: to, facilitator, validAfter). */
async function ownPayload(payer: Pick<LocalAccount, 'address' | 'signTypedData'>, requirements: PaymentRequirementsV2, change: { facilitator?: Hex; spender?: Hex; amount?: bigint; nonce?: bigint } = {}): Promise<PaymentPayload> {
  const permit2Authorization = {
    from: payer.address,
    permitted: { token: requirements.asset, amount: String(change.amount ?? requirements.amount) },
    spender: change.spender ?? X402_UPTO_PERMIT2_PROXY,
    nonce: String(change.nonce ?? randomNonce()),
    deadline: String(Math.floor(Date.now() / 1000) + 300),
    witness: { to: requirements.payTo, facilitator: change.facilitator ?? facilitatorAddress, validAfter: '0' },
  }
  const signature = await signUptoAuthorization(world, payer, permit2Authorization)
  return { x402Version: 2, accepted: requirements, payload: { signature, permit2Authorization } } as PaymentPayload
}

const randomNonce = () => BigInt(`0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`)

/** An `exact` payment through Permit2 (the exact proxy as spender), signed here with the given Permit2 nonce. */
async function exactPermit2Payload(payer: LocalAccount, nonce: bigint, amount: bigint) {
  const requirements = world.requirementsV2({ amount: amount.toString(), extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' } })
  const fields = {
    permitted: { token: requirements.asset as Hex, amount },
    spender: X402_EXACT_PERMIT2_PROXY,
    nonce,
    deadline: BigInt(Math.floor(Date.now() / 1000) + 300),
    witness: { to: requirements.payTo as Hex, validAfter: 0n },
  }
  const signature = await payer.signTypedData({
    domain: { name: 'Permit2', chainId: world.node.chainId, verifyingContract: PERMIT2_ADDRESS },
    types: permitWitnessTransferFromTypes,
    primaryType: 'PermitWitnessTransferFrom',
    message: fields,
  })
  const text = (v: bigint) => v.toString()
  const permit2Authorization = {
    from: payer.address,
    permitted: { token: fields.permitted.token, amount: text(amount) },
    spender: fields.spender,
    nonce: text(nonce),
    deadline: text(fields.deadline),
    witness: { to: fields.witness.to, validAfter: '0' },
  }
  return { requirements, paymentPayload: { x402Version: 2, accepted: requirements, payload: { signature, permit2Authorization } } as PaymentPayload }
}

/** The context the core hands an adapter for this settle request (its routing checks passed). */
function contextOf(registry: ReturnType<typeof createRegistry>, paymentPayload: PaymentPayload, requirements: PaymentRequirementsV2) {
  const parsed = parsePaymentRequest(body(paymentPayload, requirements))
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(registry, parsed.request, AbortSignal.timeout(30_000), 'settle')
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  return routed.context
}

/** The upto adapter alone in a registry, and one official payment of a new payer: `contextFor` routes it with other requirements (a usage). */
async function uptoAdapterPayment() {
  const [, upto] = evmSchemes(world.adapterConfig())
  const registry = createRegistry([upto!])
  const payer = await uptoPayer()
  const requirements = uptoRequirements()
  const paymentPayload = await officialPayload(payer, requirements)
  return { upto: upto!, payer, requirements, contextFor: (r: PaymentRequirementsV2) => contextOf(registry, paymentPayload, r) }
}

/** How many transactions the facilitator's signers have sent (pending included): unchanged means nothing was sent. */
const sentByFacilitator = async () => {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}

const transfersOf = async (hash: string) => {
  const receipt = await world.node.publicClient.getTransactionReceipt({ hash: hash as Hex })
  return parseEventLogs({ abi: world.token.abi, logs: receipt.logs, eventName: 'Transfer' })
}

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  facilitator = createFacilitator({ schemes: evmSchemes(world.adapterConfig()) })
  await world.warmUp(facilitator)
  const supported = await facilitator.supported()
  const kind = supported.kinds.find((k) => k.scheme === 'upto' && k.network === 'eip155:84532')
  facilitatorAddress = (kind?.extra as { facilitatorAddress: string }).facilitatorAddress
}, 120_000)
afterAll(async () => world?.stop())

describe('evmSchemes: upto through Permit2', () => {
  it('lists the upto kind (v2) with extra.facilitatorAddress, one of its signers', async () => {
    const supported = await facilitator.supported()
    expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: 'upto', network: 'eip155:84532', extra: { facilitatorAddress: world.signers[0]!.address } })
    expect(supported.kinds.some((k) => k.scheme === 'upto' && k.x402Version === 1)).toBe(false)
    expect(supported.kinds.some((k) => k.scheme === 'exact')).toBe(true)
  })

  it('verifies an official upto payload with the maximum and settles a lower usage: the usage moves, from the named signer, with amount in the answer', async () => {
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const paymentPayload = await officialPayload(payer, requirements)
    expect(paymentPayload.payload).toHaveProperty('permit2Authorization.spender', X402_UPTO_PERMIT2_PROXY)
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, used(requirements, '1234')))
    expect(answer).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'eip155:84532', payer: payer.address, amount: '1234' })
    const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
    expect(tx.to?.toLowerCase()).toBe(X402_UPTO_PERMIT2_PROXY.toLowerCase())
    expect(tx.from.toLowerCase()).toBe(facilitatorAddress.toLowerCase())
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1234n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1234n)
    expect(await transfersOf(answer.transaction)).toHaveLength(1)
  })

  it('settles the whole maximum of a payload signed here, and sends from the second signer when the witness names it', async () => {
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const second = world.signers[1]!.address
    const paymentPayload = await ownPayload(payer, requirements, { facilitator: second })
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toMatchObject({ success: true, amount: '5000' })
    const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
    expect(tx.from.toLowerCase()).toBe(second.toLowerCase())
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 5000n)
  })

  it('answers a zero usage as success with no transaction and amount "0", sends nothing, and settles that permit at most once', async () => {
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const paymentPayload = await ownPayload(payer, requirements)
    const sent = await sentByFacilitator()
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, used(requirements, '0')))
    expect(answer).toEqual({ success: true, transaction: '', network: 'eip155:84532', payer: payer.address, amount: '0' })
    expect(await sentByFacilitator()).toBe(sent)
    // Nothing on chain shows it, yet the permit is spent: verify says so (from the settle store).
    expect(await facilitator.verify(body(paymentPayload, requirements))).toMatchObject({ isValid: false, invalidReason: REJECTION.duplicateSettlement, payer: payer.address })
    // Re-encoded (keys added that the parser ignores): the same authorization, still spent.
    const inner = paymentPayload.payload as { permit2Authorization: Record<string, unknown> }
    const reencoded = { ...paymentPayload, payload: { ...inner, junk: 1, permit2Authorization: { ...inner.permit2Authorization, extra: 'x' } } } as PaymentPayload
    expect(await facilitator.verify(body(reencoded, requirements))).toMatchObject({ isValid: false, invalidReason: REJECTION.duplicateSettlement })
    // Repeated with another amount: the same permit is not charged again.
    const again = await facilitator.settle(body(paymentPayload, used(requirements, '100')))
    expect(again.success).toBe(false)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before)
  })

  it('one Permit2 nonce signed for the exact and for the upto proxy, settled at once: one claim, one transaction, none reverted', async () => {
    const payer = await uptoPayer()
    const nonce = randomNonce()
    const upto = uptoRequirements()
    const uptoPayload = await ownPayload(payer, upto, { nonce })
    const exact = await exactPermit2Payload(payer, nonce, 3000n)
    // Each verifies valid alone: Permit2 has not spent the nonce yet.
    expect(await facilitator.verify(body(uptoPayload, upto))).toMatchObject({ isValid: true })
    expect(await facilitator.verify(body(exact.paymentPayload, exact.requirements))).toMatchObject({ isValid: true })
    const sent = await sentByFacilitator()
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answers = await Promise.all([facilitator.settle(body(exact.paymentPayload, exact.requirements)), facilitator.settle(body(uptoPayload, used(upto, '1000')))])
    const landed = answers.filter((a) => a.success)
    expect(landed).toHaveLength(1)
    // The other is refused before anything is sent, naming the settlement that spent the nonce.
    expect(answers.find((a) => !a.success)).toMatchObject({ errorReason: REJECTION.duplicateSettlement, transaction: landed[0]!.transaction })
    expect(await sentByFacilitator()).toBe(sent + 1)
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: landed[0]!.transaction as Hex })
    expect(receipt.status).toBe('success')
    const moved = (await tokenBalance(world.node, world.token, world.payTo)) - before
    expect([1000n, 3000n]).toContain(moved)
  })

  it('a Permit2 nonce spent by an upto usage of zero no longer verifies as an exact payment either', async () => {
    const payer = await uptoPayer()
    const nonce = randomNonce()
    const upto = uptoRequirements()
    const uptoPayload = await ownPayload(payer, upto, { nonce })
    expect(await facilitator.settle(body(uptoPayload, used(upto, '0')))).toMatchObject({ success: true, transaction: '', amount: '0' })
    const exact = await exactPermit2Payload(payer, nonce, 3000n)
    const sent = await sentByFacilitator()
    expect(await facilitator.verify(body(exact.paymentPayload, exact.requirements))).toMatchObject({ isValid: false, invalidReason: REJECTION.duplicateSettlement })
    expect(await facilitator.settle(body(exact.paymentPayload, exact.requirements))).toMatchObject({ success: false, errorReason: REJECTION.duplicateSettlement })
    expect(await sentByFacilitator()).toBe(sent)
  })

  it('refuses a usage above the maximum before sending anything (invalid_upto_evm_payload_settlement_exceeds_amount)', async () => {
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const sent = await sentByFacilitator()
    const answer = await facilitator.settle(body(paymentPayload, used(requirements, '5001')))
    expect(answer).toMatchObject({ success: false, errorReason: 'invalid_upto_evm_payload_settlement_exceeds_amount', transaction: '', amount: '0' })
    expect(await sentByFacilitator()).toBe(sent)
    // The permit is still good for a usage within the maximum.
    expect(await facilitator.settle(body(paymentPayload, used(requirements, '5000')))).toMatchObject({ success: true, amount: '5000' })
  })

  it('refuses a witness naming another facilitator (upto_facilitator_mismatch), the exact proxy as spender, and a permit that is not the maximum, unsent', async () => {
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const stranger = privateKeyToAccount(generatePrivateKey()).address
    const sent = await sentByFacilitator()
    const wrongFacilitator = await ownPayload(payer, requirements, { facilitator: stranger })
    expect(await facilitator.verify(body(wrongFacilitator, requirements))).toMatchObject({ isValid: false, invalidReason: 'upto_facilitator_mismatch', payer: payer.address })
    expect(await facilitator.settle(body(wrongFacilitator, used(requirements, '10')))).toMatchObject({ success: false, errorReason: 'upto_facilitator_mismatch', amount: '0' })
    const exactSpender = await ownPayload(payer, requirements, { spender: '0x402085c248EeA27D92E8b30b2C58ed07f9E20001' })
    expect(await facilitator.verify(body(exactSpender, requirements))).toMatchObject({ isValid: false, invalidReason: 'invalid_permit2_spender' })
    const smaller = await ownPayload(payer, requirements, { amount: 4000n })
    expect(await facilitator.verify(body(smaller, requirements))).toMatchObject({ isValid: false, invalidReason: 'permit2_amount_mismatch' })
    expect(await sentByFacilitator()).toBe(sent)
  })

  it('ERC-6492: an undeployed wallet\'s upto payment is refused clearly (it cannot have approved Permit2), a factory outside the allow-list as for EIP-3009; unsent', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const salt = generatePrivateKey()
    const wallet = await world.factory.walletAddress(owner.address, salt)
    await fundPayer(world.node, world.token, wallet, 1_000_000n)
    const requirements = uptoRequirements()
    const signed = await ownPayload({ ...owner, address: wallet }, requirements)
    const wrapped = (factory: Hex) => ({
      ...signed,
      payload: { ...(signed.payload as object), signature: serializeErc6492Signature({ address: factory, data: world.factory.deployCalldata(owner.address, salt), signature: (signed.payload as { signature: Hex }).signature }) },
    }) as PaymentPayload
    const sent = await sentByFacilitator()
    expect(await facilitator.verify(body(wrapped(world.factory.address), requirements))).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_payload_undeployed_smart_wallet',
      invalidMessage: expect.stringContaining('cannot have approved Permit2'),
      payer: wallet,
    })
    expect(await facilitator.settle(body(wrapped(world.factory.address), used(requirements, '10')))).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_payload_undeployed_smart_wallet', amount: '0' })
    expect(await facilitator.verify(body(wrapped(world.payTo), requirements))).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_payload_eip6492_factory_not_allowed' })
    expect(await sentByFacilitator()).toBe(sent)
  })

  it('settles racing settles of one permit with different amounts exactly once, and a repeat answers as a duplicate', async () => {
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const amounts = ['100', '200', '300', '400', '500', '600', '700', '800']
    const answers = await Promise.all(amounts.map((amount) => facilitator.settle(body(paymentPayload, used(requirements, amount)))))
    const landed = answers.filter((a) => a.success)
    expect(landed).toHaveLength(1)
    for (const other of answers.filter((a) => !a.success)) expect([REJECTION.duplicateSettlement, REJECTION.settlementInProgress]).toContain(other.errorReason)
    const charged = BigInt(landed[0]!.amount!)
    expect(amounts).toContain(landed[0]!.amount)
    const repeat = await facilitator.settle(body(paymentPayload, used(requirements, '900')))
    expect(repeat).toMatchObject({ success: false, errorReason: REJECTION.duplicateSettlement, transaction: landed[0]!.transaction })
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + charged)
    expect(await transfersOf(landed[0]!.transaction)).toHaveLength(1)
  })

  it('past the receipt bound answers settlement_pending with the usage and the hash; a later settle finishes it, another amount is another payment and cannot change it', async () => {
    const patient = createFacilitator({ schemes: evmSchemes(world.adapterConfig({ receiptTimeoutMs: 300 })) })
    const payer = await uptoPayer()
    const requirements = uptoRequirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const before = await tokenBalance(world.node, world.token, world.payTo)
    await world.node.testClient.setAutomine(false)
    let pending
    try {
      pending = await patient.settle(body(paymentPayload, used(requirements, '777')))
      // While it is pending, a settle of the same permit for another amount sends nothing new.
      const sent = await sentByFacilitator()
      const other = await patient.settle(body(paymentPayload, used(requirements, '999')))
      // Another usage of the same permit is another payment: refused, naming the transaction in flight.
      expect(other).toMatchObject({ success: false, errorReason: REJECTION.duplicateSettlement, transaction: pending.transaction, amount: '0' })
      expect(await sentByFacilitator()).toBe(sent)
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(pending).toMatchObject({ success: false, errorReason: REJECTION.settlementPending, payer: payer.address, amount: '777', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
    await world.node.testClient.mine({ blocks: 1 })
    // Finished by the retry of the same request; another usage still cannot claim it.
    expect(await patient.settle(body(paymentPayload, used(requirements, '777')))).toMatchObject({ success: true, transaction: pending.transaction, payer: payer.address, amount: '777' })
    expect(await patient.settle(body(paymentPayload, used(requirements, '999')))).toMatchObject({ success: false, errorReason: REJECTION.duplicateSettlement, transaction: pending.transaction })
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 777n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 777n)
    expect(await transfersOf(pending.transaction)).toHaveLength(1)
  })

  it('records the transaction before sending it, and resume() sends the recorded bytes (the usage they carry) after a crash', async () => {
    const { upto, payer, requirements, contextFor } = await uptoAdapterPayment()
    let recorded: BroadcastRecord | undefined
    const crash = new Error('process died right after journaling')
    await expect(settleDirectly(upto, contextFor(used(requirements, '321')), { broadcasting: async (record) => { recorded = record; throw crash } })).rejects.toBe(crash)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n)
    const resumed = await resumeDirectly(upto, contextFor(used(requirements, '321')), recorded!)
    expect(resumed).toMatchObject({ success: true, transaction: recorded!.transaction, payer: payer.address })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 321n)
  })

  it('a settle of a usage below the maximum simulates the call it sends (the usage) once, in its verify, and sends it as simulated', async () => {
    const proxy = await startFaultProxy(world.node.rpcUrl)
    try {
      const counted = createFacilitator({ schemes: evmSchemes(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset] }], feeCacheMs: 600_000 })) })
      const requirements = uptoRequirements()
      // The first call of an adapter reads its fee quote; the next ones use it.
      await counted.verify(body(await officialPayload(await uptoPayer(), requirements), requirements))
      const payer = await uptoPayer()
      const paymentPayload = await officialPayload(payer, requirements)
      const { result: settled, requests } = await requestsDuring(proxy, () => counted.settle(body(paymentPayload, used(requirements, '2500'))))
      expect(settled).toMatchObject({ success: true, amount: '2500' })
      const calls = requests.flat()
      const proxyCalls = calls.filter((call) => call.method === 'eth_call').map((call) => (call.params as [{ to: string; data: string }])[0]).filter((tx) => tx.to.toLowerCase() === X402_UPTO_PERMIT2_PROXY.toLowerCase())
      // One simulation of the proxy call, with the usage in it, and the same bytes on chain.
      expect(proxyCalls).toHaveLength(1)
      const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
      expect(tx.input).toBe(proxyCalls[0]!.data)
      expect(calls.map((call) => call.method)).not.toContain('eth_estimateGas')
      expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 2500n)
      await counted.close()
    } finally {
      await proxy.close()
    }
  })

  it('the core lets only upto settle requests differ from accepted in amount; every other field still must match', () => {
    const [exact, upto] = evmSchemes(world.adapterConfig())
    const registry = createRegistry([exact!, upto!])
    const route = (paymentPayload: PaymentPayload, requirements: PaymentRequirementsV2, operation: 'verify' | 'settle' = 'settle') => {
      const parsed = parsePaymentRequest(body(paymentPayload, requirements))
      if (!parsed.ok) throw new Error('bad test request')
      return dispatch(registry, parsed.request, AbortSignal.timeout(1_000), operation)
    }
    const upRequirements = uptoRequirements()
    const upPayload = { x402Version: 2, accepted: upRequirements, payload: {} } as PaymentPayload
    const routed = route(upPayload, used(upRequirements, '10'))
    expect('context' in routed && routed.context.amount).toBe(10n)
    // A verify request carries the maximum the client accepted: a lower amount there is a mismatch.
    expect(route(upPayload, used(upRequirements, '10'), 'verify')).toMatchObject({ rejection: { reason: REJECTION.acceptedMismatch, message: expect.stringContaining('amount') } })
    expect(route(upPayload, { ...upRequirements, payTo: world.signers[1]!.address })).toMatchObject({ rejection: { reason: REJECTION.acceptedMismatch } })
    const exRequirements = world.requirementsV2()
    const exPayload = { x402Version: 2, accepted: exRequirements, payload: {} } as PaymentPayload
    expect(route(exPayload, { ...exRequirements, amount: '10' })).toMatchObject({ rejection: { reason: REJECTION.acceptedMismatch, message: expect.stringContaining('amount') } })
  })

  it('holds the amount actually charged (Verdict.spend): the usage on settle, the maximum on verify', async () => {
    const { upto, requirements, contextFor } = await uptoAdapterPayment()
    const forVerify = await verifyDirectly(upto, contextFor(requirements))
    expect(forVerify.response).toMatchObject({ isValid: true })
    expect(forVerify.spend).toMatchObject({ amount: 5000n, balance: 1_000_000n })
    const forSettle = await verifyDirectly(upto, contextFor(used(requirements, '42')))
    expect(forSettle.response).toMatchObject({ isValid: true })
    expect(forSettle.spend).toMatchObject({ amount: 42n })
  })
})
