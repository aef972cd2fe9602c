import * as z from 'zod'
import { isAddress, type Address, type Hex } from 'viem'
import type { PaymentContext } from '../../core/adapter.js'
import { isRecord } from '../../schemas/parse-request.js'
import { PERMIT2_ADDRESS } from '../codec/permit2-abi.js'
import { sameAddress } from '../exact/prepare-payment.js'
import { EIP2612_REJECTION, PERMIT2_REJECTION, type Rejection } from '../reasons.js'

/** The payload extension carrying an EIP-2612 `permit` of the token to Permit2 (the facilitator pays its gas in the settlement). */
export const EIP2612_GAS_SPONSORING = 'eip2612GasSponsoring'
/** The payload extension carrying a payer-signed `approve(Permit2)` transaction for the facilitator to broadcast (not served). */
export const ERC20_APPROVAL_GAS_SPONSORING = 'erc20ApprovalGasSponsoring'

const decimal = z
  .string()
  .regex(/^\d{1,78}$/, 'must be a decimal integer string')
  .transform((value) => BigInt(value))
  .refine((value) => value < 2n ** 256n, 'does not fit in uint256')
const address = z.string().refine((value) => isAddress(value, { strict: true }), 'must be a 20-byte hex address with a valid checksum')

/** `extensions.eip2612GasSponsoring.info` as the official `@x402/evm` client signs it (other keys, e.g. the server's `description`, are kept out). */
const permitInfoSchema = z.object({
  from: address,
  asset: address,
  spender: address,
  amount: decimal,
  nonce: decimal,
  deadline: decimal,
  // The proxy passes (v, r, s) to the token: exactly 65 bytes, r || s || v.
  signature: z.string().regex(/^0x[0-9a-fA-F]{130}$/, 'must be a 65-byte signature (r, s, v) in hex'),
  version: z.literal('1', { error: 'must be "1" (the only version of this extension)' }),
})

/** A signed EIP-2612 permit that passed the offline checks, split as the proxy's `settleWithPermit` takes it. */
export interface Eip2612Permit {
  readonly value: bigint
  readonly deadline: bigint
  /** The token nonce the payer signed over (compared with the token's `nonces(owner)` in verify's read). */
  readonly nonce: bigint
  readonly r: Hex
  readonly s: Hex
  readonly v: number
}

/** What the extension's permit must match: the Permit2 authorization it funds. */
export interface PermitTarget {
  readonly payer: Address
  readonly asset: string
  /** `permitted.amount` of the Permit2 authorization (the proxy requires the permit's value to equal it). */
  readonly permittedAmount: bigint
  readonly nowSeconds: bigint
  readonly settleMarginSeconds: number
  /**
   * The codes a scheme answers instead of exact's for the two refusals it names differently
   * (batch-settlement: its own amount mismatch, and its `erc20_approval_unavailable`), and
   * the contract that runs the permit, for messages.
   */
  readonly naming?: { readonly amountMismatch?: string; readonly erc20Approval?: string; readonly runBy?: string }
}

/**
 * The gas-sponsoring extensions of a Permit2 payment: `undefined` when the payload carries no signed
 * request (none at all, or only the server's declaration echoed from the 402, which the official
 * client merges into every payload); the EIP-2612 permit, checked field by field with the official
 * codes; or a rejection. A signed `erc20ApprovalGasSponsoring` transaction is refused: broadcasting
 * it would have this facilitator pay for a transaction the payer wrote, whatever it does.
 */
