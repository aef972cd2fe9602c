import {
  appendTransactionMessageInstructions,
  type Address,
  type Blockhash,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  type Instruction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type TransactionSigner,
} from '@solana/kit'
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget'
import { findAssociatedTokenPda, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { MEMO_PROGRAM_ADDRESS } from '../rules/transaction-rules.js'

/** What a payer needs to build an x402 `exact` Solana payment. */
export interface ExactSvmTransactionOptions {
  /** The payer: owner of the source token account, signs the transfer. */
  payer: TransactionSigner
  /** The facilitator's fee payer (`paymentRequirements.extra.feePayer`). */
  feePayer: Address
  /** The token mint (`paymentRequirements.asset`). */
  mint: Address
  /** The recipient wallet (`paymentRequirements.payTo`); tokens go to its associated token account. */
  payTo: Address
  /** Amount in the token's smallest unit. */
  amount: bigint
  decimals: number
  /** A recent blockhash and the last block height at which it is valid (`getLatestBlockhash`). */
  blockhash: { blockhash: Blockhash; lastValidBlockHeight: bigint }
  /** spl-token or token-2022. @default spl-token */
  tokenProgram?: Address
  /** Memo text (`paymentRequirements.extra.memo`); none when absent. */
  memo?: string
  /** @default 20_000 */
  computeUnitLimit?: number
  /** Micro-lamports per unit. @default 1 */
  computeUnitPrice?: bigint | number
  /** Instructions appended after the transfer (e.g. a wallet guard). */
  extraInstructions?: readonly Instruction[]
}

/**
 * Builds and payer-signs an x402 `exact` Solana payment: compute-unit limit
 * and price, one `TransferChecked` from ATA(payer) to ATA(payTo), an optional
 * memo. Returns the base64 wire transaction for `paymentPayload.payload.transaction`;
 * the fee payer's signature slot stays empty for the facilitator.
 *
 * @example
 * // partial
 * const transaction = await buildExactSvmTransaction({
 *   payer, feePayer, mint, payTo, amount: 1_000n, decimals: 6,
 *   blockhash: (await rpc.getLatestBlockhash().send()).value,
 * })
 * const paymentPayload = { x402Version: 2, accepted: requirements, payload: { transaction } }
 */
export async function buildExactSvmTransaction(options: ExactSvmTransactionOptions): Promise<string> {
  const tokenProgram = options.tokenProgram ?? TOKEN_PROGRAM_ADDRESS
  const [source] = await findAssociatedTokenPda({ mint: options.mint, owner: options.payer.address, tokenProgram })
  const [destination] = await findAssociatedTokenPda({ mint: options.mint, owner: options.payTo, tokenProgram })
  const instructions: Instruction[] = [
    getSetComputeUnitLimitInstruction({ units: options.computeUnitLimit ?? 20_000 }),
    getSetComputeUnitPriceInstruction({ microLamports: options.computeUnitPrice ?? 1 }),
    getTransferCheckedInstruction(
      { source, mint: options.mint, destination, authority: options.payer, amount: options.amount, decimals: options.decimals },
      { programAddress: tokenProgram },
    ),
  ]
  if (options.memo !== undefined) {
    instructions.push({ programAddress: MEMO_PROGRAM_ADDRESS, data: new TextEncoder().encode(options.memo) })
  }
  instructions.push(...(options.extraInstructions ?? []))
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(options.feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(options.blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  )
  return getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(message))
}
