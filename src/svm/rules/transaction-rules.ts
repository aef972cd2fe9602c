import { type Address, type Blockhash, type Transaction, type TransactionWithinSizeLimit } from '@solana/kit'
import { COMPUTE_BUDGET_PROGRAM_ADDRESS } from '@solana-program/compute-budget'
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import type { AssociatedTokenAccountOf } from './associated-token-cache.js'
import { SVM_REASON, type SvmReason } from '../reasons.js'
import { isSolanaAddress } from '../codec/base58.js'
import { decodeWireTransaction, TRANSACTION_SIZE_LIMIT, type WireInstruction, type WireTransaction } from '../codec/wire-transaction.js'

/** The Token-2022 program; its TransferChecked layout equals spl-token's. */
export const TOKEN_2022_PROGRAM_ADDRESS = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb' as Address
/** The SPL Memo program (v2). */
export const MEMO_PROGRAM_ADDRESS = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr' as Address
/** Lighthouse, the assertion program wallets (Phantom, Solflare) append to guard users. */
export const LIGHTHOUSE_PROGRAM_ADDRESS = 'L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95' as Address
/** Programs allowed besides ComputeBudget and the token programs, by default. */
export const DEFAULT_ALLOWED_PROGRAMS: readonly Address[] = Object.freeze([MEMO_PROGRAM_ADDRESS, LIGHTHOUSE_PROGRAM_ADDRESS])

/** The runtime's compute-unit limit per instruction when the transaction sets none. */
const DEFAULT_UNITS_PER_INSTRUCTION = 200_000
const MAX_UNITS_PER_TRANSACTION = 1_400_000

/** Caps on what a payment may make the fee payer spend. */
export interface ExactSvmLimits {
  /** Highest compute-unit limit accepted. @default 200_000 */
  maxComputeUnitLimit?: number
  /** Highest compute-unit price accepted, in micro-lamports. @default 5_000_000 */
  maxComputeUnitPrice?: bigint | number
  /**
   * Highest priority fee accepted, in lamports: ceil(limit x price / 1e6). A
   * price cap alone lets a payer raise the limit to multiply the fee.
   * @default 100_000 (0.0001 SOL)
   */
  maxPriorityFeeLamports?: bigint | number
}

export const DEFAULT_LIMITS = Object.freeze({
  maxComputeUnitLimit: 200_000,
  maxComputeUnitPrice: 5_000_000n,
  maxPriorityFeeLamports: 100_000n,
})

/** What the static rules need to know about the facilitator and the payment. */
export interface TransactionRuleInput {
  /** Base64 wire transaction from the payload. */
  readonly transaction: string
  /** Every fee payer this facilitator signs for. */
  readonly feePayers: ReadonlySet<string>
  /** `paymentRequirements.extra.feePayer`, when given. */
  readonly expectedFeePayer: string | undefined
  /** Programs allowed besides ComputeBudget and the token programs. */
  readonly allowedPrograms: ReadonlySet<string>
  readonly limits: { maxComputeUnitLimit: number; maxComputeUnitPrice: bigint; maxPriorityFeeLamports: bigint }
  readonly asset: string
  readonly payTo: string
  readonly amount: bigint
  /** `paymentRequirements.extra.memo`, when given. */
  readonly memo: string | undefined
  /** Derives ATA(payTo) (a cache fits here). @default findAssociatedTokenPda */
  readonly associatedTokenAccount?: AssociatedTokenAccountOf
  /**
   * Token-2022 transfer fees are allowed: a Token-2022 transfer may then move more than `amount`
   * (the fee on top), and the caller checks what reaches payTo once it has read the mint.
   * @default false
   */
  readonly transferFeeAllowed?: boolean
}

/** A payment transaction that passed every static rule. */
export interface CheckedPayment {
  readonly transaction: Transaction & TransactionWithinSizeLimit
  readonly feePayer: Address
  /** The transfer authority: the payer. */
  readonly payer: Address
  readonly source: Address
  readonly destination: Address
  readonly mint: Address
  readonly tokenProgram: Address
  readonly amount: bigint
  readonly blockhash: Blockhash
  readonly computeUnitLimit: number
  readonly computeUnitPrice: bigint
}

/** A broken rule: a stable code and a message for humans. */
export interface RuleViolation {
  readonly reason: SvmReason
  readonly message: string
  readonly payer?: string
}

