import type { Address, Blockhash, SignatureBytes, Transaction, TransactionMessageBytes } from '@solana/kit'
import { encodeBase58 } from './base58.js'

/** Solana's limit on a serialized transaction (signatures and message), in bytes. */
export const TRANSACTION_SIZE_LIMIT = 1232
const SIGNATURE_SIZE = 64
const ADDRESS_SIZE = 32

/** One compiled instruction: indices into the message's account list, and its data. */
export interface WireInstruction {
  readonly programIndex: number
  readonly accountIndices: Uint8Array
  readonly data: Uint8Array
}

/** A wire transaction read in place: the parts the payment rules look at. */
export interface WireTransaction {
  /** kit's shape of it (message bytes, signatures by signer address), for signers and encoders. */
  readonly kitTransaction: Transaction
  /** The whole serialized transaction. */
  readonly bytes: Uint8Array
  /** The message: what every signature signs. */
  readonly messageBytes: Uint8Array
  /** Where each signature starts in `bytes`, in signer order (the fee payer's first). */
  readonly signatureOffsets: readonly number[]
  readonly version: 'legacy' | number
  readonly header: { readonly numSignerAccounts: number; readonly numReadonlySignerAccounts: number; readonly numReadonlyNonSignerAccounts: number }
  /** The accounts listed in the message, in order. */
  readonly accounts: readonly Address[]
  readonly blockhash: Blockhash
  readonly instructions: readonly WireInstruction[]
  /** Address lookup tables a v0 message loads accounts from. */
  readonly addressTableLookups: number
}

/**
 * The bytes of a base64 text (its alphabet already checked), in an array of
 * their own: Node's decoder hands out slices of a shared pool, and signers get
 * views of these bytes that must reach nothing else.
 */
export function bytesOfBase64(base64: string): Uint8Array {
  return new Uint8Array(Buffer.from(base64, 'base64'))
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * Reads a base64 wire transaction (see {@link readWireTransaction}). Returns
 * `undefined` when the text is not base64 or the bytes are not a transaction.
 */
export function decodeWireTransaction(base64: string): WireTransaction | undefined {
  // Node's decoder skips characters outside the alphabet: refuse them first.
  if (!BASE64.test(base64)) return undefined
  return readWireTransaction(bytesOfBase64(base64))
}

/**
 * Reads a serialized Solana transaction (legacy or versioned) in place, without
 * @solana/kit's generic codecs (see docs/benchmarks.md). Returns `undefined` for bytes that are not
 * exactly one well-formed transaction: truncated, with bytes left over, with
 * a signature count that differs from the header's, or with non-canonical
 * lengths. Instruction account indices are not checked against the account
 * list here; the rules do that.
 *
 * @example
 * const parsed = readWireTransaction(bytesOfBase64(base64))
 * if (parsed) console.log(parsed.accounts[0]) // the fee payer
 */
export function readWireTransaction(bytes: Uint8Array): WireTransaction | undefined {
  const reader = new Reader(bytes)
  try {
    const signatureCount = reader.length()
    const signatureOffsets: number[] = []
    for (let i = 0; i < signatureCount; i++) {
      signatureOffsets.push(reader.offset)
      reader.skip(SIGNATURE_SIZE)
    }
    const messageStart = reader.offset
    // A versioned message sets the top bit of its first byte; a legacy one starts with its signer count (< 128).
    const first = reader.peek()
    let version: 'legacy' | number = 'legacy'
    if (first & 0x80) {
      version = first & 0x7f
      reader.skip(1)
    }
    const header = { numSignerAccounts: reader.byte(), numReadonlySignerAccounts: reader.byte(), numReadonlyNonSignerAccounts: reader.byte() }
    const accountCount = reader.length()
    const accounts: Address[] = []
    for (let i = 0; i < accountCount; i++) accounts.push(encodeBase58(reader.take(ADDRESS_SIZE)) as Address)
    const blockhash = encodeBase58(reader.take(ADDRESS_SIZE)) as Blockhash
    const instructionCount = reader.length()
    const instructions: WireInstruction[] = []
    for (let i = 0; i < instructionCount; i++) {
      const programIndex = reader.byte()
      const accountIndices = reader.take(reader.length())
      const data = reader.take(reader.length())
      instructions.push({ programIndex, accountIndices, data })
    }
    let addressTableLookups = 0
    if (version !== 'legacy') {
      addressTableLookups = reader.length()
      for (let i = 0; i < addressTableLookups; i++) {
        reader.skip(ADDRESS_SIZE)
        reader.skip(reader.length())
        reader.skip(reader.length())
      }
    }
    if (reader.offset !== bytes.length) return undefined
    if (signatureCount !== header.numSignerAccounts || header.numSignerAccounts > accountCount) return undefined

    const signatures: Record<Address, SignatureBytes | null> = {}
    for (let i = 0; i < signatureCount; i++) {
      const signature = bytes.subarray(signatureOffsets[i]!, signatureOffsets[i]! + SIGNATURE_SIZE)
      // kit's convention: an all-zero slot is a signature not given yet.
      signatures[accounts[i]!] = signature.some((byte) => byte !== 0) ? (signature as SignatureBytes) : null
    }
    const messageBytes = bytes.subarray(messageStart)
    const kitTransaction: Transaction = Object.freeze({
      messageBytes: messageBytes as unknown as TransactionMessageBytes,
      signatures: Object.freeze(signatures),
    })
    return { kitTransaction, bytes, messageBytes, signatureOffsets, version, header, accounts, blockhash, instructions, addressTableLookups }
  } catch (error) {
    if (error instanceof Malformed) return undefined
    throw error
  }
}

/**
 * The first account of a serialized transaction's message (its fee payer), read without the rest:
 * for bytes {@link readWireTransaction} accepts, its `accounts[0]`. `undefined` when the bytes end first.
 *
 * @example
 * readFeePayer(bytesOfBase64(base64)) // the address that pays the fees
 */
export function readFeePayer(bytes: Uint8Array): Address | undefined {
  const reader = new Reader(bytes)
  try {
    reader.skip(reader.length() * SIGNATURE_SIZE)
    if (reader.peek() & 0x80) reader.skip(1)
    reader.skip(3)
    if (reader.length() === 0) return undefined
    return encodeBase58(reader.take(ADDRESS_SIZE)) as Address
  } catch (error) {
    if (error instanceof Malformed) return undefined
    throw error
  }
}

/** Thrown inside the reader: the bytes end early or break the format. */
class Malformed extends Error {}

/** A cursor over the bytes that throws {@link Malformed} past their end. */
class Reader {
  offset = 0
  constructor(private readonly bytes: Uint8Array) {}

  peek(): number {
    if (this.offset >= this.bytes.length) throw new Malformed()
    return this.bytes[this.offset]!
  }

  byte(): number {
    const value = this.peek()
    this.offset += 1
    return value
  }

  skip(count: number): void {
    if (this.offset + count > this.bytes.length) throw new Malformed()
    this.offset += count
  }

  take(count: number): Uint8Array {
    const start = this.offset
    this.skip(count)
    return this.bytes.subarray(start, start + count)
  }

  /** Solana's compact-u16: 7 bits per byte, at most 3 bytes, no redundant trailing zero byte. */
  length(): number {
    let value = 0
    for (let i = 0; i < 3; i++) {
      const byte = this.byte()
      value |= (byte & 0x7f) << (7 * i)
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new Malformed()
        if (value > 0xffff) throw new Malformed()
        return value
      }
    }
    throw new Malformed()
  }
}
