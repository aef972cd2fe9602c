/**
 * batchSettlementEvm() through the core facilitator on anvil, with payloads made by the official
 * `@x402/evm` batch-settlement client: deposits (EIP-3009 and Permit2) verified and settled, vouchers
 * verified (an EOA voucher with fresh state without any RPC request), hostile vouchers refused, a
 * claim over several channels signed by our delegated receiver authorizer, the sweep, refunds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BatchSettlementEvmScheme, computeChannelId, InMemoryClientChannelStorage } from '@x402/evm/batch-settlement/client'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Hex, LocalAccount } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { batchSettlementAbi } from '../../../src/evm/batch/abi.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/evm/batch/constants.js'
import { channelConfig, signVoucher } from '../../support/batch-settlement-signing.js'
import { batchRequest, batchRequirements, batchScheme, channelOnChain, delegatingBatchFacilitator, depositPayload, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import { deploySmartWallet, fundPayer, tokenBalance } from '../../support/evm-contracts.js'
import { channelId } from '../../../src/evm/batch/codec.js'
import { encodeFunctionData, getAddress, zeroAddress } from 'viem'
import type { EvmFixture } from '../../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js'
import { approvePermit2 } from '../../support/permit2-contracts.js'

let world: EvmFixture
let facilitator: Facilitator
/** Counts the adapter's JSON-RPC requests on their way to anvil (`requests`). */
let proxy: FaultProxy
let rpc: string
const to = newBatchReceiver()
const { authorizer, receiver } = to

beforeAll(async () => {
  world = await startBatchWorld()
  proxy = await startFaultProxy(world.node.rpcUrl)
  rpc = proxy.url
  facilitator = delegatingBatchFacilitator(world, rpc, authorizer)
}, 120_000)
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})

const requirements = (extra: Record<string, unknown> = {}) => batchRequirements(world, to, { extra })

async function pay(client: BatchSettlementEvmScheme, reqs = requirements()) {
  const made = await client.createPaymentPayload(2, reqs)
  return { body: batchRequest(reqs, made.payload), payload: made.payload as Record<string, unknown> }
}

/** A payer whose channel holds `deposit` after an EIP-3009 deposit settled through the facilitator. */
async function openChannel(deposit = 10_000n): Promise<{ payer: LocalAccount; client: BatchSettlementEvmScheme; storage: InMemoryClientChannelStorage; id: Hex }> {
  const payer = await world.newPayer(1_000_000n)
  const storage = new InMemoryClientChannelStorage()
  const client = new BatchSettlementEvmScheme(payer, { storage, depositStrategy: () => deposit.toString() })
  const { body } = await pay(client)
  const settled = await facilitator.settle(body)
  expect(settled).toMatchObject({ success: true, amount: deposit.toString() })
  const id = computeChannelId(client.buildChannelConfig(requirements()), 'eip155:84532')
  await storage.set(id, { balance: deposit.toString(), chargedCumulativeAmount: '1000' })
  return { payer, client, storage, id }
}

