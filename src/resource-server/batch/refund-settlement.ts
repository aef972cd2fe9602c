/**
 * Completing a client's refund request for the facilitator (the specification's cooperative refund):
 * the amount (all that is unclaimed when left out), the channel's refund nonce, the claim of what
 * was charged (it rides in front of the refund), and the receiver authorizer's signatures when the
 * server holds that key (else the facilitator's delegated authorizer signs).
 */
import { claimBatchTypedData, normalizeChannelConfig, refundTypedData, type RefundPayload } from '../../evm/batch/codec.js'
import { BATCH_REJECTION as R } from '../../evm/batch/reasons.js'
import type { BatchRuntime } from './batch-runtime.js'
import type { MirroredFields } from './channel-state.js'
import type { BatchOfferTerms } from './offer-terms.js'

/** The payload to settle, or the rejection code. */
export async function completeRefund(runtime: BatchRuntime, terms: BatchOfferTerms, raw: Record<string, unknown>, payload: RefundPayload, mirrored: MirroredFields, charged: bigint): Promise<Record<string, unknown> | string> {
  const remainder = mirrored.balance - charged
  if (remainder <= 0n) return R.refundNoBalance
  let amount = remainder
  if (payload.amount !== undefined) {
    if (!/^\d{1,39}$/.test(payload.amount)) return R.refundAmountInvalid
    amount = BigInt(payload.amount)
    if (amount === 0n || amount > remainder) return R.refundAmountInvalid
  }
  const id = payload.voucher.channelId
  const config = raw.channelConfig as Record<string, unknown>
  // The refund voucher is signed for exactly what was charged: it is the claim's voucher too.
  const claims = charged > mirrored.totalClaimed ? [{ voucher: { channel: config, maxClaimableAmount: charged.toString() }, signature: payload.voucher.signature, totalClaimed: charged.toString() }] : []
  const completed: Record<string, unknown> = { ...raw, amount: amount.toString(), refundNonce: mirrored.refundNonce.toString(), claims }
  const authorizer = runtime.authorizer
  if (authorizer) {
    completed.refundAuthorizerSignature = await authorizer.signTypedData(refundTypedData(terms.chainId, id, mirrored.refundNonce, amount))
    if (claims.length > 0) {
      const channel = normalizeChannelConfig(payload.channelConfig)
      completed.claimAuthorizerSignature = await authorizer.signTypedData(claimBatchTypedData(terms.chainId, [{ voucher: { channel, maxClaimableAmount: charged }, signature: payload.voucher.signature, totalClaimed: charged }]))
    }
  }
  return completed
}
