import { encodeFunctionData, isAddress, type Address, type Hex } from 'viem'
import type { PaymentContext } from '../../core/adapter.js'
import { admitAsset, payeeCreditOf, type AdmittedAsset, type AssetAdmission, type PayeeCredit } from '../asset-policy.js'
import type { NetworkRuntime } from '../chain/network-runtime.js'
import { exactProxySettleCalldata } from '../codec/calldata.js'
import { exactPermit2ProxyAbi, X402_EXACT_PERMIT2_PROXY } from '../codec/permit2-abi.js'
import { hashPermit2Witness } from '../codec/permit2-typed-data.js'
import { recoverAuthorizationSigner } from '../crypto/recover-signer.js'
import { unwrapErc6492 } from '../codec/erc6492.js'
import { sameAddress } from '../exact/prepare-payment.js'
import { EVM_REJECTION, PERMIT2_REJECTION, type Rejection } from '../reasons.js'
import { gasSponsoringPermit, permitDeadlineRejection, type Eip2612Permit } from './eip2612-extension.js'
import type { Permit2Payload } from './permit2-payload.js'

/** A Permit2 payment that passed the offline checks. */
export interface PreparedPermit2 {
  readonly payload: Permit2Payload
  readonly payer: Address
  /** The token, admitted by the network's asset policy (see admitAsset). */
  readonly asset: AdmittedAsset
  /**
   * A token outside the known table: what the proxy call must credit `payTo` (exact: the amount;
   * upto: the amount charged), proven by verify's simulation and by settle's before it sends.
   */
  readonly payee?: PayeeCredit
  /** The EIP-712 digest Permit2 checks. */
  readonly digest: Hex
  /** The signature recovers to the payer; otherwise only its wallet's ERC-1271 answer can prove it. */
  readonly recovered: boolean
  /** Calldata of the proxy call (`settle`, or `settleWithPermit` with a permit) that settle sends and verify simulates. */
  readonly settleCalldata: Hex
  /** The proxy called (the spender); the exact proxy when absent. */
  readonly proxy?: Address
  /** The payer's EIP-2612 permit to Permit2 (`eip2612GasSponsoring`), run by the proxy before the transfer. */
  readonly permit2612?: Eip2612Permit
  /**
   * The signature came in an ERC-6492 envelope (unwrapped in `payload.signature`, which Permit2
   * receives): the payer is a smart wallet a factory deploys, and the chain check refuses it while
   * the wallet has no code (see checkPermit2State).
   */
  readonly deployment?: { readonly factory: Address; readonly data: Hex }
}

export interface Permit2Options {
  readonly settleMarginSeconds: number
  readonly nowSeconds: () => bigint
  /** Lower-cased allowed ERC-6492 factories (the EIP-3009 path's allow-list). */
  readonly erc6492Factories: ReadonlySet<string>
}

/**
 * The signature Permit2 receives: an ERC-6492 envelope unwrapped (its factory on the allow-list, as
 * for EIP-3009 payments; Permit2 itself knows no envelope and would hand the wallet the whole
 * bytes), any other signature as it came.
 */
function permit2SignatureOf(signature: Hex, options: Permit2Options): { signature: Hex; deployment?: { factory: Address; data: Hex } } | Rejection {
  const wrapped = unwrapErc6492(signature)
  if (!wrapped) return { signature }
  if (!options.erc6492Factories.has(wrapped.factory.toLowerCase())) {
    return { reason: EVM_REJECTION.factoryNotAllowed, message: `ERC-6492 factory ${wrapped.factory} is not allowed` }
  }
  return { signature: wrapped.signature, deployment: { factory: wrapped.factory, data: wrapped.data } }
}


/**
 * The offline checks, in the official facilitator's order and with its codes: spender, recipient,
 * deadline, validAfter, amount, token, then the gas-sponsoring extension (see gasSponsoringPermit);
 * the signature is recovered here and, when it does not recover to the payer, left to the
 * wallet's ERC-1271 check.
 */
