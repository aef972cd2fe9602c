import { parseSignature, type Address, type Hex } from 'viem'
import { unwrapErc6492 } from '../codec/erc6492.js'
import type { PaymentContext } from '../../core/adapter.js'
import { admitAsset, payeeCreditOf, type AdmittedAsset, type PayeeCredit } from '../asset-policy.js'
import { isHexAddress, parseExactEvmPayload, type ExactEvmPayload } from './authorization.js'
import { transferWithAuthorizationBytesCalldata, transferWithAuthorizationVrsCalldata } from '../codec/calldata.js'
import type { NetworkRuntime } from '../chain/network-runtime.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'
import { recoverAuthorizationSigner } from '../crypto/recover-signer.js'
import { hashAuthorization, type TokenDomain } from '../codec/typed-data.js'

/**
 * How the payer's signature is proven, which decides how settle prices its gas: `eoa` a
 * plain account (a fixed limit on a known token), `erc1271` a deployed smart wallet, `erc6492` a
 * wallet a factory deploys (both by an estimate: the wallet's own check runs at our expense).
 * `unproven` is a 65-byte signature left for the chain check (see `checkChainState`), which
 * turns it into `eoa` or `erc1271`. The calldata settle sends is `transferCalldata`: the
 * (v,r,s) overload for a plain signature, also for a smart wallet whose token took it.
 */
export type SignatureKind = 'eoa' | 'erc1271' | 'erc6492' | 'unproven'

/** A payment that passed every offline check, ready for the chain. */
export interface PreparedPayment {
  readonly payload: ExactEvmPayload
  readonly payer: Address
  /** The token, admitted by the network's asset policy (see admitAsset). */
  readonly asset: AdmittedAsset
  /**
   * The token is in the known table (built-in USDC or the configured `assets`): trusted to check
   * signatures, and its payments from plain accounts go with the fixed `gasLimit`. Any other token
   * is priced by an estimate (its transfer may cost any gas).
   */
  readonly knownToken: boolean
  readonly domain: TokenDomain
  /** The EIP-712 digest the token will check. */
  readonly digest: Hex
  readonly kind: SignatureKind
  /** The signature the token receives (unwrapped from an ERC-6492 envelope). */
  readonly signature: Hex
  /** ERC-6492: the factory call that deploys the payer's wallet. */
  readonly deployment: { readonly factory: Address; readonly data: Hex } | undefined
  /** Calldata of the exact transferWithAuthorization call settle sends (and verify simulates). */
  readonly transferCalldata: Hex
  /**
   * A token outside the known table: what its transfer must credit `payTo`, proven by verify's
   * simulation and by settle's before it sends (see probePayeeCredit). `undefined` for a known token.
   */
  readonly payee: PayeeCredit | undefined
}

export interface PrepareOptions {
  /**
   * Leave a plain 65-byte signature for a known token (the built-in table or the configured
   * `assets`) `unproven` instead of recovering its signer here: the chain check that follows
   * proves it for less (see `checkChainState`). Only for a caller that runs that check before
   * anything is sent.
   */
  readonly deferSignerCheck?: boolean
  readonly settleMarginSeconds: number
  /** Lower-cased allowed ERC-6492 factories. */
  readonly erc6492Factories: ReadonlySet<string>
  readonly nowSeconds: () => bigint
}

/**
 * Runs every check that needs no RPC, cheapest first, and returns the first
 * failure or the prepared payment. The core already matched version, scheme,
 * network and (v2) `accepted` against the requirements.
 */
