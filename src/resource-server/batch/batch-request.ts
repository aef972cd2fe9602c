/**
 * One paid request on a `batch-settlement` channel, as the specification's server does it: under
 * the channel's lease, the voucher's ceiling must be what was charged plus the price (else a
 * corrective 402 with the channel state and the last signed voucher), the payment is verified (an
 * EOA voucher locally when the mirrored state is fresh), the work runs, a deposit is settled, and
 * the new state (with the voucher) is stored before the answer leaves. A refund skips the work.
 */
import type { Hex } from 'viem'
import { channelId, type DepositPayload, type RefundPayload, type VoucherPayload } from '../../evm/batch/codec.js'
import { parseBatchPayload } from '../../evm/batch/parse.js'
import { BATCH_REJECTION as R } from '../../evm/batch/reasons.js'
import type { SettleResponse } from '../../schemas/messages.js'
import type { PaymentPayloadV2 } from '../../schemas/payload.js'
import type { PaymentRequirementsV2 } from '../../schemas/requirements.js'
import { encodePaymentResponseHeader } from '../payment-headers.js'
import type { AnswerKit } from '../paywall-answer.js'
import { isMeteredAnswer, type Work } from '../paywall-core.js'
import { channelStateWire, readMirroredFields, type ChannelState, type MirroredFields } from './channel-state.js'
import type { BatchRuntime } from './batch-runtime.js'
import { canCheckLocally, checkVoucherLocally } from './local-voucher-check.js'
import type { BatchOfferTerms } from './offer-terms.js'
import type { PaymentOffer } from '../payment-required.js'
import { noteSweepPending } from './claim-policy.js'
import { completeRefund } from './refund-settlement.js'

/** What the paywall hands over for one batch-settlement request, answered on its transport (`R`). */
export interface PaywallBatchCall<R = Response> {
  readonly payload: PaymentPayloadV2
  /** The resolved offer the payment accepted. */
  readonly offer: PaymentOffer
  readonly requirements: PaymentRequirementsV2
  /** A 402 with `error`, and `correction` merged into the offer's `extra` (the corrective 402). */
  readonly challenge: (error: string, correction?: Record<string, unknown>) => R
  /** A facilitator fault (thrown), answered as the paywall answers those. */
  readonly fault: (error: unknown) => R
  /** A mistake of the work (a usage out of range), answered 500. */
  readonly mistake: (message: string) => R
  readonly work: Work<R>
  /** The transport's answers: the refund's acknowledgement, the work's status, the settlement header. */
  readonly answers: AnswerKit<R>
}

/** A paywall's call with its offer's terms read (see batchOfferTerms). */
export interface BatchCall<R> extends PaywallBatchCall<R> {
  readonly terms: BatchOfferTerms
}

type ClientPayload = DepositPayload | VoucherPayload | RefundPayload

export async function serveBatchRequest<R>(runtime: BatchRuntime, call: BatchCall<R>): Promise<R> {
  const { terms } = call
  const parsed = parseBatchPayload(call.payload.payload, terms.chainId, terms.asset)
  if ('refusal' in parsed) return call.challenge(parsed.refusal.invalidReason ?? R.payloadType)
  const payload = parsed.payload
  if (payload.type !== 'deposit' && payload.type !== 'voucher' && payload.type !== 'refund') {
    return call.challenge(R.payloadType)
  }
  const id = payload.voucher.channelId
  // A config that does not hash to its id takes no lease on someone else's channel.
  if (channelId(payload.channelConfig, terms.chainId) !== id) return call.challenge(R.channelIdMismatch)
  const holder = `${runtime.instance}:${crypto.randomUUID()}`
  if (!(await runtime.store.acquire(id, holder, runtime.leaseMs))) return call.challenge(R.channelBusy)
  try {
    return await underLease(runtime, call, payload, holder)
  } finally {
    await runtime.store.release(id, holder)
  }
}

