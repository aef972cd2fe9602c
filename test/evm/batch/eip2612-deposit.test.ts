/**
 * `eip2612GasSponsoring` on batch-settlement deposits, on anvil: a payer with no Permit2 allowance
 * deposits through the Permit2 deposit collector, which runs the payer's EIP-2612 permit to Permit2
 * before the transfer. Payloads from the official @x402/evm batch-settlement client (it signs the
 * permit when the 402 declares the extension and the allowance is short); hostile variants are the
 * official payload with its permit changed and signed again here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import { decodeAbiParameters, decodeFunctionData, encodeAbiParameters, encodeFunctionData, getAddress, parseEventLogs, toFunctionSelector, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Facilitator } from '../../../src/facilitator/facilitator.js'
import { batchSettlementAbi } from '../../../src/evm/batch/abi.js'
import { BATCH_SETTLEMENT_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from '../../../src/evm/batch/constants.js'
import { EIP2612_GAS_SPONSORING, ERC20_APPROVAL_GAS_SPONSORING } from '../../../src/evm/permit2/eip2612-extension.js'
import { PERMIT2_ADDRESS } from '../../../src/evm/codec/permit2-abi.js'
import { channelConfig, permit2CollectorData } from '../../support/batch-settlement-signing.js'
import { batchRequirements, channelOnChain, delegatingBatchFacilitator, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import { tokenBalance } from '../../support/evm-contracts.js'
import type { EvmFixture } from '../../support/evm-fixture.js'
import { approvePermit2, newPermit2Payer, signEip2612Permit, type Eip2612PermitInfo } from '../../support/permit2-contracts.js'

let world: EvmFixture
let facilitator: Facilitator
const to = newBatchReceiver()

/** The 402's extension declaration, in the shape of @x402/extensions' declareEip2612GasSponsoringExtension(). */
const declared = {
  [EIP2612_GAS_SPONSORING]: {
    info: { description: 'The facilitator accepts EIP-2612 gasless Permit to `Permit2` canonical contract.', version: '1' },
    schema: { type: 'object', required: ['from', 'asset', 'spender', 'amount', 'nonce', 'deadline', 'signature', 'version'] },
  },
}

beforeAll(async () => {
  world = await startBatchWorld()
  facilitator = delegatingBatchFacilitator(world, world.node.rpcUrl, to.authorizer)
}, 120_000)
afterAll(async () => world?.stop())

const requirements = () => batchRequirements(world, to, { extra: { assetTransferMethod: 'permit2' } })
type Body = { x402Version: number; paymentPayload: Record<string, unknown>; paymentRequirements: ReturnType<typeof requirements> }
type PermitInfo = Eip2612PermitInfo

/** A payer with tokens and gas money and no allowance to Permit2. */
const unapprovedPayer = () => newPermit2Payer(world, { approve: 0n })

/** The official client's first payment on a new channel (a 5000 deposit), for a 402 declaring `extensions`. */
async function officialDeposit(payer: LocalAccount, extensions?: Record<string, unknown>, salt?: Hex): Promise<Body> {
  const reqs = requirements()
  const client = new BatchSettlementEvmScheme(payer, { rpcUrl: world.node.rpcUrl, ...(salt ? { salt } : {}) })
  const made = (await client.createPaymentPayload(2, reqs, extensions ? { extensions } : undefined)) as { payload: Record<string, unknown>; extensions?: Record<string, unknown> }
  return { x402Version: 2, paymentPayload: { x402Version: 2, accepted: reqs, payload: made.payload, ...(made.extensions ? { extensions: made.extensions } : {}) }, paymentRequirements: reqs }
}

function infoOf(body: Body): PermitInfo {
  const info = (body.paymentPayload.extensions as Record<string, { info?: PermitInfo }> | undefined)?.[EIP2612_GAS_SPONSORING]?.info
  if (!info) throw new Error('the payload carries no eip2612GasSponsoring info')
  return info
}

const channelIdOf = (body: Body) => (body.paymentPayload.payload as { voucher: { channelId: Hex } }).voucher.channelId

const signPermit = (signer: LocalAccount, fields: PermitInfo) => signEip2612Permit(world, signer, fields)

