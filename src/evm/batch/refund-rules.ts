/**
 * The refund rules of the specification, the same for a client's refund at /verify and for the
 * refund the server completed at /settle: the amount is a positive uint128 within what is left
 * once the channel's claims land, the nonce is the channel's next, and the Refund is signed by the
 * channel's receiver authorizer (checked as the contract does) or delegated to ours.
 */
import { hashTypedData, isAddressEqual, type Hex, type LocalAccount } from 'viem'
import type { BatchChain } from './chain.js'
import { channelId, refundTypedData, type ChannelSnapshot, type RefundPayload } from './codec.js'
import { BATCH_REJECTION as R } from './reasons.js'
import { signatureCheckerValid } from './signature-check.js'
import type { Refusal } from './verify-channel.js'

type Authorizer = Pick<LocalAccount, 'address' | 'signTypedData'> | undefined

/** What a refund that passed the rules returns: the amount it asks for, and who signs its Refund. */
export interface RefundTerms {
  /** The amount asked for (everything refundable when the payload names none). */
  readonly amount: bigint
  /** What the channel holds beyond its claims once they land. */
  readonly refundable: bigint
  /** `ours`: our receiver authorizer signs (delegated); `theirs`: the payload's signature, checked; `later`: a client's refund the server has yet to complete. */
  readonly signer: 'ours' | 'theirs' | 'later'
}

const UINT128 = 2n ** 128n

/**
 * Checks `payload` against `state` (the channel as read now). Rows of `payload.claims` for this
 * channel raise what is claimed before the refund; without claims (a client's payload) the
 * zero-charge voucher's ceiling does, as the server claims it first.
 */
export async function checkRefund(chain: BatchChain, payload: RefundPayload, state: ChannelSnapshot, authorizer: Authorizer, signsRefunds: boolean): Promise<Refusal | RefundTerms> {
  let asked: bigint | undefined
  if (payload.amount !== undefined) {
    if (!/^\d{1,39}$/.test(payload.amount) || BigInt(payload.amount) === 0n || BigInt(payload.amount) >= UINT128) return { reason: R.refundAmountInvalid, message: 'amount must be a positive uint128 decimal string' }
    asked = BigInt(payload.amount)
  }
  const id = payload.voucher.channelId
  const claimed = payload.claims
    ? payload.claims.reduce((max, c) => (channelId(c.voucher.channel, chain.chainId) === id && c.totalClaimed > max ? c.totalClaimed : max), state.totalClaimed)
    : payload.voucher.maxClaimableAmount > state.totalClaimed
      ? payload.voucher.maxClaimableAmount
      : state.totalClaimed
  if (claimed >= state.balance) return { reason: R.refundNoBalance, message: 'no unclaimed balance is left to refund' }
  const refundable = state.balance - claimed
  if (asked !== undefined && asked > refundable) return { reason: R.refundAmountInvalid, message: `the refund's ${asked} exceeds the ${refundable} left once the channel's claims land` }
  const amount = asked ?? refundable
  if (payload.refundNonce !== undefined && payload.refundNonce !== state.refundNonce) {
    // The contract would revert it: the official facilitator's code for that, found here without simulating.
    return { reason: R.refundSimulationFailed, message: `refundNonce ${payload.refundNonce} is not the channel's next refund nonce ${state.refundNonce}: refundWithSignature would revert` }
  }
  const config = payload.channelConfig
  const signature = payload.refundAuthorizerSignature
  if (signature !== undefined) {
    if (asked === undefined || payload.refundNonce === undefined) return { reason: R.refundPayload, message: 'a refundAuthorizerSignature signs an amount and a refundNonce: both must be given' }
    const digest = hashTypedData(refundTypedData(chain.chainId, id, payload.refundNonce, amount))
    const ok = await signatureCheckerValid(chain.client, config.receiverAuthorizer, digest, signature as Hex, 'checking the Refund signature with the receiver authorizer')
    if (!ok) return { reason: R.authorizerAddressMismatch, message: "the Refund is not signed by the channel's receiver authorizer" }
    return { amount, refundable, signer: 'theirs' }
  }
  // A completed refund (it names its nonce) without the server's signature is ours to sign, if delegated and allowed.
  if (payload.refundNonce === undefined) return { amount, refundable, signer: 'later' }
  if (!authorizer || !signsRefunds) return { reason: R.authorizerNotConfigured, message: 'no refundAuthorizerSignature, and this facilitator signs no refunds (no receiver authorizer, or delegated refunds not allowed)' }
  if (!isAddressEqual(config.receiverAuthorizer, authorizer.address)) return { reason: R.authorizerAddressMismatch, message: 'the channel names another receiver authorizer' }
  return { amount, refundable, signer: 'ours' }
}
