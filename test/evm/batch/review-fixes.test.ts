/**
 * batchSettlementEvm() against what a review found, on anvil: vouchers may reach the whole balance
 * while a withdrawal is pending (the spec's rule 9, and the contract lets them be claimed), ERC-6492
 * voucher signatures refused, ERC-6492 deposit signatures read as the official facilitator does, a node fault during a wallet's signature check a fault (never a
 * verdict), every refund rule at /verify, remembered channel state dropped when a settle is resumed,
 * and `signer_busy` when every signer is at its in-flight bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { encodeFunctionData, getAddress, serializeErc6492Signature, zeroAddress, type Address, type Hex, type LocalAccount } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { batchSettlementAbi } from '../../../src/evm/batch/abi.js'
import type { ChannelConfig } from '../../../src/evm/batch/codec.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/evm/batch/constants.js'
import { signRefund, signVoucher } from '../../support/batch-settlement-signing.js'
import { batchChannel, batchRequest, batchRequirements, batchScheme, channelOnChain, delegatingBatchFacilitator, depositPayload, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import { deploySmartWallet, fundPayer } from '../../support/evm-contracts.js'
import type { EvmFixture } from '../../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js'

let world: EvmFixture
let facilitator: Facilitator
/** Forwards JSON-RPC to anvil; a test makes it fail (HTTP 502) the requests it names, as an unreachable upstream would. */
let proxy: FaultProxy
let rpc: string
const to = newBatchReceiver()
const { authorizer } = to

beforeAll(async () => {
  world = await startBatchWorld()
  proxy = await startFaultProxy(world.node.rpcUrl)
  rpc = proxy.url
  facilitator = delegatingBatchFacilitator(world, rpc, authorizer)
}, 120_000)
afterAll(async () => {
  await world?.node.testClient.setAutomine(true).catch(() => undefined)
  await proxy?.close()
  await world?.stop()
})

const wrap = (payload: unknown) => batchRequest(batchRequirements(world, to), payload)

interface Channel {
  readonly config: ChannelConfig
  readonly id: Hex
  /** Signs the voucher (the payer authorizer, or the wallet's owner). */
  readonly signer: LocalAccount
}

/** A channel of a new EOA payer (or of `wallet`, vouchers checked through it) holding `amount` after a deposit settled here. */
async function openChannel(amount = 10_000n, wallet?: { address: Address; owner: LocalAccount }, through: Facilitator = facilitator): Promise<Channel> {
  const signer = wallet?.owner ?? (await world.newPayer(1_000_000n))
  const payer = wallet?.address ?? signer.address
  const { config, id } = batchChannel(world, to, payer, wallet ? zeroAddress : undefined)
  const deposit = await depositPayload(world, signer, config, amount)
  expect(await through.settle(wrap(deposit))).toMatchObject({ success: true, amount: amount.toString() })
  return { config, id, signer }
}

const voucherPayload = async (c: Channel, ceiling: bigint, signature?: Hex) => ({
  type: 'voucher',
  channelConfig: c.config,
  voucher: { channelId: c.id, maxClaimableAmount: ceiling.toString(), signature: signature ?? (await signVoucher(c.signer, 84532, c.id, ceiling)) },
})

const claimPayload = async (c: Channel, total: bigint) => ({
  type: 'claim',
  claims: [{ voucher: { channel: c.config, maxClaimableAmount: total.toString() }, signature: await signVoucher(c.signer, 84532, c.id, total), totalClaimed: total.toString() }],
})

