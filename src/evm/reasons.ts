import type { Verdict } from '../core/adapter.js'
import type { VerifyResponse } from '../schemas/messages.js'

/**
 * Rejection codes of the EVM `exact` scheme. Names follow the reference x402
 * implementations where one exists, so clients that switch on them keep working.
 * Shared codes (`invalid_payload`, `transaction_failed`, `settlement_pending`)
 * come from the core's REJECTION table.
 */
export const EVM_REJECTION = {
  /** The payload is not an EIP-3009 authorization (bad address, nonce, number or signature bytes). */
  invalidPayload: 'invalid_payload',
  /** The requirements' asset or payTo is not an EVM address. */
  invalidRequirements: 'invalid_payment_requirements',
  /** `authorization.asset` (SPEC.md's reduced form) names another token than the requirements. */
  assetMismatch: 'invalid_exact_evm_payload_asset_mismatch',
  /** The asset is not in the network's allow-list (only with `restrictAssets`). */
  assetNotAllowed: 'invalid_exact_evm_payload_asset_not_allowed',
  /** Neither `extra.name`/`extra.version` nor a configured asset give the token's EIP-712 domain. */
  missingDomain: 'invalid_exact_evm_payload_missing_eip712_domain',
  /** `extra.name` is not the EIP-712 name of a token this facilitator knows (the official facilitator's code). */
  tokenNameMismatch: 'invalid_exact_evm_token_name_mismatch',
  /** `authorization.to` is not the requirements' payTo. */
  recipientMismatch: 'invalid_exact_evm_payload_recipient_mismatch',
  /** `authorization.value` is not exactly the required amount. */
  valueMismatch: 'invalid_exact_evm_payload_authorization_value',
  /** `validAfter` lies in the future. */
  validAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  /** `validBefore` has passed or leaves less than the settle margin. */
  validBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  /** The signature is not the payer's (EOA recovery, ERC-1271 and ERC-6492 all failed). */
  signature: 'invalid_exact_evm_payload_signature',
  /** An ERC-6492 wrapper names a factory outside the configured allow-list. */
  factoryNotAllowed: 'invalid_exact_evm_payload_eip6492_factory_not_allowed',
  /** The payer is an undeployed smart wallet and this facilitator does not deploy wallets. */
  undeployedWallet: 'invalid_exact_evm_payload_undeployed_smart_wallet',
  /** The asset does not answer `balanceOf` and `authorizationState` with a 32-byte word (no code there, or not an EIP-3009 token). */
  assetNotAToken: 'invalid_exact_evm_asset_not_a_token',
  /** The payer's token balance is below the value. */
  insufficientFunds: 'insufficient_funds',
  /** The token reports this authorization nonce as used or canceled. */
  nonceUsed: 'invalid_exact_evm_nonce_already_used',
  /** A simulation of the exact transferWithAuthorization call settle would send reverted. */
  simulationFailed: 'invalid_exact_evm_transaction_simulation_failed',
  /** A smart wallet's settlement would need more gas than `maxSettlementGas` (an expensive `isValidSignature`); nothing was sent. */
  settlementGasTooHigh: 'invalid_exact_evm_settlement_gas_too_high',
  /**
   * A token outside the known table would not credit `payTo` with exactly the amount (a fee-on-transfer,
   * rebasing or hook token; the same code for EIP-3009, Permit2 exact and upto): a simulation of the exact
   * calls settle sends, run as its signer, read `payTo`'s balance before and after them. Nothing was sent.
   */
  payeeAmountMismatch: 'invalid_exact_evm_payee_amount_mismatch',
} as const

export type EvmRejectionCode = (typeof EVM_REJECTION)[keyof typeof EVM_REJECTION]

/** A payment rejection: a stable code and a message for humans. */
export interface Rejection {
  readonly reason: string
  readonly message: string
}

/** A verify's answer for a rejected payment, naming the payer when the payload names one. */
export function invalid(rejection: Rejection, payer: string | undefined): VerifyResponse {
  return { isValid: false, invalidReason: rejection.reason, invalidMessage: rejection.message, ...(payer ? { payer } : {}) }
}