export async function preparePermit2(ctx: PaymentContext, runtime: NetworkRuntime, options: Permit2Options, payload: Permit2Payload | Rejection): Promise<PreparedPermit2 | Rejection> {
  if ('reason' in payload) return payload
  const admission = permit2FieldChecks(ctx, runtime, payload, options, { proxy: X402_EXACT_PERMIT2_PROXY, scheme: 'exact', amount: ctx.amount, amountName: 'the required amount' })
  if ('reason' in admission) return admission
  const signed = await signedPermit(ctx, payload, options, admission, payload.amount, (p) => hashPermit2Witness(runtime.chainId, p))
  if ('reason' in signed) return signed
  return { ...signed, settleCalldata: exactSettleCalldata(signed.payload, signed.permit2612) }
}

/**
 * The checks after the fields, the same for exact and upto: the gas-sponsoring permit, the ERC-6492
 * envelope (unwrapped: Permit2 gets the inner signature), the digest (`digestOf`: the witness's
 * typed data) and whether the signature recovers to the payer (a wallet's is proven on chain).
 * `admission` is the asset policy's answer (see permit2FieldChecks), `charged` what the proxy call
 * moves to `payTo` (a token outside the known table must be proven to credit exactly that).
 */
export async function signedPermit<P extends Permit2Payload>(
  ctx: PaymentContext,
  payload: P,
  options: Permit2Options,
  admission: AssetAdmission,
  charged: bigint,
  digestOf: (signed: P) => Hex,
): Promise<(Omit<PreparedPermit2, 'settleCalldata' | 'proxy'> & { readonly payload: P }) | Rejection> {
  const permit2612 = sponsoringPermitOf(ctx, payload, options)
  if (permit2612 && 'reason' in permit2612) return permit2612
  const unwrapped = permit2SignatureOf(payload.signature, options)
  if ('reason' in unwrapped) return unwrapped
  const { deployment } = unwrapped
  const signed: P = deployment ? { ...payload, signature: unwrapped.signature } : payload
  const digest = digestOf(signed)
  // A wallet's signature (an ERC-6492 envelope's inner one) is proven by the wallet alone.
  const signer = deployment ? undefined : await recoverPermit2Signer(digest, signed.signature)
  const payee = payeeCreditOf(admission, signed.from, signed.to, charged)
  return {
    payload: signed,
    payer: signed.from,
    asset: admission.asset,
    ...(payee ? { payee } : {}),
    digest,
    recovered: signer !== undefined && sameAddress(signer, signed.from),
    ...(deployment ? { deployment } : {}),
    ...(permit2612 ? { permit2612 } : {}),
  }
}

/** The extension's permit for this Permit2 authorization (see gasSponsoringPermit), checked now. */
function sponsoringPermitOf(ctx: PaymentContext, payload: Permit2Payload, options: Permit2Options): Eip2612Permit | Rejection | undefined {
  return gasSponsoringPermit(ctx, {
    payer: payload.from,
    asset: ctx.asset,
    permittedAmount: payload.amount,
    nowSeconds: options.nowSeconds(),
    settleMarginSeconds: options.settleMarginSeconds,
  })
}

/** The proxy's struct of an EIP-2612 permit. */
export const permit2612Arg = (permit: Eip2612Permit) => ({ value: permit.value, deadline: permit.deadline, r: permit.r, s: permit.s, v: permit.v })

/** Calldata of the exact proxy's `settle`, or `settleWithPermit` when the payment carries an EIP-2612 permit. */
export function exactSettleCalldata(payload: Permit2Payload, permit2612?: Eip2612Permit): Hex {
  // The common shape is written word by word (see calldata.ts); the rarer one with a permit goes through viem.
  if (!permit2612) return exactProxySettleCalldata(payload)
  const permit = { permitted: { token: payload.token, amount: payload.amount }, nonce: payload.nonce, deadline: payload.deadline }
  const witness = { to: payload.to, validAfter: payload.validAfter }
  return encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'settleWithPermit', args: [permit2612Arg(permit2612), permit, payload.from, witness, payload.signature] })
}

/** Settle's clock check of a verified payment: the Permit2 window, and the deadline of its EIP-2612 permit. */
export function preparedWindow(payment: PreparedPermit2, options: Permit2Options): Rejection | undefined {
  const window = permit2Window(payment.payload, options)
  if (window || !payment.permit2612) return window
  return permitDeadlineRejection(payment.permit2612.deadline, options.nowSeconds(), options.settleMarginSeconds)
}

const S_MASK = (1n << 255n) - 1n

