import type { Address } from 'viem'
import type { KnownAsset } from '../networks/assets.js'
import type { NetworkRuntime } from './chain/network-runtime.js'
import { EVM_REJECTION, type Rejection } from './reasons.js'

declare const admitted: unique symbol

/**
 * A token address that passed the network's asset policy. Only {@link admitAsset} makes one, and
 * every prepared EVM payment (`PreparedPayment`, `PreparedPermit2`) carries its asset as one: no
 * payment reaches a chain check, a simulation or a settlement without passing the policy, whatever
 * its transfer method (EIP-3009, Permit2 exact, upto, the EIP-2612 sponsoring path, or one added later).
 */
export type AdmittedAsset = Address & { readonly [admitted]: true }

/** The asset policy's answer for one payment's token. */
export interface AssetAdmission {
  readonly asset: AdmittedAsset
  /**
   * The token's entry in the known table (the built-in USDC or the network's configured `assets`):
   * the operator vouches for it. `undefined` for any other token, whose payments must prove by
   * simulation what reaches the payee (see {@link payeeCreditOf}).
   */
  readonly known: KnownAsset | undefined
}

/**
 * The asset policy of every EVM payment, in one place: with `restrictAssets`, only tokens in the
 * known table are accepted (`invalid_exact_evm_payload_asset_not_allowed`); without it any token
 * is, and a token outside the table has its payee's credit proven before anything is sent.
 */
export function admitAsset(runtime: Pick<NetworkRuntime, 'assets' | 'restrictAssets' | 'network'>, asset: Address): AssetAdmission | Rejection {
  const known = runtime.assets.find(runtime.network.caip2, asset)
  if (runtime.restrictAssets && !known) {
    return { reason: EVM_REJECTION.assetNotAllowed, message: `asset ${asset} is not accepted on ${runtime.network.caip2}` }
  }
  return { asset: asset as AdmittedAsset, known }
}

/**
 * What a settlement in a token outside the known table must be proven to credit, by a simulation
 * of the exact calls settle sends (see `probePayeeCredit`): `payTo`'s balance of `token` rises by
 * exactly `amount`. A fee-on-transfer, rebasing or hook token that delivers less (or more) is
 * refused before anything is sent.
 */
export interface PayeeCredit {
  readonly token: AdmittedAsset
  readonly payTo: Address
  /** The exact rise of `payTo`'s balance: the amount moved, or zero when the payer pays itself. */
  readonly amount: bigint
}

/**
 * The credit a payment of `amount` from `payer` to `payTo` must prove, or `undefined` for a token
 * in the known table (trusted as listed: its payments keep their single-request verify).
 */
export function payeeCreditOf(admission: AssetAdmission, payer: Address, payTo: Address, amount: bigint): PayeeCredit | undefined {
  if (admission.known) return undefined
  return { token: admission.asset, payTo, amount: payer.toLowerCase() === payTo.toLowerCase() ? 0n : amount }
}
