/**
 * batchSettlementEvm() guards found by the security review, on anvil: signatures the contract's
 * ECDSA refuses (high s, v 0/1) are refused at verify, a settle transaction over the gas cap is
 * never sent, and concurrent sweeps of one receiver send one transaction (the rest re-check and
 * find nothing to do).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BatchSettlementEvmScheme, computeChannelId, InMemoryClientChannelStorage } from '@x402/evm/batch-settlement/client'
import type { Hex, LocalAccount } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { createHandler } from '../../../src/http/index.js'
import { batchSettlementEvm } from '../../../src/evm/batch/index.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/evm/batch/constants.js'
import { BatchChain } from '../../../src/evm/batch/chain.js'
import { createEvmSetup } from '../../../src/evm/evm-setup.js'
import { signRefund, signVoucher } from '../../support/batch-settlement-signing.js'
import { batchRequest, batchRequirements, batchScheme, channelOnChain, delegatingBatchFacilitator, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import type { EvmFixture } from '../../support/evm-fixture.js'

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
let world: EvmFixture
let facilitator: Facilitator
const to = newBatchReceiver()
const { authorizer, receiver } = to

beforeAll(async () => {
  world = await startBatchWorld({ signerCount: 2 })
  facilitator = delegatingBatchFacilitator(world, world.node.rpcUrl, authorizer)
}, 120_000)
afterAll(async () => {
  await world?.stop()
})

const requirements = () => batchRequirements(world, to)
const wrap = (payload: unknown) => batchRequest(requirements(), payload)

async function sentBySigners(): Promise<number> {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))
  return counts.reduce((a, b) => a + b, 0)
}

async function pendingBySigners(): Promise<number> {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}

/** The same signature with s' = n - s and the other v: what viem still recovers, and the contract refuses. */
function highS(signature: Hex): Hex {
  const s = BigInt(`0x${signature.slice(66, 130)}`)
  const v = Number.parseInt(signature.slice(130, 132), 16)
  return `${signature.slice(0, 66)}${(N - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

async function openChannel(deposit = 10_000n): Promise<{ payer: LocalAccount; client: BatchSettlementEvmScheme; id: Hex }> {
  const payer = await world.newPayer(1_000_000n)
  const client = new BatchSettlementEvmScheme(payer, { storage: new InMemoryClientChannelStorage(), depositStrategy: () => deposit.toString() })
  const made = await client.createPaymentPayload(2, requirements())
  expect(await facilitator.settle(wrap(made.payload))).toMatchObject({ success: true, amount: deposit.toString() })
  return { payer, client, id: computeChannelId(client.buildChannelConfig(requirements()), 'eip155:84532') as Hex }
}

describe('batchSettlementEvm settle guards', () => {
  it('refuses a voucher signed with high s or with v 0/1, which the contract would reject', async () => {
    const { payer, client, id } = await openChannel()
    const config = client.buildChannelConfig(requirements())
    const good = await signVoucher(payer, 84532, id, 2000n)
    const voucher = (signature: Hex) => wrap({ type: 'voucher', channelConfig: config, voucher: { channelId: id, maxClaimableAmount: '2000', signature } })
    expect(await facilitator.verify(voucher(good))).toMatchObject({ isValid: true })
    expect(await facilitator.verify(voucher(highS(good)))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_voucher_signature' })
    const v01 = `${good.slice(0, 130)}${(Number.parseInt(good.slice(130), 16) - 27).toString(16).padStart(2, '0')}` as Hex
    expect(await facilitator.verify(voucher(v01))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_voucher_signature' })
  })

  it('refuses a high-s Refund signature of an EOA receiver authorizer before sending anything', async () => {
    const { payer, client, id } = await openChannel()
    const config = client.buildChannelConfig(requirements())
    const voucher = { channelId: id, maxClaimableAmount: '0', signature: await signVoucher(payer, 84532, id, 0n) }
    const refundAuthorizerSignature = highS(await signRefund(authorizer, 84532, id, 0n, 100n))
    const before = await sentBySigners()
    const answer = await facilitator.settle(wrap({ type: 'refund', channelConfig: config, voucher, amount: '100', refundNonce: '0', claims: [], refundAuthorizerSignature }))
    expect(answer).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_authorizer_address_mismatch', transaction: '' })
    expect(await sentBySigners()).toBe(before)
    expect(await channelOnChain(world, id)).toEqual([10_000n, 0n])
  })

  it('refuses a settle transaction whose gas estimate exceeds maxSettlementGas, sending nothing', async () => {
    const capped = createFacilitator({ schemes: [batchScheme(world, world.node.rpcUrl, { maxSettlementGas: 50_000n })] })
    const payer = await world.newPayer(1_000_000n)
    const client = new BatchSettlementEvmScheme(payer)
    const made = await client.createPaymentPayload(2, requirements())
    const before = await sentBySigners()
    const answer = await capped.settle(wrap(made.payload))
    expect(answer).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_deposit_simulation_failed', transaction: '' })
    expect(answer.errorMessage).toContain('maxSettlementGas 50000')
    expect(await sentBySigners()).toBe(before)
    expect(() => batchSettlementEvm({ networks: [{ network: 'eip155:84532', rpcUrls: [world.node.rpcUrl] }], signers: world.signers, maxSettlementGas: 0n })).toThrow(/maxSettlementGas/)
  })

  it('sends one transaction for concurrent sweeps of one receiver, refusing the others with nothing_to_settle', async () => {
    const { payer, client, id } = await openChannel()
    const claims = [{ voucher: { channel: client.buildChannelConfig(requirements()), maxClaimableAmount: '3000' }, signature: await signVoucher(payer, 84532, id, 3000n), totalClaimed: '3000' }]
    expect(await facilitator.settle(wrap({ type: 'claim', claims }))).toMatchObject({ success: true })
    const before = await sentBySigners()
    const sweeps = await Promise.all(Array.from({ length: 4 }, () => facilitator.settle(wrap({ type: 'settle', receiver, token: world.token.address }))))
    expect(sweeps.filter((s) => s.success)).toHaveLength(1)
    expect(sweeps.filter((s) => !s.success)).toEqual(Array.from({ length: 3 }, () => expect.objectContaining({ errorReason: 'invalid_batch_settlement_evm_nothing_to_settle', transaction: '' })))
    expect(await sentBySigners()).toBe(before + 1)
  })

  it('re-checks a claim queued behind another claim of its channel, refusing it once that one landed', async () => {
    const { payer, client, id } = await openChannel()
    const claim = async (total: bigint) => wrap({ type: 'claim', claims: [{ voucher: { channel: client.buildChannelConfig(requirements()), maxClaimableAmount: total.toString() }, signature: await signVoucher(payer, 84532, id, total), totalClaimed: total.toString() }] })
    const [high, low] = await Promise.all([claim(4000n), claim(3000n)])
    const before = await sentBySigners()
    await world.node.testClient.setAutomine(false)
    let answers
    try {
      const first = facilitator.settle(high)
      // The 4000 claim is in the pool, not mined: the 3000 claim still passes verify (claimed 0) and queues behind it.
      while ((await pendingBySigners()) === before) await new Promise((r) => setTimeout(r, 20))
      const second = facilitator.settle(low)
      await new Promise((r) => setTimeout(r, 300))
      await world.node.testClient.mine({ blocks: 1 })
      answers = await Promise.all([first, second])
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(answers[0]).toMatchObject({ success: true })
    expect(answers[1]).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_claim_payload', transaction: '' })
    expect(await sentBySigners()).toBe(before + 1)
    expect(await channelOnChain(world, id)).toEqual([10_000n, 4000n])
  }, 60_000)

  it('settles a refund our receiver authorizer signs only for authenticated HTTP callers', async () => {
    const { payer, client, id } = await openChannel()
    const config = client.buildChannelConfig(requirements())
    const voucher = { channelId: id, maxClaimableAmount: '0', signature: await signVoucher(payer, 84532, id, 0n) }
    const body = JSON.stringify(wrap({ type: 'refund', channelConfig: config, voucher, amount: '100', refundNonce: '0', claims: [] }))
    const post = (headers: Record<string, string> = {}) => new Request('http://facilitator.test/settle', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } })
    const before = await sentBySigners()
    const open = await (await createHandler(facilitator)(post())).json()
    expect(open).toMatchObject({ success: false, errorReason: 'settle_requires_authentication', transaction: '' })
    expect(open).not.toHaveProperty('amount')
    expect(await sentBySigners()).toBe(before)
    expect(await channelOnChain(world, id)).toEqual([10_000n, 0n])
    const guarded = createHandler(facilitator, { authenticate: (request) => request.headers.get('authorization') === 'Bearer service' })
    expect((await guarded(post())).status).toBe(401)
    expect(await (await guarded(post({ authorization: 'Bearer service' }))).json()).toMatchObject({ success: true, amount: '100' })
    expect(await channelOnChain(world, id)).toEqual([9_900n, 0n])
  })

  it('refuses in the lane without signing or journaling, and drops lanes nobody waits on', async () => {
    const setup = createEvmSetup({ networks: [{ network: 'eip155:84532', rpcUrls: [world.node.rpcUrl] }], signers: world.signers })
    const runtime = setup.runtimes.get('eip155:84532')!
    const chain = new BatchChain(runtime, { receiptOptions: setup.receiptOptions, rebroadcastIntervalMs: 0, maxGas: 1_000_000n })
    let journaled = 0
    const journal = { broadcasting: async () => void journaled++ }
    const call = { to: BATCH_SETTLEMENT_ADDRESS, data: '0x' as Hex, gas: 21_000n }
    const outcomes = await Promise.all([1, 2].map(() => chain.send(runtime.signers[0]!, call, journal, AbortSignal.timeout(5_000), async () => ({ reason: 'nothing' }), ['0xchannel'])))
    expect(outcomes).toEqual([{ state: 'refused', reason: 'nothing' }, { state: 'refused', reason: 'nothing' }])
    expect(journaled).toBe(0)
    await new Promise((r) => setTimeout(r, 0))
    expect((chain as unknown as { lanes: Map<string, unknown> }).lanes.size).toBe(0)
  })
})