export type RuleOutcome = { ok: true; payment: CheckedPayment } | ({ ok: false } & RuleViolation)

const violation = (reason: SvmReason, message: string, payer?: string): RuleOutcome => ({
  ok: false,
  reason,
  message,
  ...(payer ? { payer } : {}),
})

/**
 * Applies every rule that needs no chain state to a payment transaction: who
 * pays fees, which programs run, what compute budget it asks for, and that its
 * one transfer moves exactly the required amount of the asset to ATA(payTo).
 * Signatures are not checked here: `exactSvm` checks the payer's beside (verify) or before (settle) its simulation.
 *
 * The central rule is that the fee payer appears in no instruction's accounts:
 * a program can only debit, close onto, or sign with an account an instruction
 * hands it, so a fee payer absent from every instruction can lose nothing but
 * the transaction fee, which the compute-budget caps bound.
 *
 * @example
 * // partial
 * const outcome = await checkPaymentTransaction({ transaction, feePayers: new Set([fp]), ...rest })
 * if (!outcome.ok) console.log(outcome.reason, outcome.message)
 */
export async function checkPaymentTransaction(input: TransactionRuleInput): Promise<RuleOutcome> {
  const transaction = decodeWireTransaction(input.transaction)
  if (!transaction) return violation(SVM_REASON.undecodable, 'the payload transaction is not a base64 Solana transaction')
  return checkDecodedPaymentTransaction({ ...input, transaction })
}

/** {@link checkPaymentTransaction} on a transaction the caller has already decoded (so it is decoded once). */
export async function checkDecodedPaymentTransaction(input: DecodedRuleInput): Promise<RuleOutcome> {
  // The rules read hostile bytes: whatever slips past the explicit checks below is a malformed payment, not a fault.
  try {
    return await applyRules(input.transaction, input)
  } catch {
    return violation(SVM_REASON.undecodable, MALFORMED_MESSAGE)
  }
}

/** The rule input with the transaction already decoded from its base64 wire form. */
export type DecodedRuleInput = Omit<TransactionRuleInput, 'transaction'> & { readonly transaction: WireTransaction }

const MALFORMED_MESSAGE = 'the transaction message is malformed (an account index or a field is out of range)'

/** Instruction discriminators (the first data byte) and exact data sizes the rules accept. */
const SET_COMPUTE_UNIT_LIMIT = { tag: 2, size: 5 } // u8 tag, u32 units
const SET_COMPUTE_UNIT_PRICE = { tag: 3, size: 9 } // u8 tag, u64 micro-lamports
const TRANSFER_CHECKED = { tag: 12, size: 10 } // u8 tag, u64 amount, u8 decimals
/** TransferChecked's accounts: source, mint, destination, authority (no multisig signers). */
const TRANSFER_CHECKED_ACCOUNTS = 4

