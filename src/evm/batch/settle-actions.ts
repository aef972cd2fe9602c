/**
 * The on-chain side of `batch-settlement` settles: each action prepared (signed by the delegated
 * receiver authorizer when the server left that to us, and simulated) in settle's own verify, then
 * sent, confirmed and answered in the specification's shapes.
 */
import { encodeFunctionData, isAddressEqual, parseEventLogs, type Address, type Hex, type LocalAccount, type TransactionReceipt } from 'viem'
import type { BroadcastRecord, PaymentContext, SettleJournal } from '../../core/adapter.js'
import { REJECTION } from '../../errors/reasons.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { batchSettlementAbi } from './abi.js'
import type { SignerSlot } from '../chain/network-runtime.js'
import type { BatchChain, Outcome, PreparedCall, Recheck } from './chain.js'
import { channelId, claimBatchTypedData, refundTypedData, snapshotWire, type BatchPayload, type ChannelSnapshot, type ClaimPayload, type DepositPayload, type RefundPayload, type SettlePayload, type VoucherClaim } from './codec.js'
import { BATCH_SETTLEMENT_ADDRESS } from './constants.js'
import { BATCH_REJECTION as R } from './reasons.js'
import { checkRefund } from './refund-rules.js'
import type { Refusal } from './verify-channel.js'

type Authorizer = Pick<LocalAccount, 'address' | 'signTypedData'> | undefined

/** A payment as settle's verify checked it: what to send, from which key, and what to answer with. */
export type BatchPayment =
  | { readonly kind: 'voucher' }
  | ({ readonly call: PreparedCall; readonly slot: SignerSlot; readonly subjects: readonly string[] } & (
      | { readonly kind: 'deposit'; readonly payload: DepositPayload; readonly before: ChannelSnapshot }
      | { readonly kind: 'claim'; readonly channelIds: readonly Hex[]; readonly claims?: readonly bigint[] }
      | { readonly kind: 'sweep'; readonly receiver: Address; readonly token: Address }
      | { readonly kind: 'refund'; readonly payload: RefundPayload; readonly before: ChannelSnapshot }
    ))

/**
 * What a transaction waits behind (see BatchChain.send): the channels it moves, and the receivers'
 * tokens whose claimed totals it raises or sweeps, so a sweep queued behind a claim of its receiver
 * finds the claim landed.
 */
function claimSubjects(claims: readonly VoucherClaim[], chainId: number): string[] {
  return claims.flatMap((c) => [channelId(c.voucher.channel, chainId), `${c.voucher.channel.receiver}:${c.voucher.channel.token}`])
}

const claimArgs = (claims: readonly VoucherClaim[]) => claims.map((c) => ({ voucher: { channel: c.voucher.channel, maxClaimableAmount: c.voucher.maxClaimableAmount }, signature: c.signature, totalClaimed: c.totalClaimed }))

/** The ClaimBatch signature: the server's, or ours when every row delegates to our receiver authorizer. */
async function claimSignature(chain: BatchChain, claims: readonly VoucherClaim[], given: Hex | undefined, authorizer: Authorizer): Promise<Hex | Refusal> {
  if (given) return given
  if (!authorizer) return { reason: R.authorizerNotConfigured, message: 'no claimAuthorizerSignature, and this facilitator has no receiver authorizer' }
  if (claims.some((c) => !isAddressEqual(c.voucher.channel.receiverAuthorizer, authorizer.address))) return { reason: R.authorizerAddressMismatch, message: 'a claim row names another receiver authorizer' }
  return authorizer.signTypedData(claimBatchTypedData(chain.chainId, claims))
}

