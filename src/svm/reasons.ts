/**
 * Rejection codes of the Solana `exact` adapter. Each is a stable snake_case
 * string; names follow the reference x402 implementation where it has one for
 * the same rule, so clients that switch facilitators see the same codes.
 */
export const SVM_REASON = {
  /** `extra.feePayer` or `extra.memo` is not a string, or the decoded transaction exceeds the Solana size limit. */
  invalidPayload: 'invalid_exact_svm_payload_transaction',
  /** `payload.transaction` is missing, not base64, or does not decode to a Solana transaction. */
  undecodable: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
  /** A transaction format other than legacy or v0 (v1 messages carry their own fee configuration). */
  unsupportedVersion: 'invalid_exact_svm_payload_transaction_version',
  /** The transaction's fee payer is not one of this facilitator's fee payers. */
  feePayerNotManaged: 'invalid_exact_svm_fee_payer_not_managed_by_facilitator',
  /** The fee payer differs from `paymentRequirements.extra.feePayer`. */
  feePayerMismatch: 'invalid_exact_svm_fee_payer_mismatch',
  /** The fee payer appears in an instruction's accounts (in any role): it could be made to pay or sign for something. */
  feePayerInInstruction: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
  /** An instruction of a program outside the allowlist. */
  programNotAllowed: 'invalid_exact_svm_payload_transaction_program_not_allowed',
  /** Address lookup tables hide accounts from static checks. */
  addressLookupTable: 'invalid_exact_svm_payload_transaction_address_lookup_table',
  /** More (or fewer) signers than the fee payer and the transfer authority. */
  excessiveSigners: 'invalid_exact_svm_payload_excessive_signers',
  /** A second compute-unit-limit instruction. */
  duplicateComputeLimit: 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
  /** A second compute-unit-price instruction. */
  duplicateComputePrice: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
  /** A compute-budget instruction other than limit and price (heap frame, data size limit, malformed). */
  computeBudgetNotAllowed: 'invalid_exact_svm_payload_transaction_instructions_compute_budget_instruction',
  /** The compute-unit limit is above the configured cap. */
  computeLimitTooHigh: 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
  /** The compute-unit price is above the configured cap. */
  computePriceTooHigh: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
  /** limit x price (the priority fee the fee payer pays) is above the configured cap. */
  priorityFeeTooHigh: 'invalid_exact_svm_payload_transaction_priority_fee_too_high',
  /** A token-program instruction other than TransferChecked (Transfer, Approve, CloseAccount, ...). */
  tokenInstructionNotAllowed: 'invalid_exact_svm_payload_transaction_token_instruction_not_allowed',
  /** No TransferChecked instruction. */
  noTransfer: 'invalid_exact_svm_payload_no_transfer_instruction',
  /** More than one TransferChecked instruction. */
  multipleTransfers: 'invalid_exact_svm_payload_multiple_transfer_instructions',
  /** The transferred mint differs from the required asset. */
  mintMismatch: 'invalid_exact_svm_payload_mint_mismatch',
  /** The required asset is not an allowed mint of the network (only with `restrictAssets`). */
  mintNotAllowed: 'invalid_exact_svm_payload_mint_not_allowed',
  /** The destination is not the associated token account of payTo for the mint and token program. */
  recipientMismatch: 'invalid_exact_svm_payload_recipient_mismatch',
  /** The transferred amount differs from the required amount. */
  amountMismatch: 'invalid_exact_svm_payload_amount_mismatch',
  /**
   * The mint charges a transfer fee the operator allows (`allowedMintExtensions: ['transferFee']`), and
   * the amount that reaches payTo after the fee is not the required amount.
   */
  amountAfterFeeMismatch: 'invalid_exact_svm_payload_amount_after_transfer_fee_mismatch',
  /** The transfer's source is its destination: the payer pays itself and the fee payer pays for nothing. */
  transferToSelf: 'invalid_exact_svm_payload_transfer_to_self',
  /** The requirements carry `extra.memo` and the transaction has no single memo equal to it. */
  memoMismatch: 'invalid_exact_svm_payload_memo_mismatch',
  /** The mint account does not exist or belongs to another program than the transfer's. */
  mintAccountInvalid: 'invalid_exact_svm_payload_mint_account_invalid',
  /** The Token-2022 mint account is not a mint the program would load (size, account type or extension data malformed). */
  mintUnparseable: 'invalid_exact_svm_mint_unparseable',
  /** The Token-2022 mint carries an extension type this facilitator does not know, so cannot judge. */
  mintExtensionUnknown: 'invalid_exact_svm_mint_extension_unknown',
  /** The mint charges a transfer fee on this amount (older or newer schedule): payTo would receive less. */
  mintTransferFee: 'invalid_exact_svm_mint_transfer_fee',
  /** The mint has a permanent delegate, which can take the paid tokens back from payTo. */
  mintPermanentDelegate: 'invalid_exact_svm_mint_permanent_delegate',
  /** The mint is pausable (or paused): its authority can block the transfer between verify and settle. */
  mintPausable: 'invalid_exact_svm_mint_pausable',
  /** The mint is non-transferable: no transfer of it can succeed. */
  mintNonTransferable: 'invalid_exact_svm_mint_non_transferable',
  /** New token accounts of the mint start frozen (default account state): transfers depend on the freeze authority. */
  mintDefaultAccountStateFrozen: 'invalid_exact_svm_mint_default_account_state_frozen',
  /** The mint has a transfer hook (or an authority that can set one): a program of the issuer's decides the transfer. */
  mintTransferHook: 'invalid_exact_svm_mint_transfer_hook',
  /** The source token account does not exist (or is not a token account of this mint). */
  sourceAccountMissing: 'invalid_exact_svm_payload_source_token_account_missing',
  /** The destination token account does not exist: the facilitator never pays to create it. */
  destinationAccountMissing: 'invalid_exact_svm_payload_destination_token_account_missing',
  /** The source token account holds less than the amount. */
  insufficientFunds: 'insufficient_funds',
  /** The chain already knows this transaction (replay). */
  alreadyProcessed: 'invalid_exact_svm_payload_transaction_already_processed',
  /** The transaction's blockhash is no longer valid. */
  blockhashExpired: 'invalid_exact_svm_payload_transaction_blockhash_expired',
  /** A signature in the transaction does not verify. */
  signatureInvalid: 'invalid_exact_svm_payload_signature_invalid',
  /** The simulation of the payer-signed transaction (before the fee payer signs) failed. */
  simulationFailed: 'invalid_exact_svm_transaction_simulation_failed',
  /** Settle: the transaction was sent and its blockhash expired before it landed; it can never land. */
  transactionExpired: 'invalid_exact_svm_transaction_expired',
} as const

export type SvmReason = (typeof SVM_REASON)[keyof typeof SVM_REASON]
