/**
 * Stable snake_case codes of payment rejections shared by every scheme. Codes
 * follow the reference x402 implementations where one exists. Scheme adapters
 * add their own (`invalid_exact_evm_*`, `invalid_exact_svm_*`).
 */
export const REJECTION = {
  /** The protocol version is neither 1 nor 2. */
  invalidVersion: 'invalid_x402_version',
  /** No adapter serves this scheme. */
  unsupportedScheme: 'unsupported_scheme',
  /** No adapter serves this network (or scheme on this network). */
  invalidNetwork: 'invalid_network',
  /** The payload names another scheme than the requirements. */
  schemeMismatch: 'invalid_scheme',
  /** The payload names another network than the requirements. */
  networkMismatch: 'network_mismatch',
  /** v2: the payload's `accepted` differs from the requirements. */
  acceptedMismatch: 'accepted_requirements_mismatch',
  /** A before-hook refused the request. */
  rejectedByPolicy: 'rejected_by_policy',
  /** Settle: the payment failed verification. */
  invalidPayload: 'invalid_payload',
  /**
   * Settle: a different payment already claimed this payment's replay domain (the same EIP-3009
   * authorization nonce, the same Permit2 owner nonce whatever the scheme, the same Solana
   * message); `transaction` names that payment's settlement when it has one. A repeat of the
   * same payment is not a duplicate: it gets the answer of the call that settled it.
   */
  duplicateSettlement: 'duplicate_settlement',
  /** Settle: the payment is being settled by another call that has not finished. */
  settlementInProgress: 'settlement_in_progress',
  /** Settle: the transaction was sent but not confirmed within the bound; `transaction` is kept. */
  settlementPending: 'settlement_pending',
  /** Settle: the transaction was mined and reverted / failed; `transaction` is kept. */
  transactionFailed: 'transaction_failed',
  /**
   * An adapter's `resume` only, never an answer: the journaled transaction never reached the chain
   * and never can (its signer nonce went to another transaction). The core checks the payment
   * again and, while it is still unspent and valid, sends it anew under the same claim.
   */
  transactionDropped: 'transaction_dropped',
  /**
   * Settle: the payer's balance, less what its settlements in flight hold, does not cover this
   * payment (payments racing from one payer); nothing was sent.
   */
  insufficientFunds: 'insufficient_funds',
  /**
   * Settle: the chain refused or reverted this payer's settlements after they passed verify, as
   * often as the failure budget allows; the payer is refused until the window passes.
   */
  payerSuspended: 'payer_suspended',
} as const

export type RejectionCode = (typeof REJECTION)[keyof typeof REJECTION]

/** Settle answers whose transaction may still land: neither a success nor a failure yet. */
export function isPendingSettlement(errorReason: string | undefined): boolean {
  return errorReason === REJECTION.settlementPending || errorReason === REJECTION.settlementInProgress
}