describe('batchSettlementEvm review fixes', () => {
  it('takes a voucher up to the whole balance while a withdrawal of all of it is pending, and the contract lets it be claimed', async () => {
    const c = await openChannel()
    await world.node.testClient.setBalance({ address: c.signer.address, value: 10n ** 18n })
    const initiate = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'initiateWithdraw', args: [c.config, 10_000n] })
    const hash = await world.node.walletClient(c.signer).sendTransaction({ account: c.signer, chain: world.node.chain, to: BATCH_SETTLEMENT_ADDRESS, data: initiate })
    expect((await world.node.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    // Past the remembered read of the deposit: the withdrawal shows.
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    // Rule 9 bounds a voucher by the balance alone: the withdrawal takes only what is unclaimed when it is finalized.
    const verified = await facilitator.verify(wrap(await voucherPayload(c, 10_000n)))
    expect(verified).toMatchObject({ isValid: true, extra: { balance: '10000', totalClaimed: '0' } })
    expect((verified.extra as { withdrawRequestedAt: number }).withdrawRequestedAt).toBeGreaterThan(0)
    expect(await facilitator.verify(wrap(await voucherPayload(c, 10_001n)))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_cumulative_exceeds_balance' })
    expect(await facilitator.settle(wrap(await claimPayload(c, 10_000n)))).toMatchObject({ success: true })
    expect(await channelOnChain(world, c.id)).toEqual([10_000n, 10_000n])
  })

  it('refuses an ERC-6492-wrapped voucher signature of a deployed wallet, which the contract would not take', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = getAddress(await deploySmartWallet(world.node, owner.address))
    await fundPayer(world.node, world.token, wallet, 100_000n)
    const c = await openChannel(20_000n, { address: wallet, owner })
    expect(await facilitator.verify(wrap(await voucherPayload(c, 2000n)))).toMatchObject({ isValid: true, payer: wallet })
    const inner = await signVoucher(owner, 84532, c.id, 2000n)
    const wrapped = serializeErc6492Signature({ address: world.factory.address, data: '0xdeadbeef', signature: inner })
    expect(await facilitator.verify(wrap(await voucherPayload(c, 2000n, wrapped)))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_voucher_signature' })
    // An EOA payer authorizer's voucher in an envelope is refused the same way.
    const eoa = await openChannel()
    const eoaWrapped = serializeErc6492Signature({ address: wallet, data: '0xdeadbeef', signature: await signVoucher(eoa.signer, 84532, eoa.id, 2000n) })
    expect(await facilitator.verify(wrap(await voucherPayload(eoa, 2000n, eoaWrapped)))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_voucher_signature' })
  })

  it('settles a deployed wallet\'s EIP-3009 deposit signed in an ERC-6492 envelope, passing the token the inner signature', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = getAddress(await deploySmartWallet(world.node, owner.address))
    await fundPayer(world.node, world.token, wallet, 100_000n)
    const { config, id } = batchChannel(world, to, wallet, zeroAddress)
    const deposit = await depositPayload(world, owner, config, 20_000n)
    const auth = deposit.deposit.authorization.erc3009Authorization
    const wrapped = { ...deposit, deposit: { ...deposit.deposit, authorization: { erc3009Authorization: { ...auth, signature: serializeErc6492Signature({ address: world.factory.address, data: '0xdeadbeef', signature: auth.signature }) } } } }
    expect(await facilitator.verify(wrap(wrapped))).toMatchObject({ isValid: true, payer: wallet })
    expect(await facilitator.settle(wrap(wrapped))).toMatchObject({ success: true, amount: '20000' })
    expect(await channelOnChain(world, id)).toEqual([20_000n, 0n])
  })

  it('refuses an undeployed ERC-6492 wallet\'s EIP-3009 deposit with the official eip6492_factory_not_allowed, sending nothing', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const salt = generatePrivateKey()
    const wallet = getAddress(await world.factory.walletAddress(owner.address, salt))
    await fundPayer(world.node, world.token, wallet, 100_000n)
    const { config, id } = batchChannel(world, to, wallet, owner.address)
    const deposit = await depositPayload(world, owner, config, 20_000n)
    const auth = deposit.deposit.authorization.erc3009Authorization
    const signature = serializeErc6492Signature({ address: world.factory.address, data: world.factory.deployCalldata(owner.address, salt), signature: auth.signature })
    const body = wrap({ ...deposit, deposit: { ...deposit.deposit, authorization: { erc3009Authorization: { ...auth, signature } } } })
    const reason = 'invalid_batch_settlement_evm_eip6492_factory_not_allowed'
    expect(await facilitator.verify(body)).toMatchObject({ isValid: false, invalidReason: reason, payer: wallet })
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: reason, transaction: '' })
    expect(await world.node.publicClient.getCode({ address: wallet })).toBeUndefined()
    expect(await channelOnChain(world, id)).toEqual([0n, 0n])
  })

  it('answers a node fault during a wallet voucher check with an rpc fault, never a verdict against the payer', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = getAddress(await deploySmartWallet(world.node, owner.address))
    await fundPayer(world.node, world.token, wallet, 100_000n)
    const c = await openChannel(20_000n, { address: wallet, owner })
    const body = wrap(await voucherPayload(c, 2000n))
    const badGateway = { kind: 'error', status: 502 } as const
    proxy.setModeFor(['eth_call'], badGateway, {
      matching: (calls) => {
        const request = JSON.stringify(calls)
        return request.toLowerCase().includes(wallet.toLowerCase()) && request.includes('0x1626ba7e')
      },
    })
    try {
      await expect(facilitator.verify(body)).rejects.toMatchObject({ code: expect.stringMatching(/^rpc_/) })
      proxy.setModeFor(['eth_getCode'], badGateway)
      await expect(facilitator.verify(body)).rejects.toMatchObject({ code: expect.stringMatching(/^rpc_/) })
    } finally {
      proxy.setMode({ kind: 'pass' })
    }
    expect(await facilitator.verify(body)).toMatchObject({ isValid: true, payer: wallet })
  })

  it('enforces the refund rules at /verify: the amount within what is refundable, the nonce, the Refund signature or our delegation', async () => {
    const c = await openChannel()
    const zeroCharge = { channelId: c.id, maxClaimableAmount: '3000', signature: await signVoucher(c.signer, 84532, c.id, 3000n) }
    const refund = (fields: Record<string, unknown>) => wrap({ type: 'refund', channelConfig: c.config, voucher: zeroCharge, ...fields })
    // 10,000 deposited, 3,000 to be claimed first: 7,000 refundable.
    expect(await facilitator.verify(refund({}))).toMatchObject({ isValid: true, extra: { refundNonce: '0' } })
    expect(await facilitator.verify(refund({ amount: '7000' }))).toMatchObject({ isValid: true })
    expect(await facilitator.verify(refund({ amount: '7001' }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_refund_amount_invalid' })
    expect(await facilitator.verify(refund({ amount: '0' }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_refund_amount_invalid' })
    expect(await facilitator.verify(refund({ amount: '1000', refundNonce: '1' }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_refund_simulation_failed' })
    const stranger = privateKeyToAccount(generatePrivateKey())
    const forged = await signRefund(stranger, 84532, c.id, 0n, 1000n)
    expect(await facilitator.verify(refund({ amount: '1000', refundNonce: '0', refundAuthorizerSignature: forged }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_authorizer_address_mismatch' })
    // The authorizer's signature over another amount does not sign this one.
    const other = await signRefund(authorizer, 84532, c.id, 0n, 999n)
    expect(await facilitator.verify(refund({ amount: '1000', refundNonce: '0', refundAuthorizerSignature: other }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_authorizer_address_mismatch' })
    const signed = await signRefund(authorizer, 84532, c.id, 0n, 1000n)
    expect(await facilitator.verify(refund({ amount: '1000', refundNonce: '0', refundAuthorizerSignature: signed }))).toMatchObject({ isValid: true })
    // Completed without a signature: ours to sign only when delegated and allowed.
    expect(await facilitator.verify(refund({ amount: '1000', refundNonce: '0' }))).toMatchObject({ isValid: true })
    const strict = createFacilitator({ schemes: [batchScheme(world, rpc, { receiverAuthorizer: authorizer })] })
    expect(await strict.verify(refund({ amount: '1000', refundNonce: '0' }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_authorizer_not_configured' })
    // Everything claimed: nothing left to refund.
    const all = { channelId: c.id, maxClaimableAmount: '10000', signature: await signVoucher(c.signer, 84532, c.id, 10_000n) }
    expect(await facilitator.verify(wrap({ type: 'refund', channelConfig: c.config, voucher: all }))).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_refund_no_balance' })
    expect(await channelOnChain(world, c.id)).toEqual([10_000n, 0n])
  })

  it('forgets what it remembered of a channel when it resumes a claim, so a voucher below the new claimed total is refused', async () => {
    const patient = createFacilitator({
      schemes: [batchScheme(world, rpc, { receiverAuthorizer: authorizer, confirmTimeoutMs: 300, channelStateTtlMs: 120_000 })],
    })
    const c = await openChannel(10_000n, undefined, patient)
    const low = wrap(await voucherPayload(c, 2000n))
    expect(await patient.verify(low)).toMatchObject({ isValid: true, extra: { totalClaimed: '0' } })
    const claim = wrap(await claimPayload(c, 3000n))
    await world.node.testClient.setAutomine(false)
    try {
      expect(await patient.settle(claim)).toMatchObject({ success: false, errorReason: 'settlement_pending' })
      // Read again while the claim waits in the pool, and remembered.
      expect(await patient.verify(low)).toMatchObject({ isValid: true, extra: { totalClaimed: '0' } })
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    await world.node.testClient.mine({ blocks: 1 })
    expect(await channelOnChain(world, c.id)).toEqual([10_000n, 3000n])
    expect(await patient.settle(claim)).toMatchObject({ success: true })
    expect(await patient.verify(low)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_cumulative_below_claimed' })
  }, 60_000)

  it('answers signer_busy when every signer holds its bound of settlements in flight, sending nothing more', async () => {
    const bounded = createFacilitator({
      schemes: [batchScheme(world, rpc, { receiverAuthorizer: authorizer, confirmTimeoutMs: 5_000, maxInFlightSettlesPerSigner: 1 })],
    })
    const [a, b] = [await openChannel(), await openChannel()]
    const signer = world.signers[0]!.address
    const pending = () => world.node.publicClient.getTransactionCount({ address: signer, blockTag: 'pending' })
    const before = await pending()
    await world.node.testClient.setAutomine(false)
    let first
    try {
      first = bounded.settle(wrap(await claimPayload(a, 2000n)))
      const end = Date.now() + 5_000
      while ((await pending()) === before && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
      await expect(bounded.settle(wrap(await claimPayload(b, 2000n)))).rejects.toMatchObject({ code: 'signer_busy' })
      expect(await pending()).toBe(before + 1)
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    await world.node.testClient.mine({ blocks: 1 })
    expect(await first).toMatchObject({ success: true })
    expect(await bounded.settle(wrap(await claimPayload(b, 2000n)))).toMatchObject({ success: true })
    expect(await channelOnChain(world, b.id)).toEqual([10_000n, 2000n])
  }, 60_000)
})