export function gasSponsoringPermit(ctx: PaymentContext, target: PermitTarget): Eip2612Permit | Rejection | undefined {
  const extensions = 'extensions' in ctx.payload ? ctx.payload.extensions : undefined
  if (!isRecord(extensions)) return undefined
  const eip2612 = extensions[EIP2612_GAS_SPONSORING]
  const info = isRecord(eip2612) ? eip2612.info : undefined
  // The payer's permit is what carries a signature; a declaration (description, version) asks for nothing.
  if (isRecord(info) && 'signature' in info) return checkPermit(info, target)
  if (eip2612 !== undefined && !isRecord(eip2612)) {
    return { reason: EIP2612_REJECTION.invalidFormat, message: `paymentPayload.extensions.${EIP2612_GAS_SPONSORING} must be an object with an info object` }
  }
  const approval = extensions[ERC20_APPROVAL_GAS_SPONSORING]
  const approvalInfo = isRecord(approval) ? approval.info : undefined
  if (isRecord(approvalInfo) && 'signedTransaction' in approvalInfo) {
    return {
      reason: target.naming?.erc20Approval ?? PERMIT2_REJECTION.erc20ApprovalNotSupported,
      message: `${ERC20_APPROVAL_GAS_SPONSORING} is not served: broadcasting the payer's signed approve transaction would have this facilitator pay for a transaction the payer wrote; sign an EIP-2612 permit (${EIP2612_GAS_SPONSORING}) or approve Permit2 from the payer's account`,
    }
  }
  return undefined
}

/** The official checks in their order: format, from, asset, spender, deadline; then the amount the proxy requires. */
function checkPermit(info: Record<string, unknown>, target: PermitTarget): Eip2612Permit | Rejection {
  const parsed = permitInfoSchema.safeParse(info)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue?.path.join('.') || 'info'
    return { reason: EIP2612_REJECTION.invalidFormat, message: `paymentPayload.extensions.${EIP2612_GAS_SPONSORING}.info.${field}: ${issue?.message ?? 'is invalid'}` }
  }
  const permit = parsed.data
  if (!sameAddress(permit.from, target.payer)) {
    return { reason: EIP2612_REJECTION.fromMismatch, message: `${EIP2612_GAS_SPONSORING}.info.from ${permit.from} is not the payer ${target.payer}` }
  }
  if (!sameAddress(permit.asset, target.asset)) {
    return { reason: EIP2612_REJECTION.assetMismatch, message: `${EIP2612_GAS_SPONSORING}.info.asset ${permit.asset} differs from paymentRequirements.asset` }
  }
  if (!sameAddress(permit.spender, PERMIT2_ADDRESS)) {
    return { reason: EIP2612_REJECTION.spenderNotPermit2, message: `${EIP2612_GAS_SPONSORING}.info.spender must be Permit2 ${PERMIT2_ADDRESS}` }
  }
  const expired = permitDeadlineRejection(permit.deadline, target.nowSeconds, target.settleMarginSeconds)
  if (expired) return expired
  if (permit.amount !== target.permittedAmount) {
    return { reason: target.naming?.amountMismatch ?? EIP2612_REJECTION.amountMismatch, message: `${EIP2612_GAS_SPONSORING}.info.amount ${permit.amount} differs from permit2Authorization.permitted.amount ${target.permittedAmount} (${target.naming?.runBy ?? 'the proxy'} requires them equal)` }
  }
  const hex = permit.signature.slice(2)
  return {
    value: permit.amount,
    deadline: permit.deadline,
    nonce: permit.nonce,
    r: `0x${hex.slice(0, 64)}`,
    s: `0x${hex.slice(64, 128)}`,
    v: Number.parseInt(hex.slice(128, 130), 16),
  }
}

/** An EIP-2612 permit whose deadline leaves less than the settle margin: checked at verify, and again by settle. */
export function permitDeadlineRejection(deadline: bigint, nowSeconds: bigint, settleMarginSeconds: number): Rejection | undefined {
  if (deadline >= nowSeconds + BigInt(settleMarginSeconds)) return undefined
  return { reason: EIP2612_REJECTION.deadlineExpired, message: `${EIP2612_GAS_SPONSORING}.info.deadline ${deadline} has passed or leaves less than ${settleMarginSeconds} s to settle` }
}