/** The body with its permit's fields changed and signed again by `signer`. */
async function withPermit(body: Body, signer: LocalAccount, change: (info: PermitInfo) => PermitInfo): Promise<Body> {
  const info = change(structuredClone(infoOf(body)))
  const signature = await signPermit(signer, info)
  return { ...body, paymentPayload: { ...body.paymentPayload, extensions: { [EIP2612_GAS_SPONSORING]: { info: { ...info, signature } } } } }
}

/** Transactions the facilitator's signers sent (pending included): unchanged means nothing was sent. */
async function sentByFacilitator(): Promise<number> {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}

const allowance = (owner: Hex) => world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] }) as Promise<bigint>
const tokenNonce = (owner: Hex) => world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'nonces', args: [owner] }) as Promise<bigint>

/** Verify and settle both refuse `body` with `reason`, and no transaction leaves the facilitator. */
async function refusedWithNothingSent(body: Body, reason: string): Promise<void> {
  const before = await sentByFacilitator()
  expect(await facilitator.verify(body)).toMatchObject({ isValid: false, invalidReason: reason })
  expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: reason, transaction: '' })
  expect(await sentByFacilitator()).toBe(before)
  expect(await channelOnChain(world, channelIdOf(body))).toEqual([0n, 0n])
}

describe('batch-settlement Permit2 deposits sponsored with eip2612GasSponsoring', () => {
  it('lists the extension in /supported', async () => {
    expect((await facilitator.supported()).extensions).toContain(EIP2612_GAS_SPONSORING)
  })

  it('settles the official client\'s sponsored deposit: the collector runs the permit, then Permit2 moves the deposit into the channel, once', async () => {
    const payer = await unapprovedPayer()
    expect(await allowance(payer.address)).toBe(0n)
    const body = await officialDeposit(payer, declared)
    const info = infoOf(body)
    // What the official client signed: a permit of exactly the deposit to Permit2.
    expect(info).toMatchObject({ from: payer.address, asset: getAddress(world.token.address), spender: PERMIT2_ADDRESS, amount: '5000', nonce: '0', version: '1' })
    const id = channelIdOf(body)

    expect(await facilitator.verify(body)).toMatchObject({ isValid: true, payer: payer.address, extra: { channelId: id, balance: '0', totalClaimed: '0' } })
    const contractBefore = await tokenBalance(world.node, world.token, BATCH_SETTLEMENT_ADDRESS)
    const settled = await facilitator.settle(body)
    expect(settled).toMatchObject({ success: true, amount: '5000', payer: payer.address, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), extra: { channelState: { channelId: id, balance: '5000', totalClaimed: '0' } } })

    // The transaction: deposit through the Permit2 collector, its data carrying the permit.
    const hash = settled.transaction as Hex
    const [tx, receipt] = await Promise.all([world.node.publicClient.getTransaction({ hash }), world.node.publicClient.getTransactionReceipt({ hash })])
    expect(tx.to?.toLowerCase()).toBe(BATCH_SETTLEMENT_ADDRESS.toLowerCase())
    const call = decodeFunctionData({ abi: batchSettlementAbi, data: tx.input })
    expect(call.functionName).toBe('deposit')
    const [, amount, collector, collectorData] = call.args as unknown as [unknown, bigint, Hex, Hex]
    expect([amount, collector]).toEqual([5000n, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS])
    const [, , , permitData] = decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }], collectorData)
    const [value, deadline] = decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint8' }, { type: 'bytes32' }, { type: 'bytes32' }], permitData)
    expect([value, deadline]).toEqual([5000n, BigInt(info.deadline)])
    const transfers = parseEventLogs({ abi: world.token.abi, logs: receipt.logs, eventName: 'Transfer' })
    expect(transfers.map((t) => t.args)).toEqual([{ from: payer.address, to: BATCH_SETTLEMENT_ADDRESS, value: 5000n }])

    // On chain: the channel holds the deposit, the payer paid it, the collector keeps nothing.
    expect(await channelOnChain(world, id)).toEqual([5000n, 0n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 5000n)
    expect(await tokenBalance(world.node, world.token, BATCH_SETTLEMENT_ADDRESS)).toBe(contractBefore + 5000n)
    expect(await tokenBalance(world.node, world.token, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS)).toBe(0n)
    // The permit ran (nonce spent) and the transfer used all it granted.
    expect(await tokenNonce(payer.address)).toBe(1n)
    expect(await allowance(payer.address)).toBe(0n)

    // The same deposit again learns how it landed; nothing is sent again.
    const sent = await sentByFacilitator()
    const again = await facilitator.settle(body)
    expect(again.transaction).toBe(settled.transaction)
    expect(await sentByFacilitator()).toBe(sent)
    expect(await channelOnChain(world, id)).toEqual([5000n, 0n])
  })

  it('settles two concurrent copies of one sponsored deposit in one transaction', async () => {
    const payer = await unapprovedPayer()
    const body = await officialDeposit(payer, declared)
    const sent = await sentByFacilitator()
    const [a, b] = await Promise.all([facilitator.settle(body), facilitator.settle(body)])
    expect(a).toMatchObject({ success: true, amount: '5000' })
    expect(b.transaction).toBe(a.transaction)
    expect(await sentByFacilitator()).toBe(sent + 1)
    expect(await channelOnChain(world, channelIdOf(body))).toEqual([5000n, 0n])
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 5000n)
  })

  it('leaves the permit unrun when the payer\'s allowance already covers the deposit', async () => {
    const payer = await unapprovedPayer()
    const body = await officialDeposit(payer, declared)
    await approvePermit2(world.node, world.token, payer, 2n ** 256n - 1n)
    const settled = await facilitator.settle(body)
    expect(settled).toMatchObject({ success: true, amount: '5000' })
    const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
    const [, , , collectorData] = decodeFunctionData({ abi: batchSettlementAbi, data: tx.input }).args as unknown as [unknown, bigint, Hex, Hex]
    expect(decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }], collectorData)[3]).toBe('0x')
    // Run, the permit would have set the allowance down to 5000 (then 0 after the transfer).
    expect(await tokenNonce(payer.address)).toBe(0n)
    expect(await allowance(payer.address)).toBe(2n ** 256n - 1n)
    expect(await channelOnChain(world, channelIdOf(body))).toEqual([5000n, 0n])
  })

  it('of two sponsored deposits signed over one token nonce (two channels), sends only the first: the permit grants one', async () => {
    const payer = await unapprovedPayer()
    const first = await officialDeposit(payer, declared)
    const second = await officialDeposit(payer, declared, generatePrivateKey())
    expect(infoOf(second).nonce).toBe(infoOf(first).nonce)
    expect(channelIdOf(second)).not.toBe(channelIdOf(first))
    const sent = await sentByFacilitator()
    const answers = await Promise.all([facilitator.settle(first), facilitator.settle(second)])
    expect(answers.filter((a) => a.success)).toHaveLength(1)
    // The second's hold exceeds what the permit grants: it waits for the first, is verified again and fails its simulation.
    expect(answers.find((a) => !a.success)).toMatchObject({ errorReason: expect.stringMatching(/^(invalid_batch_settlement_evm_deposit_simulation_failed|insufficient_funds)$/), transaction: '' })
    expect(await sentByFacilitator()).toBe(sent + 1)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 5000n)
  })

  it('without the extension, a payer without allowance is refused with the official permit2_allowance_required code', async () => {
    const payer = await unapprovedPayer()
    const body = await officialDeposit(payer)
    expect(body.paymentPayload.extensions).toBeUndefined()
    await refusedWithNothingSent(body, 'invalid_batch_settlement_evm_permit2_allowance_required')
  })

  it('refuses a permit for another amount, to another spender, past its deadline, or from another account, sending nothing', async () => {
    const payer = await unapprovedPayer()
    const body = await officialDeposit(payer, declared)
    const now = Math.floor(Date.now() / 1000)
    await refusedWithNothingSent(await withPermit(body, payer, (i) => ({ ...i, amount: '4000' })), 'invalid_batch_settlement_evm_eip2612_amount_mismatch')
    await refusedWithNothingSent(await withPermit(body, payer, (i) => ({ ...i, spender: PERMIT2_DEPOSIT_COLLECTOR_ADDRESS })), 'eip2612_spender_not_permit2')
    await refusedWithNothingSent(await withPermit(body, payer, (i) => ({ ...i, deadline: String(now - 1) })), 'eip2612_deadline_expired')
    const other = privateKeyToAccount(generatePrivateKey())
    await refusedWithNothingSent(await withPermit(body, other, (i) => ({ ...i, from: other.address })), 'eip2612_from_mismatch')
    await refusedWithNothingSent(await withPermit(body, payer, (i) => ({ ...i, asset: PERMIT2_ADDRESS })), 'eip2612_asset_mismatch')
    const short = structuredClone(body)
    ;(short.paymentPayload.extensions as Record<string, { info: PermitInfo }>)[EIP2612_GAS_SPONSORING]!.info.signature = '0x1234'
    await refusedWithNothingSent(short, 'invalid_eip2612_extension_format')
    // The untouched payload still settles: none of the refusals spent anything.
    expect(await facilitator.settle(body)).toMatchObject({ success: true, amount: '5000' })
  })

  it('refuses a well-formed permit the payer did not sign in the simulation, sending nothing', async () => {
    const payer = await unapprovedPayer()
    const body = await officialDeposit(payer, declared)
    const forged = await withPermit(body, privateKeyToAccount(generatePrivateKey()), (i) => i)
    await refusedWithNothingSent(forged, 'invalid_batch_settlement_evm_deposit_simulation_failed')
  })

  it('refuses a signed erc20ApprovalGasSponsoring approval with erc20_approval_unavailable, broadcasting nothing', async () => {
    const payer = await unapprovedPayer()
    const body = await officialDeposit(payer)
    const approve = encodeFunctionData({ abi: world.token.abi, functionName: 'approve', args: [PERMIT2_ADDRESS, 2n ** 256n - 1n] })
    const signedTransaction = await payer.signTransaction({ chainId: world.node.chainId, to: world.token.address, data: approve, nonce: 0, gas: 100_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 1n, type: 'eip1559' })
    const info = { from: payer.address, asset: world.token.address, spender: PERMIT2_ADDRESS, amount: (2n ** 256n - 1n).toString(), signedTransaction, version: '1' }
    const withApproval = { ...body, paymentPayload: { ...body.paymentPayload, extensions: { [ERC20_APPROVAL_GAS_SPONSORING]: { info } } } }
    const payerNonce = await world.node.publicClient.getTransactionCount({ address: payer.address })
    await refusedWithNothingSent(withApproval, 'invalid_batch_settlement_evm_erc20_approval_unavailable')
    // The payer's approve was not broadcast either.
    expect(await world.node.publicClient.getTransactionCount({ address: payer.address })).toBe(payerNonce)
    expect(await allowance(payer.address)).toBe(0n)
  })
})