/**
 * The key that signed a Permit2 digest, as Permit2's SignatureVerification reads a signature for an
 * account without code: 65 bytes (r, s, v), or 64 bytes in the compact form of EIP-2098 (r, vs, the
 * parity in the top bit of s); `undefined` for any other length (left to the wallet's ERC-1271 check).
 * The signature settle sends is the payer's own bytes, which Permit2 takes in either form.
 */
async function recoverPermit2Signer(digest: Hex, signature: Hex): Promise<Address | undefined> {
  if (signature.length === 132) return recoverAuthorizationSigner(digest, signature)
  if (signature.length !== 130) return undefined
  const vs = BigInt(`0x${signature.slice(66, 130)}`)
  const s = (vs & S_MASK).toString(16).padStart(64, '0')
  const v = vs >> 255n === 0n ? '1b' : '1c'
  return recoverAuthorizationSigner(digest, `0x${signature.slice(2, 66)}${s}${v}`)
}

/** What a Permit2 payment of one scheme must name: the scheme's proxy as spender, and the amount it permits. */
export interface Permit2Expectation {
  readonly proxy: Address
  readonly scheme: 'exact' | 'upto'
  /** The amount `permitted.amount` must equal (exact: the price; upto: the maximum), and how messages name it. */
  readonly amount: bigint
  readonly amountName: string
  /** A check of the scheme's own witness fields, run where the official facilitator runs it: after the recipient (upto: `witness.facilitator`). */
  readonly witness?: () => Rejection | undefined
}

/**
 * The offline field checks of both Permit2 schemes (and so of the EIP-2612 sponsoring path): the
 * requirements' addresses, the asset policy (see admitAsset: the same rule and code as for EIP-3009
 * payments), then in the official facilitator's order spender, recipient, the scheme's witness check,
 * the clock (see permit2Window), amount, token. Answers the policy's admission of the asset when all pass.
 */
export function permit2FieldChecks(
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  payload: Permit2Payload,
  options: Permit2Options,
  expected: Permit2Expectation,
): AssetAdmission | Rejection {
  if (!isAddress(ctx.asset, { strict: true }) || !isAddress(ctx.payTo, { strict: true })) {
    return { reason: EVM_REJECTION.invalidRequirements, message: 'paymentRequirements.asset and payTo must be valid EVM addresses' }
  }
  const admission = admitAsset(runtime, ctx.asset)
  if ('reason' in admission) return admission
  if (!sameAddress(payload.spender, expected.proxy)) {
    return { reason: PERMIT2_REJECTION.spender, message: `permit2Authorization.spender must be the x402 ${expected.scheme} Permit2 proxy ${expected.proxy}` }
  }
  if (!sameAddress(payload.to, ctx.payTo)) {
    return { reason: PERMIT2_REJECTION.recipientMismatch, message: 'permit2Authorization.witness.to differs from paymentRequirements.payTo' }
  }
  const witness = expected.witness?.()
  if (witness) return witness
  const window = permit2Window(payload, options)
  if (window) return window
  // Exact equality: a larger permit would let the proxy move more than the price (upto: than the maximum).
  if (payload.amount !== expected.amount) {
    return { reason: PERMIT2_REJECTION.amountMismatch, message: `permit2Authorization.permitted.amount ${payload.amount} differs from ${expected.amountName} ${expected.amount}` }
  }
  if (!sameAddress(payload.token, ctx.asset)) {
    return { reason: PERMIT2_REJECTION.tokenMismatch, message: 'permit2Authorization.permitted.token differs from paymentRequirements.asset' }
  }
  return admission
}

/**
 * The checks whose answer changes with time (the official order puts the clock between recipient
 * and amount; settle re-runs the clock alone, see preparedWindow).
 */
export function permit2Window(payload: Permit2Payload, options: Permit2Options): Rejection | undefined {
  const now = options.nowSeconds()
  if (payload.deadline < now + BigInt(options.settleMarginSeconds)) {
    return { reason: PERMIT2_REJECTION.deadlineExpired, message: `permit2Authorization.deadline ${payload.deadline} has passed or leaves less than ${options.settleMarginSeconds} s to settle` }
  }
  if (payload.validAfter > now) {
    return { reason: PERMIT2_REJECTION.notYetValid, message: `permit2Authorization.witness.validAfter ${payload.validAfter} is in the future` }
  }
  return undefined
}
