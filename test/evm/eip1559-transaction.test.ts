/**
 * The lean EIP-1559 encoder must give viem's bytes exactly, unsigned (what the key signs) and
 * signed (what is sent and hashed into the transaction id), for every size class of RLP.
 */
import { randomBytes } from 'node:crypto'
import { bytesToHex, hexToBytes, serializeTransaction, type Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import { encodeEip1559, type Eip1559Fields } from '../../src/evm/codec/eip1559-transaction.js'

const random = (bytes: number) => bytesToHex(randomBytes(bytes))
const randomBig = (bytes: number) => (bytes === 0 ? 0n : BigInt(random(bytes)))
const pick = <T>(values: readonly T[]): T => values[Math.floor(Math.random() * values.length)]!

/** Numbers of 0 to 32 bytes, data from empty to well past RLP's 55-byte short form, one-byte data under and over 0x80. */
function randomFields(): Eip1559Fields {
  const data = pick<Hex>(['0x', '0x00', '0x7f', '0x80', random(1), random(55), random(56), random(Number(randomBig(1)) + 1), random(300), random(70_000)])
  // viem refuses a tip above the fee cap.
  const maxFeePerGas = randomBig(pick([0, 1, 8, 32]))
  return {
    chainId: Number(randomBig(pick([1, 2, 4]))) || 1,
    nonce: Number(randomBig(pick([0, 1, 3, 6]))),
    maxPriorityFeePerGas: pick([0n, maxFeePerGas, maxFeePerGas / (randomBig(1) + 1n)]),
    maxFeePerGas,
    gas: randomBig(pick([0, 1, 3])),
    to: random(20) as Hex,
    value: pick([undefined, 0n, randomBig(1), randomBig(32)]),
    data,
  }
}

/** r and s as 32 bytes each, some with leading zero bytes (which RLP drops). */
function randomSignature(): Uint8Array {
  const signature = crypto.getRandomValues(new Uint8Array(64))
  const zeros = pick([0, 0, 1, 2, 31])
  signature.fill(0, 0, zeros)
  signature.fill(0, 32, 32 + pick([0, 0, 1, 5]))
  return signature
}

describe('encodeEip1559', () => {
  it('encodes 500 random transactions, unsigned and signed, byte for byte as viem does', () => {
    for (let i = 0; i < 500; i++) {
      const fields = randomFields()
      const viemFields = { ...fields, type: 'eip1559' as const }
      const encoded = encodeEip1559(fields)
      expect(bytesToHex(encoded.unsigned)).toBe(serializeTransaction(viemFields))
      const signature = randomSignature()
      const yParity = pick([0, 1] as const)
      expect(encoded.signed(yParity, signature)).toBe(
        serializeTransaction(viemFields, { r: bytesToHex(signature.subarray(0, 32)), s: bytesToHex(signature.subarray(32)), yParity }),
      )
    }
  })

  it('refuses what viem refuses or it does not encode: a chain id of 0, a short signature, numbers out of range, no recipient, a tip above the cap', () => {
    const fields = randomFields()
    expect(() => encodeEip1559({ ...fields, chainId: 0 })).toThrow(/chain id/)
    expect(() => encodeEip1559(fields).signed(0, new Uint8Array(63))).toThrow(/64 bytes/)
    expect(() => encodeEip1559({ ...fields, gas: -1n })).toThrow(/negative/)
    expect(() => encodeEip1559({ ...fields, value: 2n ** 256n })).toThrow(/above 2\^256/)
    expect(() => encodeEip1559({ ...fields, to: '0x' })).toThrow(/20-byte address/)
    expect(() => encodeEip1559({ ...fields, maxFeePerGas: 1n, maxPriorityFeePerGas: 2n })).toThrow(/tip/)
  })

  it('encodes the RLP boundaries as viem does: data of 55 and 56 bytes, a list just under and over 55 bytes', () => {
    const small: Eip1559Fields = { chainId: 1, nonce: 0, maxPriorityFeePerGas: 0n, maxFeePerGas: 0n, gas: 0n, to: `0x${'11'.repeat(20)}`, data: '0x' }
    // The list of the fields above with no data is 29 bytes; 26 to 28 bytes of data take it across 55.
    for (const dataBytes of [0, 1, 25, 26, 27, 28, 54, 55, 56, 255, 256]) {
      const fields = { ...small, data: `0x${'ab'.repeat(dataBytes)}` as Hex }
      expect(bytesToHex(encodeEip1559(fields).unsigned)).toBe(serializeTransaction({ ...fields, type: 'eip1559' }))
    }
  })

  it('keeps a signature of all zero r and s as two empty strings', () => {
    const encoded = encodeEip1559(randomFields())
    const signed = hexToBytes(encoded.signed(0, new Uint8Array(64)))
    // The list ends with yParity 0, r 0 and s 0: three empty strings.
    expect([...signed.subarray(-3)]).toEqual([0x80, 0x80, 0x80])
  })
})