async function underLease<R>(runtime: BatchRuntime, call: BatchCall<R>, payload: ClientPayload, holder: string): Promise<R> {
  const { terms } = call
  const { store } = runtime
  const id = payload.voucher.channelId
  const max = payload.voucher.maxClaimableAmount
  const [stored, recorded] = await Promise.all([store.get(id), store.claimed(id)])
  const state = stored && recorded > stored.totalClaimed ? { ...stored, totalClaimed: recorded } : stored
  const increment = payload.type === 'refund' ? 0n : terms.price
  const corrective = (fields: MirroredFields, charged: bigint, voucher?: { signedMaxClaimable: bigint; signature: Hex }) =>
    call.challenge(R.cumulativeAmountMismatch, {
      channelState: channelStateWire(id, fields, charged),
      ...(voucher ? { voucherState: { signedMaxClaimable: voucher.signedMaxClaimable.toString(), signature: voucher.signature } } : {}),
    })
  // The client signs what it believes was charged plus the price (plus nothing for a refund).
  if (state && max !== state.charged + increment) return corrective(state, state.charged, state)

  const now = runtime.now()
  let mirrored: MirroredFields
  let syncedAt = now
  let payer: string | undefined = payload.channelConfig.payer
  if (payload.type === 'voucher' && canCheckLocally(payload, state, runtime.freshMs, now)) {
    const refusal = await checkVoucherLocally(payload, state, recorded, terms)
    if (refusal) return call.challenge(refusal)
    mirrored = state
    syncedAt = state.onchainSyncedAt
  } else {
    let verdict
    try {
      verdict = await runtime.facilitator.verify({ x402Version: 2, paymentPayload: call.payload, paymentRequirements: call.requirements })
    } catch (error) {
      return call.fault(error)
    }
    if (!verdict.isValid) return call.challenge(verdict.invalidReason ?? R.voucherPayload)
    const fields = readMirroredFields(verdict.extra)
    if (!fields) return call.challenge(R.channelStateReadFailed)
    mirrored = fields
    payer = verdict.payer ?? payer
  }
  // A channel we hold nothing for starts from what is claimed on chain (unclaimed vouchers we lost are forfeited).
  const base = state?.charged ?? mirrored.totalClaimed
  if (!state && max !== base + increment) return corrective(mirrored, base)

  if (payload.type === 'refund') return refund(runtime, call, payload, state, mirrored, base, holder)

  const answer = await call.work({ x402Version: 2, payer, payload: call.payload, requirements: call.requirements, metered: false, maxAmount: terms.price })
  const response = isMeteredAnswer(answer) ? answer.response : answer
  const problem = call.answers.problemOf?.(response)
  if (problem !== undefined) return call.mistake(problem)
  if (call.answers.statusOf(response) >= 400) return response
  const charge = isMeteredAnswer(answer) ? answer.usage : terms.price
  if (typeof charge !== 'bigint' || charge < 0n || charge > terms.price) {
    return call.mistake(`the paid work reported a usage of ${String(charge)}; a batch-settlement payment charges from 0 to its price of ${terms.price}`)
  }

  let settlement: SettleResponse | undefined
  if (payload.type === 'deposit') {
    try {
      settlement = await runtime.facilitator.settle({ x402Version: 2, paymentPayload: call.payload, paymentRequirements: call.requirements })
    } catch (error) {
      return call.fault(error)
    }
    if (!settlement.success) return call.challenge(settlement.errorReason ?? R.depositTransactionFailed)
    mirrored = readMirroredFields(settlement.extra?.channelState as Record<string, unknown> | undefined) ?? { ...mirrored, balance: mirrored.balance + payload.deposit.amount }
    syncedAt = runtime.now()
  }

  const next: ChannelState = {
    channelId: id,
    network: terms.network,
    config: call.payload.payload.channelConfig as ChannelState['config'],
    charged: base + charge,
    signedMaxClaimable: max,
    signature: payload.voucher.signature,
    balance: mirrored.balance,
    totalClaimed: mirrored.totalClaimed,
    withdrawRequestedAt: mirrored.withdrawRequestedAt,
    refundNonce: mirrored.refundNonce,
    onchainSyncedAt: syncedAt,
    lastRequestAt: runtime.now(),
  }
  // Stored before the answer leaves: a crash after this loses nothing the payer signed.
  if (!(await store.holds(id, holder))) return call.challenge(R.channelBusy)
  await store.put(next)
  const paid: SettleResponse = settlement
    ? { ...settlement, extra: { ...settlement.extra, chargedAmount: charge.toString(), channelState: channelStateWire(id, next, next.charged) } }
    : { success: true, transaction: '', network: terms.network, payer: payload.channelConfig.payer, amount: '', extra: { chargedAmount: charge.toString(), channelState: channelStateWire(id, next, next.charged) } }
  return call.answers.withHeaders(response, encodePaymentResponseHeader(2, paid))
}

async function refund<R>(runtime: BatchRuntime, call: BatchCall<R>, payload: RefundPayload, state: ChannelState | undefined, mirrored: MirroredFields, charged: bigint, holder: string): Promise<R> {
  const id = payload.voucher.channelId
  const completed = await completeRefund(runtime, call.terms, call.payload.payload, payload, mirrored, charged)
  if (typeof completed === 'string') return call.challenge(completed)
  let settlement: SettleResponse
  try {
    settlement = await runtime.facilitator.settle({ x402Version: 2, paymentPayload: { ...call.payload, payload: completed }, paymentRequirements: call.requirements })
  } catch (error) {
    return call.fault(error)
  }
  if (!settlement.success) return call.challenge(settlement.errorReason ?? R.refundTransactionFailed)
  const after = readMirroredFields(settlement.extra?.channelState as Record<string, unknown> | undefined)
  if (await runtime.store.holds(id, holder)) {
    if (!after || after.balance <= charged) {
      await runtime.store.delete(id)
    } else {
      const now = runtime.now()
      const kept: ChannelState = {
        ...(state ?? { channelId: id, network: call.terms.network, config: call.payload.payload.channelConfig as ChannelState['config'], charged, signedMaxClaimable: payload.voucher.maxClaimableAmount, signature: payload.voucher.signature, lastRequestAt: now }),
        ...after,
        onchainSyncedAt: now,
      }
      await runtime.store.put(kept)
    }
    // The refund claimed what was charged in the same transaction: the next policy round sweeps it.
    if (after) await runtime.store.recordClaimed(id, after.totalClaimed)
    if (charged > mirrored.totalClaimed) await noteSweepPending(runtime, call.terms.network, call.terms.asset, call.terms.payTo)
  }
  const answer: SettleResponse = { ...settlement, extra: { ...settlement.extra, channelState: { ...(settlement.extra?.channelState as Record<string, unknown> | undefined), chargedCumulativeAmount: charged.toString() } } }
  // As Response.json answers it: JSON, no cache-control.
  const acknowledged = call.answers.fromPlain({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Refund acknowledged', channelId: id }) })
  return call.answers.withHeaders(acknowledged, encodePaymentResponseHeader(2, answer))
}