describe('the test Permit2 deposit collector', () => {
  it('reverts Permit2612AmountMismatch when the permit is not for the deposit amount', async () => {
    const payer = await unapprovedPayer()
    const config = channelConfig({ payer: payer.address, receiver: to.receiver, receiverAuthorizer: to.authorizer.address, token: world.token.address, salt: generatePrivateKey() })
    const base = await permit2CollectorData(payer, world.token, world.node.chainId, config, 3000n)
    const [nonce, deadline, signature] = decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }], base)
    const permit = (value: bigint) => encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint8' }, { type: 'bytes32' }, { type: 'bytes32' }], [value, deadline, 27, `0x${'11'.repeat(32)}`, `0x${'22'.repeat(32)}`])
    const data = (value: bigint) => encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }], [nonce, deadline, signature, permit(value)])
    const deposit = (value: bigint) =>
      world.node.publicClient.call({ to: BATCH_SETTLEMENT_ADDRESS, data: encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [config, 3000n, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, data(value)] }) })
    const selector = toFunctionSelector('Permit2612AmountMismatch()')
    await expect(deposit(2999n)).rejects.toThrow(selector)
    // A permit for the amount that fails (a forged signature) is caught: the transfer then fails only for want of an allowance.
    await expect(deposit(3000n)).rejects.not.toThrow(selector)
  })
})