export async function prepareClaim(chain: BatchChain, slot: SignerSlot, payload: ClaimPayload, authorizer: Authorizer): Promise<BatchPayment | Refusal> {
  const bad = payload.claims.findIndex((c) => c.totalClaimed > c.voucher.maxClaimableAmount)
  if (bad >= 0) return { reason: R.claimPayload, message: `claims.${bad}.totalClaimed exceeds its voucher's maxClaimableAmount` }
  // A claim that raises no channel's total would only spend the facilitator's gas: nothing is sent.
  const ids = payload.claims.map((c) => channelId(c.voucher.channel, chain.chainId))
  const claimed = await chain.claimedTotals(ids)
  if (!payload.claims.some((c, i) => c.totalClaimed > claimed[i]!)) return { reason: R.claimPayload, message: 'no row raises its channel\'s claimed total: nothing to claim' }
  const signature = await claimSignature(chain, payload.claims, payload.claimAuthorizerSignature, authorizer)
  if (typeof signature !== 'string') return signature
  const data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claimArgs(payload.claims), signature] })
  const call = await chain.simulate(slot.signer.address, data)
  if ('revert' in call) return { reason: R.claimSimulationFailed, message: call.revert }
  return { kind: 'claim', call, slot, subjects: claimSubjects(payload.claims, chain.chainId), channelIds: ids, claims: payload.claims.map((c) => c.totalClaimed) }
}

export async function prepareSweep(chain: BatchChain, slot: SignerSlot, payload: SettlePayload): Promise<BatchPayment | Refusal> {
  const totals = await chain.receiverTotals(payload.receiver, payload.token)
  if (totals.totalClaimed <= totals.totalSettled) return { reason: R.nothingToSettle, message: 'nothing claimed and unsettled for this receiver and token' }
  const call = await chain.simulate(slot.signer.address, encodeFunctionData({ abi: batchSettlementAbi, functionName: 'settle', args: [payload.receiver, payload.token] }))
  if ('revert' in call) return { reason: R.settleSimulationFailed, message: call.revert }
  return { kind: 'sweep', call, slot, subjects: [`${payload.receiver}:${payload.token}`], receiver: payload.receiver, token: payload.token }
}

/**
 * A refund the server completed (amount, refundNonce, claims), checked by the refund rules (see
 * checkRefund) and signed by our receiver authorizer when delegated. Claims ride in front in one multicall.
 */
export async function prepareRefund(chain: BatchChain, slot: SignerSlot, payload: RefundPayload, state: ChannelSnapshot, authorizer: Authorizer, signsRefunds: boolean): Promise<BatchPayment | Refusal> {
  if (payload.amount === undefined || payload.refundNonce === undefined || payload.claims === undefined) return { reason: R.refundPayload, message: 'a refund to settle needs amount, refundNonce and claims' }
  const terms = await checkRefund(chain, payload, state, authorizer, signsRefunds)
  if ('reason' in terms) return terms
  const { amount } = terms
  const config = payload.channelConfig
  const refundSignature = terms.signer === 'ours' ? await authorizer!.signTypedData(refundTypedData(chain.chainId, payload.voucher.channelId, payload.refundNonce, amount)) : payload.refundAuthorizerSignature!
  const refundData = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundWithSignature', args: [config, amount, payload.refundNonce, refundSignature] })
  let data = refundData
  if (payload.claims.length > 0) {
    const signature = await claimSignature(chain, payload.claims, payload.claimAuthorizerSignature, authorizer)
    if (typeof signature !== 'string') return signature
    const claimData = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'claimWithSignature', args: [claimArgs(payload.claims), signature] })
    data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'multicall', args: [[claimData, refundData]] })
  }
  const call = await chain.simulate(slot.signer.address, data)
  if ('revert' in call) return { reason: R.refundSimulationFailed, message: call.revert }
  return { kind: 'refund', payload, call, slot, subjects: [payload.voucher.channelId, ...claimSubjects(payload.claims, chain.chainId)], before: state }
}

const FAILED: Record<Exclude<BatchPayment['kind'], 'voucher'>, string> = {
  deposit: R.depositTransactionFailed,
  claim: R.claimTransactionFailed,
  sweep: R.settleTransactionFailed,
  refund: R.refundTransactionFailed,
}

function payerOf(payload: BatchPayload): string | undefined {
  return 'channelConfig' in payload ? payload.channelConfig.payer : undefined
}

