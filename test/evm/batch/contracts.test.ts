/**
 * Our x402BatchSettlement and its deposit collectors on anvil, at the canonical addresses: deposits
 * through each collector, a claim over several channels, the sweep, refunds, a timed withdrawal,
 * with balances read on chain after each step.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeFunctionData, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { batchSettlementAbi } from '../../../src/evm/batch/abi.js'
import { channelId, type ChannelConfig, type VoucherClaim } from '../../../src/evm/batch/codec.js'
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from '../../../src/evm/batch/constants.js'
import { installBatchSettlement } from '../../support/batch-settlement-contracts.js'
import { channelConfig, erc3009CollectorData, permit2CollectorData, signClaimBatch, signRefund, signVoucher } from '../../support/batch-settlement-signing.js'
import { tokenBalance } from '../../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../../support/evm-fixture.js'
import { approvePermit2, installPermit2 } from '../../support/permit2-contracts.js'

let world: EvmFixture
let chainId: number
let relayer: LocalAccount
const receiverAuthorizer = privateKeyToAccount(generatePrivateKey())

beforeAll(async () => {
  world = await startEvmFixture()
  chainId = world.node.chainId
  relayer = world.signers[0]!
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
}, 120_000)
afterAll(() => world?.stop())

async function send(data: Hex, from: LocalAccount = relayer): Promise<'success' | 'reverted'> {
  const hash = await world.node.walletClient(from).sendTransaction({ account: from, chain: world.node.chain, to: BATCH_SETTLEMENT_ADDRESS, data, gas: 2_000_000n })
  return (await world.node.publicClient.waitForTransactionReceipt({ hash })).status
}

function read<T>(functionName: 'channels' | 'pendingWithdrawals' | 'refundNonce' | 'receivers', args: readonly unknown[]): Promise<T> {
  return world.node.publicClient.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName, args } as never) as Promise<T>
}

async function channelOf(payer: LocalAccount, receiver = world.payTo): Promise<{ config: ChannelConfig; id: Hex }> {
  const config = channelConfig({ payer: payer.address, receiver, receiverAuthorizer: receiverAuthorizer.address, token: world.token.address })
  return { config, id: channelId(config, chainId) }
}

async function depositEip3009(payer: LocalAccount, config: ChannelConfig, amount: bigint) {
  const data = await erc3009CollectorData(payer, world.token, chainId, config, amount)
  return send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [config, amount, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data] }))
}

describe('x402BatchSettlement on anvil', () => {
  it('computes the same channel id as our codec', async () => {
    const { config, id } = await channelOf(await world.newPayer(0n))
    const onChain = await world.node.publicClient.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'getChannelId', args: [config] })
    expect(onChain).toBe(id)
  })

  it('takes a deposit through the EIP-3009 collector, and refuses the same authorization twice', async () => {
    const payer = await world.newPayer(1_000_000n)
    const { config, id } = await channelOf(payer)
    const data = await erc3009CollectorData(payer, world.token, chainId, config, 400_000n)
    const call = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [config, 400_000n, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, data] })
    expect(await send(call)).toBe('success')
    expect(await read<[bigint, bigint]>('channels', [id])).toEqual([400_000n, 0n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(600_000n)
    expect(await tokenBalance(world.node, world.token, BATCH_SETTLEMENT_ADDRESS)).toBeGreaterThanOrEqual(400_000n)
    expect(await send(call)).toBe('reverted')
  })

  it('takes a deposit through the Permit2 collector, bound to the channel in the witness', async () => {
    const payer = await world.newPayer(1_000_000n)
    await world.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
    await approvePermit2(world.node, world.token, payer, 2n ** 256n - 1n)
    const { config, id } = await channelOf(payer)
    const other = (await channelOf(payer, privateKeyToAccount(generatePrivateKey()).address)).config
    const data = await permit2CollectorData(payer, world.token, chainId, config, 300_000n)
    // The same signature presented for another channel fails the witness.
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [other, 300_000n, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, data] }))).toBe('reverted')
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [config, 300_000n, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, data] }))).toBe('success')
    expect(await read<[bigint, bigint]>('channels', [id])).toEqual([300_000n, 0n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(700_000n)
  })

  it('claims a batch over three channels with one ClaimBatch signature, then sweeps it to the receiver in one transfer', async () => {
    const receiver = privateKeyToAccount(generatePrivateKey()).address
    const payers = [await world.newPayer(100_000n), await world.newPayer(100_000n), await world.newPayer(100_000n)]
    const claims: VoucherClaim[] = []
    for (const [index, payer] of payers.entries()) {
      const { config, id } = await channelOf(payer, receiver)
      expect(await depositEip3009(payer, config, 100_000n)).toBe('success')
      const ceiling = BigInt(10_000 * (index + 1))
      claims.push({ voucher: { channel: config, maxClaimableAmount: ceiling }, signature: await signVoucher(payer, chainId, id, ceiling), totalClaimed: ceiling - 1_000n })
    }
    // A forged ClaimBatch signature (not the receiver authorizer's) is refused.
    const forged = await signClaimBatch(relayer, chainId, claims)
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claims, forged] }))).toBe('reverted')
    const signature = await signClaimBatch(receiverAuthorizer, chainId, claims)
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claims, signature] }))).toBe('success')
    for (const claim of claims) expect(await read<[bigint, bigint]>('channels', [channelId(claim.voucher.channel, chainId)])).toEqual([100_000n, claim.totalClaimed])
    expect(await read<[bigint, bigint]>('receivers', [receiver, world.token.address])).toEqual([57_000n, 0n])
    // Claiming the same rows again changes nothing.
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claims, signature] }))).toBe('success')
    expect(await read<[bigint, bigint]>('receivers', [receiver, world.token.address])).toEqual([57_000n, 0n])
    // A row above its voucher's ceiling reverts the whole batch.
    const over = claims.map((c, i) => (i === 1 ? { ...c, totalClaimed: c.voucher.maxClaimableAmount + 1n } : c))
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [over, await signClaimBatch(receiverAuthorizer, chainId, over)] }))).toBe('reverted')

    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'settle', args: [receiver, world.token.address] }))).toBe('success')
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(57_000n)
    expect(await read<[bigint, bigint]>('receivers', [receiver, world.token.address])).toEqual([57_000n, 57_000n])
  })

  it('refunds with a Refund signature and its nonce, capped to the unclaimed escrow; a stale nonce is refused', async () => {
    const payer = await world.newPayer(50_000n)
    const { config, id } = await channelOf(payer)
    expect(await depositEip3009(payer, config, 50_000n)).toBe('success')
    const claims: VoucherClaim[] = [{ voucher: { channel: config, maxClaimableAmount: 8_000n }, signature: await signVoucher(payer, chainId, id, 8_000n), totalClaimed: 8_000n }]
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claims, await signClaimBatch(receiverAuthorizer, chainId, claims)] }))).toBe('success')

    const partial = await signRefund(receiverAuthorizer, chainId, id, 0n, 12_000n)
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundWithSignature', args: [config, 12_000n, 0n, partial] }))).toBe('success')
    expect(await read<[bigint, bigint]>('channels', [id])).toEqual([38_000n, 8_000n])
    expect(await read<bigint>('refundNonce', [id])).toBe(1n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(12_000n)
    // Replaying nonce 0 fails.
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundWithSignature', args: [config, 12_000n, 0n, partial] }))).toBe('reverted')
    // A refund asking more than is left returns what is left (30,000), never the claimed part.
    const full = await signRefund(receiverAuthorizer, chainId, id, 1n, 1_000_000n)
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundWithSignature', args: [config, 1_000_000n, 1n, full] }))).toBe('success')
    expect(await read<[bigint, bigint]>('channels', [id])).toEqual([8_000n, 8_000n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(42_000n)
    // The direct refund by someone who is neither the receiver nor its authorizer is refused.
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refund', args: [config, 1n] }))).toBe('reverted')
  })

  it('finalizes a timed withdrawal only after its delay, capped to what is left unclaimed', async () => {
    const payer = await world.newPayer(60_000n)
    await world.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
    const { config, id } = await channelOf(payer)
    expect(await depositEip3009(payer, config, 60_000n)).toBe('success')
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'initiateWithdraw', args: [config, 60_000n] }), payer)).toBe('success')
    const [, initiatedAt] = await read<[bigint, number]>('pendingWithdrawals', [id])
    expect(initiatedAt).toBeGreaterThan(0)
    // The receiver claims during the grace period.
    const claims: VoucherClaim[] = [{ voucher: { channel: config, maxClaimableAmount: 5_000n }, signature: await signVoucher(payer, chainId, id, 5_000n), totalClaimed: 5_000n }]
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claims, await signClaimBatch(receiverAuthorizer, chainId, claims)] }))).toBe('success')
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'finalizeWithdraw', args: [config] }), payer)).toBe('reverted')
    await world.node.testClient.increaseTime({ seconds: 901 })
    await world.node.testClient.mine({ blocks: 1 })
    // Only the payer side may finalize.
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'finalizeWithdraw', args: [config] }))).toBe('reverted')
    expect(await send(encodeFunctionData({ abi: batchSettlementAbi, functionName: 'finalizeWithdraw', args: [config] }), payer)).toBe('success')
    expect(await read<[bigint, bigint]>('channels', [id])).toEqual([5_000n, 5_000n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(55_000n)
    expect(await read<[bigint, number]>('pendingWithdrawals', [id])).toEqual([0n, 0])
  })

  it('refuses a channel whose withdraw delay is out of range', async () => {
    const payer = await world.newPayer(10_000n)
    const config = { ...(await channelOf(payer)).config, withdrawDelay: 899 }
    expect(await depositEip3009(payer, config, 10_000n)).toBe('reverted')
  })
})
