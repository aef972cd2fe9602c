import { COMPUTE_BUDGET_PROGRAM_ADDRESS } from '@solana-program/compute-budget'
import type { WireTransaction } from './wire-transaction.js'

/** Lamports the runtime charges for each signature a transaction carries. */
export const LAMPORTS_PER_SIGNATURE = 5_000n

/** The runtime's compute-unit limit per instruction when the transaction sets none, and its ceiling. */
const DEFAULT_UNITS_PER_INSTRUCTION = 200_000
const MAX_UNITS_PER_TRANSACTION = 1_400_000
const SET_COMPUTE_UNIT_LIMIT = { tag: 2, size: 5 }
const SET_COMPUTE_UNIT_PRICE = { tag: 3, size: 9 }

/**
 * What a transaction costs its fee payer once it is processed (landed, or failed on chain), in
 * lamports, as the runtime charges it: 5,000 per signature plus the priority fee, the compute-unit
 * limit times its price in micro-lamports, rounded up. Read from the transaction itself, so settle
 * knows it without another RPC call. A transaction that sets a price without a limit is priced at
 * the default limit (200,000 units per instruction), an upper bound; x402 clients set both.
 *
 * @example
 * const lamports = transactionFee(readWireTransaction(bytes)!) // 2 signatures, no priority fee: 10000n
 */
export function transactionFee(transaction: WireTransaction): bigint {
  let limit: number | undefined
  let price = 0n
  let otherInstructions = 0
  for (const ix of transaction.instructions) {
    if (transaction.accounts[ix.programIndex] !== COMPUTE_BUDGET_PROGRAM_ADDRESS) {
      otherInstructions++
      continue
    }
    const data = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.byteLength)
    if (ix.data[0] === SET_COMPUTE_UNIT_LIMIT.tag && ix.data.length === SET_COMPUTE_UNIT_LIMIT.size) limit = data.getUint32(1, true)
    else if (ix.data[0] === SET_COMPUTE_UNIT_PRICE.tag && ix.data.length === SET_COMPUTE_UNIT_PRICE.size) price = data.getBigUint64(1, true)
  }
  const units = BigInt(limit ?? Math.min(MAX_UNITS_PER_TRANSACTION, DEFAULT_UNITS_PER_INSTRUCTION * otherInstructions))
  return LAMPORTS_PER_SIGNATURE * BigInt(transaction.signatureOffsets.length) + (units * price + 999_999n) / 1_000_000n
}