async function applyRules(transaction: WireTransaction, input: Omit<TransactionRuleInput, 'transaction'>): Promise<RuleOutcome> {
  if (transaction.version !== 'legacy' && transaction.version !== 0) {
    return violation(SVM_REASON.unsupportedVersion, `transaction version ${String(transaction.version)} is not accepted; use a legacy or v0 transaction`)
  }
  if (transaction.addressTableLookups > 0) {
    return violation(SVM_REASON.addressLookupTable, 'address lookup tables are not accepted: every account must be listed in the transaction')
  }

  const { accounts, instructions, header } = transaction
  const feePayer = accounts[0]
  if (!feePayer) return violation(SVM_REASON.undecodable, 'the transaction has no accounts')
  // extra.feePayer is judged first, then the transaction's against it, in the reference facilitator's order.
  const expected = input.expectedFeePayer
  if (expected !== undefined && !input.feePayers.has(expected)) {
    return violation(SVM_REASON.feePayerNotManaged, `paymentRequirements.extra.feePayer ${expected} is not a fee payer of this facilitator`)
  }
  if (expected !== undefined && expected !== feePayer) {
    return violation(SVM_REASON.feePayerMismatch, `fee payer ${feePayer} differs from paymentRequirements.extra.feePayer ${expected}`)
  }
  if (!input.feePayers.has(feePayer)) {
    return violation(SVM_REASON.feePayerNotManaged, `fee payer ${feePayer} is not a fee payer of this facilitator`)
  }
  // An index past the account list names no account at all: a malformed message.
  for (const ix of instructions) {
    if (ix.programIndex >= accounts.length || ix.accountIndices.some((accountIndex) => accountIndex >= accounts.length)) {
      return violation(SVM_REASON.undecodable, MALFORMED_MESSAGE)
    }
  }

  // The fee payer must not reach any program, in any role (compared by address: a key listed twice is still the fee payer).
  for (const [index, ix] of instructions.entries()) {
    if (accounts[ix.programIndex] === feePayer || ix.accountIndices.some((accountIndex) => accounts[accountIndex] === feePayer)) {
      return violation(SVM_REASON.feePayerInInstruction, `instruction ${index} names the fee payer in its accounts`)
    }
  }

  // The fee payer and the transfer authority: any further signer is not needed by the transfer.
  if (header.numSignerAccounts !== 2) {
    return violation(SVM_REASON.excessiveSigners, `the transaction needs ${header.numSignerAccounts} signatures; a payment has exactly 2 (fee payer and payer)`)
  }

  let limit: number | undefined
  let price: bigint | undefined
  let nonBudgetInstructions = 0
  const transfers: WireInstruction[] = []
  const memos: WireInstruction[] = []
  for (const [index, ix] of instructions.entries()) {
    const program = accounts[ix.programIndex]!
    const data = dataView(ix.data)
    if (program === COMPUTE_BUDGET_PROGRAM_ADDRESS) {
      // Exact sizes: the runtime refuses trailing bytes in a compute-budget instruction.
      if (ix.data[0] === SET_COMPUTE_UNIT_LIMIT.tag && ix.data.length === SET_COMPUTE_UNIT_LIMIT.size) {
        if (limit !== undefined) return violation(SVM_REASON.duplicateComputeLimit, `instruction ${index} sets the compute-unit limit a second time`)
        limit = data.getUint32(1, true)
        continue
      }
      if (ix.data[0] === SET_COMPUTE_UNIT_PRICE.tag && ix.data.length === SET_COMPUTE_UNIT_PRICE.size) {
        if (price !== undefined) return violation(SVM_REASON.duplicateComputePrice, `instruction ${index} sets the compute-unit price a second time`)
        price = data.getBigUint64(1, true)
        continue
      }
      return violation(SVM_REASON.computeBudgetNotAllowed, `instruction ${index} is a compute-budget instruction other than one unit limit and one unit price`)
    }
    nonBudgetInstructions += 1
    if (program === TOKEN_PROGRAM_ADDRESS || program === TOKEN_2022_PROGRAM_ADDRESS) {
      if (ix.data[0] !== TRANSFER_CHECKED.tag) {
        return violation(SVM_REASON.tokenInstructionNotAllowed, `instruction ${index} is a token instruction other than TransferChecked`)
      }
      transfers.push(ix)
      continue
    }
    if (!input.allowedPrograms.has(program)) {
      return violation(SVM_REASON.programNotAllowed, `instruction ${index} calls program ${program}, which is not allowed`)
    }
    if (program === MEMO_PROGRAM_ADDRESS) memos.push(ix)
  }

  if (transfers.length === 0) return violation(SVM_REASON.noTransfer, 'the transaction has no TransferChecked instruction')
  if (transfers.length > 1) return violation(SVM_REASON.multipleTransfers, `the transaction has ${transfers.length} TransferChecked instructions; a payment has one`)

  // Without a limit instruction the runtime grants a default per instruction: that is what the fee payer risks.
  const effectiveLimit = limit ?? Math.min(MAX_UNITS_PER_TRANSACTION, DEFAULT_UNITS_PER_INSTRUCTION * nonBudgetInstructions)
  const effectivePrice = price ?? 0n
  const { maxComputeUnitLimit, maxComputeUnitPrice, maxPriorityFeeLamports } = input.limits
  if (effectiveLimit > maxComputeUnitLimit) {
    return violation(SVM_REASON.computeLimitTooHigh, `compute-unit limit ${effectiveLimit} is above the cap of ${maxComputeUnitLimit}`)
  }
  if (effectivePrice > maxComputeUnitPrice) {
    return violation(SVM_REASON.computePriceTooHigh, `compute-unit price ${effectivePrice} micro-lamports is above the cap of ${maxComputeUnitPrice}`)
  }
  const priorityFee = (BigInt(effectiveLimit) * effectivePrice + 999_999n) / 1_000_000n
  if (priorityFee > maxPriorityFeeLamports) {
    return violation(SVM_REASON.priorityFeeTooHigh, `priority fee ${priorityFee} lamports (limit x price) is above the cap of ${maxPriorityFeeLamports}`)
  }

  const transfer = transfers[0]!
  if (transfer.data.length !== TRANSFER_CHECKED.size || transfer.accountIndices.length < TRANSFER_CHECKED_ACCOUNTS) {
    return violation(SVM_REASON.noTransfer, 'the TransferChecked instruction is malformed')
  }
  const tokenProgram = accounts[transfer.programIndex]!
  const [sourceIndex, mintIndex, destinationIndex, authorityIndex] = transfer.accountIndices as unknown as [number, number, number, number]
  const payer = accounts[authorityIndex]!
  if (authorityIndex >= header.numSignerAccounts) {
    return violation(SVM_REASON.excessiveSigners, 'the transfer authority does not sign the transaction', payer)
  }
  // Extra accounts would be multisig signers or transfer-hook accounts: neither is a plain payment.
  if (transfer.accountIndices.length !== TRANSFER_CHECKED_ACCOUNTS) {
    return violation(SVM_REASON.excessiveSigners, 'the TransferChecked instruction has accounts beyond source, mint, destination and authority', payer)
  }
  const mint = accounts[mintIndex]!
  if (mint !== input.asset) {
    return violation(SVM_REASON.mintMismatch, `the transfer moves mint ${mint}, the requirements ask for ${input.asset}`, payer)
  }
  const payTo = input.payTo
  // kit's isAddress decodes through BigInt (~10 µs a call); the same check in limbs.
  if (!isSolanaAddress(payTo)) return violation(SVM_REASON.recipientMismatch, `payTo ${payTo} is not a Solana address`, payer)
  const destination = accounts[destinationIndex]!
  const expectedDestination = input.associatedTokenAccount
    ? await input.associatedTokenAccount(payTo, mint, tokenProgram)
    : (await findAssociatedTokenPda({ mint, owner: payTo, tokenProgram }))[0]
  if (destination !== expectedDestination) {
    return violation(SVM_REASON.recipientMismatch, `the transfer pays ${destination}, not the associated token account ${expectedDestination} of payTo`, payer)
  }
  const source = accounts[sourceIndex]!
  // Nothing would change hands, and the fee payer would pay for it.
  if (source === destination) {
    return violation(SVM_REASON.transferToSelf, `the transfer's source ${source} is its destination: a payment cannot pay itself`, payer)
  }
  const amount = dataView(transfer.data).getBigUint64(1, true)
  const feeOnTop = input.transferFeeAllowed === true && tokenProgram === TOKEN_2022_PROGRAM_ADDRESS
  if (feeOnTop ? amount < input.amount : amount !== input.amount) {
    const expected = feeOnTop ? `at least ${input.amount} (the amount plus the mint's transfer fee)` : `exactly ${input.amount}`
    return violation(SVM_REASON.amountMismatch, `the transfer moves ${amount}, the requirements ask for ${expected}`, payer)
  }
  if (input.memo !== undefined) {
    const expected = new TextEncoder().encode(input.memo)
    const matching = memos.filter((ix) => equalBytes(ix.data, expected))
    if (memos.length !== 1 || matching.length !== 1) {
      return violation(SVM_REASON.memoMismatch, 'the transaction must carry exactly one memo equal to paymentRequirements.extra.memo', payer)
    }
  }

  // The fee payer's signature does not change the size: a transaction over the limit could never be sent.
  if (transaction.bytes.length > TRANSACTION_SIZE_LIMIT) return violation(SVM_REASON.invalidPayload, 'the transaction exceeds the Solana size limit', payer)
  return {
    ok: true,
    payment: {
      transaction: transaction.kitTransaction as Transaction & TransactionWithinSizeLimit,
      feePayer,
      payer,
      source,
      destination,
      mint,
      tokenProgram,
      amount,
      blockhash: transaction.blockhash,
      computeUnitLimit: effectiveLimit,
      computeUnitPrice: effectivePrice,
    },
  }
}

function dataView(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

function equalBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
