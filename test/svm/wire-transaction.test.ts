/**
 * Our reader of wire transactions and our base58 replace @solana/kit's codecs
 * on the verify path: they must read every transaction kit reads the same way,
 * and refuse the malformed ones instead of guessing.
 */
import { randomBytes } from 'node:crypto'
import {
  type Address,
  type Blockhash,
  generateKeyPairSigner,
  getAddressEncoder,
  getBase58Decoder,
  getBase58Encoder,
  isAddress,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Instruction,
  type KeyPairSigner,
} from '@solana/kit'
import { getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget'
import { getTransferCheckedInstruction } from '@solana-program/token'
import { beforeAll, describe, expect, it } from 'vitest'
import { decodeBase58, encodeBase58, isSolanaAddress } from '../../src/svm/codec/base58.js'
import { MEMO_PROGRAM_ADDRESS } from '../../src/svm/rules/transaction-rules.js'
import { readFeePayer, readWireTransaction } from '../../src/svm/codec/wire-transaction.js'
import { buildTransaction } from '../support/svm-transactions.js'

describe('encodeBase58', () => {
  it('writes what kit writes, leading zero bytes included', () => {
    const kit = getBase58Decoder()
    for (let i = 0; i < 3_000; i++) {
      const bytes = new Uint8Array(randomBytes([0, 1, 2, 7, 31, 32, 33, 64][i % 8]!))
      // Leading zeros become leading '1's: zero a prefix of some inputs, and all of others.
      if (i % 3 === 0) bytes.fill(0, 0, Math.min(bytes.length, i % 5))
      if (i % 17 === 0) bytes.fill(0)
      expect(encodeBase58(bytes)).toBe(kit.decode(bytes))
    }
    expect(encodeBase58(new Uint8Array(32))).toBe('11111111111111111111111111111111')
    expect(encodeBase58(new Uint8Array([0xff]))).toBe('5Q')
  })

  it('answers a 32-byte value seen before by its bytes, not by the array that held them', () => {
    const kit = getBase58Decoder()
    const shared = new Uint8Array(96)
    shared.set(randomBytes(96))
    const first = shared.subarray(32, 64)
    const text = encodeBase58(first)
    expect(text).toBe(kit.decode(first))
    // The same bytes at another offset, and the same array after its bytes changed.
    expect(encodeBase58(Uint8Array.from(first))).toBe(text)
    first[0] = first[0]! ^ 1
    expect(encodeBase58(first)).toBe(kit.decode(first))
    expect(encodeBase58(first)).not.toBe(text)
    // Past the bound the texts are still right.
    for (let i = 0; i < 10_000; i++) {
      const bytes = new Uint8Array(randomBytes(32))
      expect(encodeBase58(bytes)).toBe(kit.decode(bytes))
    }
    expect(encodeBase58(Uint8Array.from(shared.subarray(0, 32)))).toBe(kit.decode(shared.subarray(0, 32)))
  })
})

describe('decodeBase58 and isSolanaAddress', () => {
  it('read what kit reads, leading ones included, and judge addresses as kit\'s isAddress does', () => {
    const kit = getBase58Encoder()
    for (let i = 0; i < 3_000; i++) {
      const bytes = new Uint8Array(randomBytes([0, 1, 2, 7, 31, 32, 33, 64][i % 8]!))
      if (i % 3 === 0) bytes.fill(0, 0, Math.min(bytes.length, i % 5))
      if (i % 17 === 0) bytes.fill(0)
      const text = encodeBase58(bytes)
      expect(decodeBase58(text)).toEqual(new Uint8Array(kit.encode(text)))
      expect(isSolanaAddress(text)).toBe(isAddress(text))
    }
  })

  it('refuses characters outside the alphabet and texts that are not 32 bytes', () => {
    for (const text of ['0', 'O', 'I', 'l', '+', 'é', '1111111111111111111111111111111O']) {
      expect(decodeBase58(text)).toBeUndefined()
      expect(isSolanaAddress(text)).toBe(false)
    }
    for (const text of ['', '1'.repeat(31), '1'.repeat(33), 'z'.repeat(44), encodeBase58(new Uint8Array(33).fill(7))]) {
      expect(isSolanaAddress(text)).toBe(isAddress(text))
      expect(isSolanaAddress(text)).toBe(false)
    }
    expect(isSolanaAddress('11111111111111111111111111111111')).toBe(true)
  })
})

describe('readWireTransaction', () => {
  let payer: KeyPairSigner
  let feePayer: Address
  let accounts: Address[]
  const blockhash = getBase58Decoder().decode(new Uint8Array(32).fill(9)) as Blockhash
  beforeAll(async () => {
    payer = await generateKeyPairSigner()
    feePayer = (await generateKeyPairSigner()).address
    accounts = await Promise.all([0, 1, 2, 3].map(async () => (await generateKeyPairSigner()).address))
  })

  const payment = (memo: string, extra: Instruction[] = []): Instruction[] => [
    getSetComputeUnitLimitInstruction({ units: 20_000 }),
    getSetComputeUnitPriceInstruction({ microLamports: 3n }),
    getTransferCheckedInstruction({ source: accounts[0]!, mint: accounts[1]!, destination: accounts[2]!, authority: payer, amount: 1234n, decimals: 6 }),
    { programAddress: MEMO_PROGRAM_ADDRESS, accounts: [], data: new TextEncoder().encode(memo) },
    ...extra,
  ]

  it('reads v0 payments field for field as kit does', async () => {
    for (const memo of ['', 'a', 'x'.repeat(300)]) {
      const wire = new Uint8Array(getBase64Encoder().encode(await buildTransaction({ feePayer, blockhash, instructions: payment(memo) })))
      const ours = readWireTransaction(wire)
      const kitTransaction = getTransactionDecoder().decode(wire)
      const compiled = getCompiledTransactionMessageDecoder().decode(kitTransaction.messageBytes)
      expect(ours).toBeDefined()
      if (!ours || compiled.version !== 0) throw new Error('expected a v0 message')
      expect(ours.version).toBe(0)
      expect(ours.header).toEqual(compiled.header)
      expect(ours.accounts).toEqual(compiled.staticAccounts)
      expect(ours.blockhash).toBe(compiled.lifetimeToken)
      expect(ours.instructions.map((ix) => ({ programAddressIndex: ix.programIndex, accountIndices: [...ix.accountIndices], data: [...ix.data] }))).toEqual(
        compiled.instructions.map((ix) => ({ programAddressIndex: ix.programAddressIndex, accountIndices: ix.accountIndices ?? [], data: [...(ix.data ?? [])] })),
      )
      expect(ours.addressTableLookups).toBe(0)
      // The kit-shaped view: same message bytes, same signatures by signer (the fee payer's slot empty).
      expect(Buffer.from(ours.messageBytes)).toEqual(Buffer.from(kitTransaction.messageBytes))
      expect(Object.keys(ours.kitTransaction.signatures)).toEqual(Object.keys(kitTransaction.signatures))
      expect(ours.kitTransaction.signatures[feePayer]).toBeNull()
      expect(Buffer.from(ours.kitTransaction.signatures[payer.address]!)).toEqual(Buffer.from(kitTransaction.signatures[payer.address]!))
      expect(ours.signatureOffsets).toEqual([1, 65])
    }
  })

  it('reads a legacy message and counts a v0 message\'s lookup tables', async () => {
    const legacy = legacyTransfer(feePayer, payer.address, accounts)
    const read = readWireTransaction(legacy)
    expect(read?.version).toBe('legacy')
    expect(read?.accounts).toEqual(getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(legacy).messageBytes).staticAccounts)
    expect(read?.instructions).toHaveLength(1)

    const lookupTable = (await generateKeyPairSigner()).address
    const withTable = await buildTransaction({ feePayer, blockhash, instructions: payment('t'), lookupTables: { [lookupTable]: [accounts[2]!] } })
    expect(readWireTransaction(new Uint8Array(getBase64Encoder().encode(withTable)))?.addressTableLookups).toBe(1)
  })

  it('refuses every truncation, a byte left over, a signature count the header does not ask for, and a non-canonical length', async () => {
    const wire = new Uint8Array(getBase64Encoder().encode(await buildTransaction({ feePayer, blockhash, instructions: payment('cut') })))
    for (let length = 0; length < wire.length; length++) expect(readWireTransaction(wire.subarray(0, length))).toBeUndefined()
    expect(readWireTransaction(Uint8Array.from([...wire, 0]))).toBeUndefined()

    // Three signature slots for a message with two signers.
    const threeSlots = Uint8Array.from([3, ...wire.subarray(1, 129), ...new Uint8Array(64), ...wire.subarray(129)])
    expect(readWireTransaction(threeSlots)).toBeUndefined()
    // The signature count 2 written as two bytes (0x82 0x00): the runtime refuses such aliases.
    expect(readWireTransaction(Uint8Array.from([0x82, 0x00, ...wire.subarray(1)]))).toBeUndefined()
    expect(readWireTransaction(new Uint8Array(0))).toBeUndefined()
  })

  it('reads the fee payer alone (what reserveSettlement takes a slot on): the first account readWireTransaction reads', async () => {
    const v0 = new Uint8Array(getBase64Encoder().encode(await buildTransaction({ feePayer, blockhash, instructions: payment('fp') })))
    const legacy = legacyTransfer(feePayer, payer.address, accounts)
    for (const wire of [v0, legacy]) {
      expect(readFeePayer(wire)).toBe(feePayer)
      expect(readFeePayer(wire)).toBe(readWireTransaction(wire)?.accounts[0])
    }
    // Bytes that end before the first account, or list none.
    const accountsAt = 1 + 2 * 64 + 1 + 3
    for (const length of [0, 1, 65, accountsAt, accountsAt + 1 + 31]) expect(readFeePayer(v0.subarray(0, length))).toBeUndefined()
    expect(readFeePayer(Uint8Array.from([...v0.subarray(0, accountsAt), 0]))).toBeUndefined()
  })

  it('marks an all-zero signature slot as missing', async () => {
    const wire = new Uint8Array(getBase64Encoder().encode(await buildTransaction({ feePayer, blockhash, instructions: payment('z') })))
    wire.fill(0, 65, 129)
    const read = readWireTransaction(wire)
    expect(read?.kitTransaction.signatures[payer.address]).toBeNull()
  })
})

/** A legacy message by hand (kit's builder makes v0 here): fee payer and payer sign, one memo names the payer. */
function legacyTransfer(feePayer: Address, payer: Address, others: Address[]): Uint8Array {
  const keys = [feePayer, payer, ...others.slice(0, 2), MEMO_PROGRAM_ADDRESS]
  const memo = [...new TextEncoder().encode('legacy')]
  const header = [2, 1, 3]
  const instruction = [keys.length - 1, 1, 1, memo.length, ...memo]
  const message = [...header, keys.length, ...keys.flatMap((key) => [...getAddressEncoder().encode(key)]), ...new Uint8Array(32).fill(4), 1, ...instruction]
  return Uint8Array.from([2, ...new Uint8Array(128).fill(1), ...message])
}