/** A verify's verdict for a rejected payment: nothing for settle. */
export function refused(rejection: Rejection, payer: string | undefined): Verdict<never> {
  return { response: invalid(rejection, payer) }
}

/**
 * Rejection codes of `exact` payments through Permit2, as the official x402 facilitator names
 * them (`permit2_allowance_required` is the one its resource server turns into HTTP 412).
 */
export const PERMIT2_REJECTION = {
  /** `spender` is not the x402 exact Permit2 proxy. */
  spender: 'invalid_permit2_spender',
  /** `witness.to` is not the requirements' payTo. */
  recipientMismatch: 'invalid_permit2_recipient_mismatch',
  /** `deadline` has passed or leaves less than the settle margin. */
  deadlineExpired: 'permit2_deadline_expired',
  /** `witness.validAfter` lies in the future. */
  notYetValid: 'permit2_not_yet_valid',
  /** `permitted.amount` is not exactly the required amount. */
  amountMismatch: 'permit2_amount_mismatch',
  /** `permitted.token` is not the requirements' asset. */
  tokenMismatch: 'permit2_token_mismatch',
  /** The asset does not answer ERC-20 reads (no contract there). */
  assetNotDeployed: 'asset_not_deployed_contract',
  /** Neither the payer's key (ecrecover) nor its wallet (ERC-1271) signed the permit. */
  signature: 'invalid_permit2_signature',
  /** Permit2 or the x402 proxy has no code on this chain. */
  proxyNotDeployed: 'permit2_proxy_not_deployed',
  /** Permit2's nonce bit for this permit is set: settled already, or invalidated by the payer (our own code: the official facilitator only sees it as a failed simulation). */
  nonceUsed: 'permit2_nonce_already_used',
  /** The payer's token balance is below the amount. */
  insufficientBalance: 'permit2_insufficient_balance',
  /** The payer's allowance to Permit2 is below the amount: it must approve Permit2 first. */
  allowanceRequired: 'permit2_allowance_required',
  /** A simulation of the proxy call settle sends reverted. */
  simulationFailed: 'permit2_simulation_failed',
  /**
   * The payload carries a signed `erc20ApprovalGasSponsoring` transaction: it would have this facilitator
   * broadcast, and pay the gas of, a transaction the payer wrote. Not served (the declaration alone, echoed
   * from a 402 without a signed transaction, is ignored).
   */
  erc20ApprovalNotSupported: 'erc20_approval_gas_sponsoring_not_supported',
} as const

/**
 * Rejection codes of the `eip2612GasSponsoring` extension (an EIP-2612 `permit` of the token to
 * Permit2 that the proxy's `settleWithPermit` runs before the transfer), as the official x402
 * facilitator names them.
 */
export const EIP2612_REJECTION = {
  /** `extensions.eip2612GasSponsoring.info` is not the signed permit (a field missing or malformed, a signature that is not 65 bytes, a version other than "1"). */
  invalidFormat: 'invalid_eip2612_extension_format',
  /** `info.from` is not the payer of the Permit2 authorization. */
  fromMismatch: 'eip2612_from_mismatch',
  /** `info.asset` is not the requirements' asset. */
  assetMismatch: 'eip2612_asset_mismatch',
  /** `info.spender` is not the canonical Permit2. */
  spenderNotPermit2: 'eip2612_spender_not_permit2',
  /** `info.deadline` has passed or leaves less than the settle margin. */
  deadlineExpired: 'eip2612_deadline_expired',
  /** `info.amount` is not `permitted.amount` (the proxy would revert `Permit2612AmountMismatch`; the official code of that revert). */
  amountMismatch: 'permit2_2612_amount_mismatch',
} as const

/** Rejection codes of the `upto` scheme (through Permit2), as the official x402 facilitator names them. */
export const UPTO_REJECTION = {
  /** `witness.facilitator` is not one of this facilitator's signers on the network. */
  facilitatorMismatch: 'upto_facilitator_mismatch',
  /** The settle request's amount is above the permitted maximum (refused before anything is sent). */
  settlementExceedsAmount: 'invalid_upto_evm_payload_settlement_exceeds_amount',
  /** The simulation of the upto settlement (the proxy call as it will be sent) failed. */
  simulationFailed: 'invalid_upto_evm_transaction_failed',
} as const