/** Sends the prepared transaction and answers in the spec's shape (with the confirmed state, to remember). */
export async function settleBatch(ctx: PaymentContext, chain: BatchChain, payment: BatchPayment, journal: SettleJournal): Promise<{ response: SettleResponse; state?: ChannelSnapshot }> {
  if (payment.kind === 'voucher') {
    return { response: { success: false, errorReason: R.payloadType, errorMessage: 'a voucher is not settled by the facilitator: the resource server charges it', transaction: '', network: ctx.wireNetwork } }
  }
  const outcome = await chain.send(payment.slot, payment.call, journal, ctx.signal, recheckOf(chain, payment), payment.subjects)
  if (outcome.state === 'refused') {
    // Nothing was signed: the chain moved since verify (another claim, sweep or refund landed first).
    const payer = payment.kind === 'deposit' || payment.kind === 'refund' ? payment.payload.channelConfig.payer : undefined
    return { response: { success: false, errorReason: outcome.reason, ...(outcome.message ? { errorMessage: outcome.message } : {}), transaction: '', network: ctx.wireNetwork, ...(payer ? { payer } : {}) } }
  }
  return answer(ctx, chain, payment, outcome)
}

/**
 * The channels a deposit, claim, sweep or refund moves: remembered reads of them are stale once it
 * is sent (landed or not yet known), in this process or any other sharing the store.
 */
export function touchedChannels(payload: BatchPayload, chainId: number): Hex[] {
  switch (payload.type) {
    case 'deposit':
    case 'voucher':
      return [payload.voucher.channelId]
    case 'refund':
      return [payload.voucher.channelId, ...(payload.claims ?? []).map((c) => channelId(c.voucher.channel, chainId))]
    case 'claim':
      return payload.claims.map((c) => channelId(c.voucher.channel, chainId))
    case 'settle':
      return []
  }
}

const SIMULATION_FAILED: Record<Exclude<BatchPayment['kind'], 'voucher'>, string> = {
  deposit: R.depositSimulationFailed,
  claim: R.claimSimulationFailed,
  sweep: R.settleSimulationFailed,
  refund: R.refundSimulationFailed,
}

/**
 * The check run right before signing, once the transactions queued before this one landed: the
 * call still simulates within the gas cap, a sweep still has something claimed and unsettled, a
 * claim still raises some channel's total.
 */
function recheckOf(chain: BatchChain, payment: Exclude<BatchPayment, { kind: 'voucher' }>): Recheck {
  return async () => {
    if (payment.kind === 'sweep') {
      const totals = await chain.receiverTotals(payment.receiver, payment.token)
      if (totals.totalClaimed <= totals.totalSettled) return { reason: R.nothingToSettle, message: 'nothing claimed and unsettled for this receiver and token' }
    }
    if (payment.kind === 'claim' && payment.claims) {
      const claimed = await chain.claimedTotals(payment.channelIds)
      if (!payment.claims.some((total, i) => total > claimed[i]!)) return { reason: R.claimPayload, message: 'no row raises its channel\'s claimed total: nothing to claim' }
    }
    const simulated = await chain.simulate(payment.slot.signer.address, payment.call.data, payment.call.to)
    if ('revert' in simulated) return { reason: SIMULATION_FAILED[payment.kind], message: simulated.revert }
    return undefined
  }
}

