/**
 * The check of a plain EOA voucher without the facilitator (the specification allows it when the
 * mirrored on-chain state is fresh): the config binds to the offer and hashes to the channel id,
 * the payer authorizer signed it (one ECDSA recovery), and it fits the balance above what is claimed.
 */
import { isAddressEqual, zeroAddress } from 'viem'
import type { VoucherPayload } from '../../evm/batch/codec.js'
import { isEoaVoucherSigned } from '../../evm/batch/signature-check.js'
import { BATCH_REJECTION as R } from '../../evm/batch/reasons.js'
import type { ChannelState } from './channel-state.js'
import type { BatchOfferTerms } from './offer-terms.js'

/** Whether this voucher may be checked here: an EOA payer authorizer, fresh state, no withdrawal pending. */
export function canCheckLocally(payload: VoucherPayload, state: ChannelState | undefined, freshMs: number, now: number): state is ChannelState {
  return state !== undefined && !isAddressEqual(payload.channelConfig.payerAuthorizer, zeroAddress) && state.withdrawRequestedAt === 0 && now - state.onchainSyncedAt <= freshMs
}

/**
 * The rejection code, or undefined when the voucher is good against the remembered state. The
 * config's hash was checked against the channel id before the lease was taken.
 */
export async function checkVoucherLocally(payload: VoucherPayload, state: ChannelState, claimed: bigint, terms: BatchOfferTerms): Promise<string | undefined> {
  const config = payload.channelConfig
  if (!isAddressEqual(config.token, terms.asset)) return R.tokenMismatch
  if (!isAddressEqual(config.receiver, terms.payTo)) return R.receiverMismatch
  if (!isAddressEqual(config.receiverAuthorizer, terms.receiverAuthorizer)) return R.receiverAuthorizerMismatch
  if (config.withdrawDelay !== terms.withdrawDelay) return R.withdrawDelayMismatch
  const id = payload.voucher.channelId
  if (id !== state.channelId) return R.channelIdMismatch
  const max = payload.voucher.maxClaimableAmount
  // The facilitator's own check: what the contract's ECDSA accepts (low s, v 27 or 28), one recovery on the fast backend.
  if (!(await isEoaVoucherSigned(config, terms.chainId, id, max, payload.voucher.signature))) return R.voucherSignature
  if (max > state.balance) return R.cumulativeExceedsBalance
  if (max <= (claimed > state.totalClaimed ? claimed : state.totalClaimed)) return R.cumulativeBelowClaimed
  return undefined
}