export async function preparePayment(
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  options: PrepareOptions,
  /** The payload as `parseExactEvmPayload` reads it, when the caller already has it. */
  payload: ExactEvmPayload | Rejection = parseExactEvmPayload(ctx.payload.payload),
): Promise<PreparedPayment | Rejection> {
  if ('reason' in payload) return payload
  const { authorization } = payload

  // exactEvm already checked the checksums (viem's strict isAddress); this narrows the types for direct callers too.
  if (!isHexAddress(ctx.asset) || !isHexAddress(ctx.payTo)) {
    return reject(EVM_REJECTION.invalidRequirements, 'paymentRequirements.asset and payTo must be EVM addresses')
  }
  if (authorization.asset !== undefined && !sameAddress(authorization.asset, ctx.asset)) {
    return reject(EVM_REJECTION.assetMismatch, 'authorization.asset differs from paymentRequirements.asset')
  }
  // The asset policy every EVM payment passes, whatever its transfer method.
  const admission = admitAsset(runtime, ctx.asset)
  if ('reason' in admission) return admission
  const { asset, known } = admission
  const extra = ctx.requirements.extra
  const name = typeof extra?.name === 'string' ? extra.name : known?.eip712?.name
  const version = typeof extra?.version === 'string' ? extra.version : known?.eip712?.version
  if (name === undefined || version === undefined) {
    return reject(EVM_REJECTION.missingDomain, 'paymentRequirements.extra must carry the token\'s EIP-712 name and version')
  }
  // A known token's name is known: a wrong extra.name can only make a signature the token refuses.
  if (known?.eip712 !== undefined && name !== known.eip712.name) {
    return reject(EVM_REJECTION.tokenNameMismatch, `paymentRequirements.extra.name ${JSON.stringify(name)} is not the token's EIP-712 name`)
  }
  if (!sameAddress(authorization.to, ctx.payTo)) {
    return reject(EVM_REJECTION.recipientMismatch, 'authorization.to differs from paymentRequirements.payTo')
  }
  // Exact equality: the scheme is `exact`, and a larger authorization would move more than the price.
  if (authorization.value !== ctx.amount) {
    return reject(EVM_REJECTION.valueMismatch, `authorization.value ${authorization.value} differs from the required amount ${ctx.amount}`)
  }
  const window = checkValidityWindow(payload, options)
  if (window) return window

  const domain: TokenDomain = { name, version, chainId: runtime.chainId, verifyingContract: asset }
  const digest = hashAuthorization(domain, authorization)
  // Only a token this facilitator knows is trusted to check the signature in the simulation.
  const signature = await classifySignature(payload, digest, options, options.deferSignerCheck === true && known !== undefined)
  if ('reason' in signature) return signature

  return {
    payload,
    payer: authorization.from,
    asset,
    knownToken: known !== undefined,
    domain,
    digest,
    ...signature,
    transferCalldata: transferCalldata(payload, signature.kind, signature.signature),
    payee: payeeCreditOf(admission, authorization.from, ctx.payTo, authorization.value),
  }
}

/**
 * The only checks of `preparePayment` whose answer changes with time: the
 * authorization must be valid now and stay valid for `settleMarginSeconds`.
 * Settle re-runs them on a payment its verify already prepared.
 */
export function checkValidityWindow(payload: ExactEvmPayload, options: PrepareOptions): Rejection | undefined {
  const { validAfter, validBefore } = payload.authorization
  const now = options.nowSeconds()
  if (validAfter > now) {
    return reject(EVM_REJECTION.validAfter, 'the authorization is not valid yet (validAfter is in the future)')
  }
  if (validBefore < now + BigInt(options.settleMarginSeconds)) {
    return reject(
      EVM_REJECTION.validBefore,
      `the authorization expires too soon (validBefore must be at least ${options.settleMarginSeconds}s ahead)`,
    )
  }
  return undefined
}

/** `defer`: leave a plain signature `unproven` for the chain check (see `PrepareOptions.deferSignerCheck`). */
async function classifySignature(payload: ExactEvmPayload, digest: Hex, options: PrepareOptions, defer: boolean) {
  const wrapped = unwrapErc6492(payload.signature)
  if (wrapped) {
    if (!options.erc6492Factories.has(wrapped.factory.toLowerCase())) {
      return reject(EVM_REJECTION.factoryNotAllowed, `ERC-6492 factory ${wrapped.factory} is not allowed`)
    }
    return { kind: 'erc6492' as const, signature: wrapped.signature, deployment: { factory: wrapped.factory, data: wrapped.data } }
  }
  if (defer && isPlainSignature(payload.signature)) {
    return { kind: 'unproven' as const, signature: payload.signature, deployment: undefined }
  }
  return { kind: await kindByRecovery(digest, payload.signature, payload.authorization.from), signature: payload.signature, deployment: undefined }
}

/**
 * `eoa` when the signature recovers to the payer offline; otherwise `erc1271`: maybe a
 * deployed smart wallet, which only the chain can tell.
 */
export async function kindByRecovery(digest: Hex, signature: Hex, payer: Address): Promise<'eoa' | 'erc1271'> {
  const recovered = await recoverAuthorizationSigner(digest, signature)
  return recovered !== undefined && sameAddress(recovered, payer) ? 'eoa' : 'erc1271'
}

/** 65 bytes with a `v` the (v,r,s) overload can carry: the only shape a plain account signs. */
function isPlainSignature(signature: Hex): boolean {
  if (signature.length !== 132 || !/^0x[0-9a-fA-F]*$/.test(signature)) return false
  const v = Number.parseInt(signature.slice(130), 16)
  return v === 0 || v === 1 || v === 27 || v === 28
}

/** The (v,r,s) overload for a plain account's signature (or one still unproven), the `bytes` overload for smart wallets. */
export function transferCalldata(payload: ExactEvmPayload, kind: SignatureKind, signature: Hex): Hex {
  if (kind === 'eoa' || kind === 'unproven') {
    const { r, s, yParity } = parseSignature(signature)
    return transferWithAuthorizationVrsCalldata(payload.authorization, yParity + 27, r, s)
  }
  return transferWithAuthorizationBytesCalldata(payload.authorization, signature)
}

/** Two EVM addresses are one account whatever their casing (checksums vary). */
export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase()
}

function reject(reason: string, message: string): Rejection {
  return { reason, message }
}