describe('batchSettlementEvm', () => {
  it('lists the kind with the delegated receiver authorizer', async () => {
    const { kinds, signers } = await facilitator.supported()
    expect(kinds).toContainEqual({ x402Version: 2, scheme: 'batch-settlement', network: 'eip155:84532', extra: { receiverAuthorizer: authorizer.address } })
    expect(signers['eip155:*']).toContain(world.signers[0]!.address)
  })

  it('reports the RPC, the three contracts and the signers ready', async () => {
    const adapter = batchScheme(world, rpc)
    const checks = await adapter.readiness!(AbortSignal.timeout(10_000))
    expect(checks.map((c) => [c.name.split(' 0x')[0], c.ok])).toEqual([
      ['rpc eip155:84532', true],
      ['x402BatchSettlement eip155:84532', true],
      ['erc3009 deposit collector eip155:84532', true],
      ['permit2 deposit collector eip155:84532', true],
      ['signer', true],
    ])
  })

  it('verifies and settles an EIP-3009 deposit from the official client, answering the channel state', async () => {
    const payer = await world.newPayer(1_000_000n)
    const client = new BatchSettlementEvmScheme(payer)
    const { body, payload } = await pay(client)
    const id = (payload.voucher as { channelId: Hex }).channelId
    const verified = await facilitator.verify(body)
    expect(verified).toMatchObject({ isValid: true, payer: payer.address, extra: { channelId: id, balance: '0', totalClaimed: '0', withdrawRequestedAt: 0, refundNonce: '0' } })
    const settled = await facilitator.settle(body)
    expect(settled).toMatchObject({ success: true, network: 'eip155:84532', payer: payer.address, amount: '5000', asset: world.token.address, extra: { channelState: { channelId: id, balance: '5000', totalClaimed: '0' } } })
    expect(await channelOnChain(world, id)).toEqual([5000n, 0n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(995_000n)
    // The same deposit again is not sent twice.
    const again = await facilitator.settle(body)
    expect(again.transaction).toBe(settled.transaction)
    expect(await channelOnChain(world, id)).toEqual([5000n, 0n])
  })

  it('settles a Permit2 deposit from the official client', async () => {
    const payer = await world.newPayer(1_000_000n)
    await world.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
    await approvePermit2(world.node, world.token, payer, 2n ** 256n - 1n)
    const reqs = requirements({ assetTransferMethod: 'permit2' })
    const { body, payload } = await pay(new BatchSettlementEvmScheme(payer), reqs)
    expect(await facilitator.settle(body)).toMatchObject({ success: true, amount: '5000' })
    expect(await channelOnChain(world, (payload.voucher as { channelId: Hex }).channelId)).toEqual([5000n, 0n])
  })

  it('refuses a deposit from a payer without the funds, sending nothing', async () => {
    const payer = await world.newPayer(100n)
    const { body } = await pay(new BatchSettlementEvmScheme(payer))
    expect(await facilitator.verify(body)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_insufficient_balance' })
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_insufficient_balance', transaction: '' })
  })

  it('verifies an EOA voucher with fresh channel state without any RPC request', async () => {
    const { client } = await openChannel()
    const first = await pay(client)
    expect(first.payload.type).toBe('voucher')
    expect(await facilitator.verify(first.body)).toMatchObject({ isValid: true, extra: { balance: '10000', totalClaimed: '0' } })
    const before = proxy.requests
    const second = await facilitator.verify(first.body)
    expect(second).toMatchObject({ isValid: true })
    expect(proxy.requests - before).toBe(0)
  })

  it('refuses forged vouchers, a config that does not hash to its id, and ceilings beyond the balance', async () => {
    const { client, storage, id } = await openChannel()
    const { body, payload } = await pay(client)
    const voucher = payload.voucher as { channelId: Hex; maxClaimableAmount: string; signature: Hex }
    const forged = structuredClone(body)
    ;(forged.paymentPayload.payload as { voucher: { signature: Hex } }).voucher.signature = await signVoucher(privateKeyToAccount(generatePrivateKey()), 84532, voucher.channelId, 2000n)
    expect(await facilitator.verify(forged)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_voucher_signature' })
    const wrongConfig = structuredClone(body)
    ;(wrongConfig.paymentPayload.payload as { channelConfig: { salt: Hex } }).channelConfig.salt = `0x${'01'.repeat(32)}`
    expect(await facilitator.verify(wrongConfig)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_channel_id_mismatch' })
    await storage.set(id, { balance: '1000000', chargedCumulativeAmount: '20000' })
    expect(await facilitator.verify((await pay(client)).body)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_cumulative_exceeds_balance' })
    // A voucher is charged by the resource server, never settled here.
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_payload_type' })
  })

  it('claims three channels in one claimWithSignature signed by our receiver authorizer, sweeps, then refuses a voucher below the claimed total', async () => {
    const channels = [await openChannel(), await openChannel(), await openChannel()]
    const claims = []
    for (const [i, { client, payer, id }] of channels.entries()) {
      const ceiling = BigInt(1000 * (i + 2))
      claims.push({ voucher: { channel: client.buildChannelConfig(requirements()), maxClaimableAmount: ceiling.toString() }, signature: await signVoucher(payer, 84532, id, ceiling), totalClaimed: ceiling.toString() })
    }
    const reqs = requirements()
    const claim = batchRequest(reqs, { type: 'claim', claims })
    expect(await facilitator.verify(claim)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_payload_type' })
    const claimed = await facilitator.settle(claim)
    expect(claimed).toMatchObject({ success: true, amount: '' })
    expect(await channelOnChain(world, channels[2]!.id)).toEqual([10_000n, 4000n])
    // The same rows in another order raise nothing: refused, no gas spent.
    const replay = { ...claim, paymentPayload: { ...claim.paymentPayload, payload: { type: 'claim', claims: [...claims].reverse() } } }
    expect(await facilitator.settle(replay)).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_claim_payload', transaction: '' })

    const sweep = { ...claim, paymentPayload: { ...claim.paymentPayload, payload: { type: 'settle', receiver, token: world.token.address } } }
    expect(await facilitator.settle(sweep)).toMatchObject({ success: true, amount: '9000' })
    expect(await tokenBalance(world.node, world.token, receiver)).toBeGreaterThanOrEqual(9000n)
    expect(await facilitator.settle(sweep)).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_nothing_to_settle' })

    // The client's next voucher at 2000 is below claimed 4000 + price.
    await channels[2]!.storage.set(channels[2]!.id, { balance: '10000', chargedCumulativeAmount: '1000' })
    expect(await facilitator.verify((await pay(channels[2]!.client)).body)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_cumulative_below_claimed' })
  })

  it('refunds part of a channel with our Refund signature, then refuses the stale nonce', async () => {
    const { client, payer, id } = await openChannel()
    const reqs = requirements()
    const voucher = { channelId: id, maxClaimableAmount: '1000', signature: await signVoucher(payer, 84532, id, 1000n) }
    const config = client.buildChannelConfig(reqs)
    const claims = [{ voucher: { channel: config, maxClaimableAmount: '1000' }, signature: voucher.signature, totalClaimed: '1000' }]
    const refund = (nonce: string) => batchRequest(reqs, { type: 'refund', channelConfig: config, voucher, amount: '4000', refundNonce: nonce, claims })
    expect(await facilitator.verify(refund('0'))).toMatchObject({ isValid: true, extra: { refundNonce: '0' } })
    const before = await tokenBalance(world.node, world.token, payer.address)
    const refunded = await facilitator.settle(refund('0'))
    expect(refunded).toMatchObject({ success: true, payer: payer.address, amount: '4000', extra: { channelState: { balance: '6000', totalClaimed: '1000', refundNonce: '1' } } })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(before + 4000n)
    expect(await channelOnChain(world, id)).toEqual([6000n, 1000n])
    // The same refund again is answered from its record; another amount on the same nonce is a duplicate; nothing is sent.
    expect(await facilitator.settle(refund('0'))).toMatchObject({ success: true, transaction: refunded.transaction })
    const other = refund('0')
    other.paymentPayload.payload.amount = '4001'
    expect(await facilitator.settle(other)).toMatchObject({ success: false, errorReason: 'duplicate_settlement' })
    // A nonce that is not the channel's next is refused before anything is sent.
    expect(await facilitator.settle(refund('5'))).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_refund_simulation_failed', transaction: '' })
    expect(await channelOnChain(world, id)).toEqual([6000n, 1000n])
  })

  it('refuses a refund it would have to sign unless delegated refunds are allowed, sending nothing', async () => {
    const { client, payer, id } = await openChannel()
    const strict = createFacilitator({ schemes: [batchScheme(world, rpc, { receiverAuthorizer: authorizer })] })
    const reqs = requirements()
    const voucher = { channelId: id, maxClaimableAmount: '0', signature: await signVoucher(payer, 84532, id, 0n) }
    const body = batchRequest(reqs, { type: 'refund', channelConfig: client.buildChannelConfig(reqs), voucher, amount: '100', refundNonce: '0', claims: [] })
    expect(await strict.settle(body)).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_authorizer_not_configured', transaction: '' })
    expect(await channelOnChain(world, id)).toEqual([10_000n, 0n])
  })

  it('verifies an ERC-1271 voucher (no payer authorizer) through the payer wallet, on chain each time', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = getAddress(await deploySmartWallet(world.node, owner.address))
    await fundPayer(world.node, world.token, wallet, 100_000n)
    const config = channelConfig({ payer: wallet, payerAuthorizer: zeroAddress, receiver, receiverAuthorizer: authorizer.address, token: world.token.address })
    const id = channelId(config, 84532)
    const reqs = requirements()
    const voucher = async (amount: bigint, by = owner) => ({ channelId: id, maxClaimableAmount: amount.toString(), signature: await signVoucher(by, 84532, id, amount) })
    const deposit = await depositPayload(world, owner, config, 20_000n)
    const wrap = (payload: unknown) => batchRequest(reqs, payload)
    expect(await facilitator.settle(wrap(deposit))).toMatchObject({ success: true, payer: wallet, amount: '20000' })
    expect(await channelOnChain(world, id)).toEqual([20_000n, 0n])
    const before = proxy.requests
    expect(await facilitator.verify(wrap({ type: 'voucher', channelConfig: config, voucher: await voucher(2000n) }))).toMatchObject({ isValid: true, payer: wallet })
    expect(proxy.requests).toBeGreaterThan(before)
    expect(await facilitator.verify(wrap({ type: 'voucher', channelConfig: config, voucher: await voucher(2000n, privateKeyToAccount(generatePrivateKey())) }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_voucher_signature' })
  })

  it('shows a pending withdrawal in the snapshot, claims before its delay ends, and the withdrawal then returns only the unclaimed rest', async () => {
    const { client, payer, id } = await openChannel()
    await world.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
    const reqs = requirements()
    const config = client.buildChannelConfig(reqs)
    const initiate = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'initiateWithdraw', args: [{ ...config, withdrawDelay: 900 } as never, 10_000n] })
    const hash = await world.node.walletClient(payer).sendTransaction({ account: payer, chain: world.node.chain, to: BATCH_SETTLEMENT_ADDRESS, data: initiate })
    expect((await world.node.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    const signature = await signVoucher(payer, 84532, id, 3000n)
    const refundProbe = batchRequest(reqs, { type: 'refund', channelConfig: config, voucher: { channelId: id, maxClaimableAmount: '3000', signature } })
    const verified = await facilitator.verify(refundProbe)
    expect(verified.isValid).toBe(true)
    expect((verified.extra as { withdrawRequestedAt: number }).withdrawRequestedAt).toBeGreaterThan(0)
    const claim = batchRequest(reqs, { type: 'claim', claims: [{ voucher: { channel: config, maxClaimableAmount: '3000' }, signature, totalClaimed: '3000' }] })
    expect(await facilitator.settle(claim)).toMatchObject({ success: true })
    await world.node.testClient.increaseTime({ seconds: 901 })
    await world.node.testClient.mine({ blocks: 1 })
    const balance = await tokenBalance(world.node, world.token, payer.address)
    const finalize = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'finalizeWithdraw', args: [config as never] })
    const done = await world.node.walletClient(payer).sendTransaction({ account: payer, chain: world.node.chain, to: BATCH_SETTLEMENT_ADDRESS, data: finalize })
    expect((await world.node.publicClient.waitForTransactionReceipt({ hash: done })).status).toBe('success')
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(balance + 7_000n)
    expect(await channelOnChain(world, id)).toEqual([3_000n, 3_000n])
  })

  it('answers settlement_pending with the transaction when the receipt does not come in time, then finishes it on a retry', async () => {
    const impatient = createFacilitator({ schemes: [batchScheme(world, rpc, { confirmTimeoutMs: 300 })] })
    const payer = await world.newPayer(1_000_000n)
    const { body, payload } = await pay(new BatchSettlementEvmScheme(payer))
    await world.node.testClient.setAutomine(false)
    let pending
    try {
      pending = await impatient.settle(body)
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    expect(pending.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    await world.node.testClient.mine({ blocks: 1 })
    const finished = await impatient.settle(body)
    expect(finished).toMatchObject({ success: true, transaction: pending.transaction, amount: '5000' })
    expect(await channelOnChain(world, (payload.voucher as { channelId: Hex }).channelId)).toEqual([5000n, 0n])
  }, 60_000)
})
