/**
 * Builds arbitrary (also malicious) payment transactions for the tests: any
 * instruction list, a fee payer the builder does not sign for, optional
 * address lookup tables. Signs with every signer object the instructions carry.
 *
 * @example
 * const tx = await buildTransaction({ feePayer, blockhash, instructions: [transferIx, memoIx] })
 */
import {
  type Address,
  type AddressesByLookupTableAddress,
  appendTransactionMessageInstructions,
  type Blockhash,
  compressTransactionMessageUsingAddressLookupTables,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  type Instruction,
  type KeyPairSigner,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit'
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget'
import { findAssociatedTokenPda, getTransferCheckedInstruction } from '@solana-program/token'
import type { PaymentScenario } from './svm-fixtures.js'

export interface BuildTransactionOptions {
  feePayer: Address
  blockhash: Blockhash
  instructions: readonly Instruction[]
  /** Compresses the message with these lookup tables (v0). */
  lookupTables?: AddressesByLookupTableAddress
}

/** A base64 wire transaction signed by every signer the instructions carry, fee payer slot left empty. */
export async function buildTransaction(options: BuildTransactionOptions): Promise<string> {
  const base = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(options.feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: options.blockhash, lastValidBlockHeight: 1_000_000n }, m),
    (m) => appendTransactionMessageInstructions(options.instructions, m),
  )
  const message = options.lookupTables ? compressTransactionMessageUsingAddressLookupTables(base, options.lookupTables) : base
  return getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(message))
}

/** The usual instructions of a valid payment in a scenario: limit, price, TransferChecked of `amount` to ATA(payTo). */
export async function paymentInstructions(
  s: PaymentScenario,
  options: { amount: bigint; payer?: KeyPairSigner; mint?: Address; payTo?: Address; units?: number; microLamports?: bigint } ,
): Promise<Instruction[]> {
  const payer = options.payer ?? s.payer
  const mint = options.mint ?? s.mint
  const [source] = await findAssociatedTokenPda({ mint, owner: payer.address, tokenProgram: s.tokenProgram })
  const [destination] = await findAssociatedTokenPda({ mint, owner: options.payTo ?? s.payTo, tokenProgram: s.tokenProgram })
  return [
    getSetComputeUnitLimitInstruction({ units: options.units ?? 20_000 }),
    getSetComputeUnitPriceInstruction({ microLamports: options.microLamports ?? 1n }),
    getTransferCheckedInstruction(
      { source, mint, destination, authority: payer, amount: options.amount, decimals: s.decimals },
      { programAddress: s.tokenProgram },
    ),
  ]
}
