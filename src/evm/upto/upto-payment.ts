import { encodeFunctionData, type Address, type Hex } from 'viem'
import type { PaymentContext } from '../../core/adapter.js'
import type { NetworkRuntime } from '../chain/network-runtime.js'
import { uptoPermit2ProxyAbi, X402_UPTO_PERMIT2_PROXY } from '../codec/permit2-abi.js'
import type { Eip2612Permit } from '../permit2/eip2612-extension.js'
import { uptoProxySettleCalldata } from '../codec/calldata.js'
import { hashUptoWitness } from '../codec/permit2-typed-data.js'
import { payloadShapeRejection, permit2PayloadOf, permit2PayloadSchema, type Permit2Payload } from '../permit2/permit2-payload.js'
import { permit2612Arg, permit2FieldChecks, signedPermit, type Permit2Options, type PreparedPermit2 } from '../permit2/permit2-prepare.js'
import { UPTO_REJECTION, type Rejection } from '../reasons.js'
import { address } from '../exact/authorization.js'
import { sameAddress } from '../exact/prepare-payment.js'


/** The inner payload of an `upto` payment: a Permit2 authorization whose witness also names the facilitator. */
export const uptoPayloadSchema = permit2PayloadSchema.extend({
  permit2Authorization: permit2PayloadSchema.shape.permit2Authorization.extend({
    witness: permit2PayloadSchema.shape.permit2Authorization.shape.witness.extend({ facilitator: address }),
  }),
})

export interface UptoPayload extends Permit2Payload {
  /** The facilitator signer the payer allows to settle (the only caller the upto proxy accepts). */
  readonly facilitator: Address
}

export function parseUptoPayload(raw: unknown): UptoPayload | Rejection {
  const parsed = uptoPayloadSchema.safeParse(raw)
  if (!parsed.success) return payloadShapeRejection(parsed.error, 'an upto Permit2 authorization and signature')
  const facilitator = parsed.data.permit2Authorization.witness.facilitator
  const payload = permit2PayloadOf(parsed.data, [['witness.facilitator', facilitator]])
  return 'reason' in payload ? payload : { ...payload, facilitator: `0x${facilitator.slice(2)}` }
}

/**
 * The maximum the payer authorized: v2 `accepted.amount` (the core lets an upto settle request's
 * `amount`, the usage to charge, differ from it; a verify request carries the maximum in both).
 */
export function uptoMaximum(ctx: PaymentContext): bigint {
  const accepted = ctx.payload.x402Version === 2 ? (ctx.payload.accepted as { amount?: unknown }).amount : undefined
  return typeof accepted === 'string' && /^\d{1,78}$/.test(accepted) ? BigInt(accepted) : ctx.amount
}

/** Calldata of the upto proxy's `settle` charging `amount`, or `settleWithPermit` when the payment carries an EIP-2612 permit. */
export function uptoSettleCalldata(payload: UptoPayload, amount: bigint, permit2612?: Eip2612Permit): Hex {
  // The common shape is written word by word (see calldata.ts); the rarer one with a permit goes through viem.
  if (!permit2612) return uptoProxySettleCalldata(payload, amount)
  const permit = { permitted: { token: payload.token, amount: payload.amount }, nonce: payload.nonce, deadline: payload.deadline }
  const witness = { to: payload.to, facilitator: payload.facilitator, validAfter: payload.validAfter }
  return encodeFunctionData({ abi: uptoPermit2ProxyAbi, functionName: 'settleWithPermit', args: [permit2612Arg(permit2612), permit, amount, payload.from, witness, payload.signature] })
}

/**
 * The offline checks of an upto payment, in the official facilitator's order: spender = the upto
 * proxy, recipient, `witness.facilitator` one of this network's signers, clock, permitted amount =
 * the maximum, token; then the amount to charge (`ctx.amount`) at most the maximum,
 * then the gas-sponsoring extension (an EIP-2612 permit of the maximum). The calldata simulates the maximum.
 */
export async function prepareUpto(ctx: PaymentContext, runtime: NetworkRuntime, options: Permit2Options, payload: UptoPayload | Rejection): Promise<(PreparedPermit2 & { readonly payload: UptoPayload }) | Rejection> {
  if ('reason' in payload) return payload
  // witness.facilitator is checked where the official facilitator checks it: right after the recipient.
  const facilitatorMismatch = (): Rejection | undefined =>
    runtime.signers.some((slot) => sameAddress(slot.signer.address, payload.facilitator))
      ? undefined
      : { reason: UPTO_REJECTION.facilitatorMismatch, message: `permit2Authorization.witness.facilitator ${payload.facilitator} is not a signer of this facilitator on ${runtime.network.caip2}` }
  const admission = permit2FieldChecks(ctx, runtime, payload, options, { proxy: X402_UPTO_PERMIT2_PROXY, scheme: 'upto', amount: uptoMaximum(ctx), amountName: 'the maximum', witness: facilitatorMismatch })
  if ('reason' in admission) return admission
  if (ctx.amount > payload.amount) {
    return { reason: UPTO_REJECTION.settlementExceedsAmount, message: `the amount to settle ${ctx.amount} exceeds the permitted maximum ${payload.amount}` }
  }
  // The permit's value must be the maximum (permitted.amount), whatever the usage settled.
  // A token outside the known table must be proven to credit payTo with exactly what this call charges.
  const signed = await signedPermit(ctx, payload, options, admission, chargedBy(ctx, payload), (p) => hashUptoWitness(runtime.chainId, p))
  if ('reason' in signed) return signed
  return {
    ...signed,
    // The call settle sends: a settle request's amount is the usage (a verify's, the maximum), so the
    // settle's own verify simulates exactly what is sent. A zero usage sends nothing: the maximum is
    // simulated then, as for a verify.
    settleCalldata: uptoSettleCalldata(signed.payload, chargedBy(ctx, signed.payload), signed.permit2612),
    proxy: X402_UPTO_PERMIT2_PROXY,
  }
}

/** What the proxy call of this request charges: a settle's usage, or the maximum (a verify, or a usage of zero, which sends nothing). */
export const chargedBy = (ctx: PaymentContext, payload: UptoPayload): bigint => (ctx.amount > 0n ? ctx.amount : payload.amount)