async function answer(ctx: PaymentContext, chain: BatchChain, payment: Exclude<BatchPayment, { kind: 'voucher' }>, outcome: Exclude<Outcome, { state: 'refused' }>): Promise<{ response: SettleResponse; state?: ChannelSnapshot }> {
  const payer = payment.kind === 'deposit' || payment.kind === 'refund' ? payment.payload.channelConfig.payer : undefined
  const base = { network: ctx.wireNetwork, ...(payer ? { payer } : {}) }
  if (outcome.state !== 'mined') {
    const reason = outcome.state === 'dropped' ? REJECTION.transactionDropped : REJECTION.settlementPending
    return { response: { success: false, errorReason: reason, transaction: outcome.transaction, ...base } }
  }
  const { receipt } = outcome
  ctx.cost = (ctx.cost ?? 0n) + (outcome.cost ?? receipt.gasUsed * receipt.effectiveGasPrice)
  if (receipt.status !== 'success') return { response: { success: false, errorReason: FAILED[payment.kind], errorMessage: 'the transaction reverted', transaction: receipt.transactionHash, ...base } }
  const transaction = receipt.transactionHash
  switch (payment.kind) {
    case 'claim':
      return { response: { success: true, transaction, amount: '', ...base } }
    case 'sweep':
      return { response: { success: true, transaction, amount: settledAmount(receipt, payment.receiver, payment.token).toString(), ...base } }
    case 'deposit': {
      const state = await chain.readChannel(payment.payload.voucher.channelId).catch(() => ({ ...payment.before, balance: payment.before.balance + payment.payload.deposit.amount }))
      return { state, response: { success: true, transaction, amount: payment.payload.deposit.amount.toString(), asset: ctx.asset, extra: { channelState: snapshotWire(state) }, ...base } }
    }
    case 'refund': {
      const state = await chain.readChannel(payment.payload.voucher.channelId).catch(() => undefined)
      const refunded = state ? payment.before.balance - state.balance : refundedAmount(receipt)
      return { ...(state ? { state } : {}), response: { success: true, transaction, amount: refunded.toString(), ...(state ? { extra: { channelState: snapshotWire(state) } } : {}), ...base } }
    }
  }
}

function settledAmount(receipt: TransactionReceipt, receiver: Address, token: Address): bigint {
  const logs = parseEventLogs({ abi: batchSettlementAbi, eventName: 'Settled', logs: receipt.logs.filter((l) => isAddressEqual(l.address, BATCH_SETTLEMENT_ADDRESS)) })
  return logs.find((l) => isAddressEqual(l.args.receiver, receiver) && isAddressEqual(l.args.token, token))?.args.amount ?? 0n
}

function refundedAmount(receipt: TransactionReceipt): bigint {
  const logs = parseEventLogs({ abi: batchSettlementAbi, eventName: 'Refunded', logs: receipt.logs.filter((l) => isAddressEqual(l.address, BATCH_SETTLEMENT_ADDRESS)) })
  return logs.reduce((sum, l) => sum + l.args.amount, 0n)
}

/** Finishes a journaled transaction: answers from its receipt, or pending, or dropped (the core then settles anew). */
export async function resumeBatch(ctx: PaymentContext, chain: BatchChain, payload: BatchPayload, record: BroadcastRecord): Promise<{ response: SettleResponse; state?: ChannelSnapshot }> {
  const outcome = await chain.resume(record, ctx.signal)
  const payer = payerOf(payload)
  if (outcome.state !== 'mined') {
    return { response: { success: false, errorReason: outcome.state === 'dropped' ? REJECTION.transactionDropped : REJECTION.settlementPending, transaction: outcome.transaction, network: ctx.wireNetwork, ...(payer ? { payer } : {}) } }
  }
  const kind = payload.type === 'settle' ? 'sweep' : payload.type
  if (kind === 'voucher') return { response: { success: false, errorReason: R.payloadType, transaction: record.transaction, network: ctx.wireNetwork } }
  const before: ChannelSnapshot = { channelId: '0x', balance: 0n, totalClaimed: 0n, withdrawRequestedAt: 0, refundNonce: 0n }
  const payment = { kind, payload, call: { to: BATCH_SETTLEMENT_ADDRESS, data: '0x', gas: 0n }, slot: undefined, subjects: [], before, receiver: (payload as SettlePayload).receiver, token: (payload as SettlePayload).token, channelIds: [] } as unknown as Exclude<BatchPayment, { kind: 'voucher' }>
  const result = await answer(ctx, chain, payment, outcome)
  if (payment.kind === 'refund' && result.response.success) {
    // The balance before is unknown here: the Refunded event states what moved.
    return { ...result, response: { ...result.response, amount: refundedAmount(outcome.receipt).toString() } }
  }
  return result
}
