import { hexToBytes, type Address, type Hex } from 'viem'
import { isHexAddress } from '../exact/authorization.js'
import { UINT256_MAX } from './typed-data.js'

/** The fields of an EIP-1559 transaction with no access list (what a settlement sends). */
export interface Eip1559Fields {
  readonly chainId: number
  readonly nonce?: number | undefined
  readonly maxPriorityFeePerGas?: bigint | undefined
  readonly maxFeePerGas?: bigint | undefined
  readonly gas?: bigint | undefined
  readonly to: Address
  readonly value?: bigint | undefined
  readonly data?: Hex | undefined
}

/** An EIP-1559 transaction encoded once: the bytes its signature covers, and the signed form. */
export interface EncodedEip1559 {
  /** `0x02 || rlp([chainId, nonce, tips, fees, gas, to, value, data, []])`: keccak of this is what the key signs. */
  readonly unsigned: Uint8Array
  /** The signed transaction as sent (`eth_sendRawTransaction`), from a 64-byte (r || s) signature. */
  signed(yParity: 0 | 1, signature: Uint8Array): Hex
}

/**
 * Encodes an EIP-1559 transaction with RLP on bytes, once for both the hash to sign and the
 * signed form (viem's serializer goes through hex strings). The bytes are viem's; the test holds it to that.
 */
export function encodeEip1559(tx: Eip1559Fields): EncodedEip1559 {
  // viem's own checks of an EIP-1559 transaction, so that nothing it would refuse gets signed here.
  if (!Number.isSafeInteger(tx.chainId) || tx.chainId <= 0) throw new RangeError(`chain id ${tx.chainId} is not a positive integer`)
  if (!isHexAddress(tx.to)) throw new TypeError(`${tx.to} is not a 20-byte address`)
  if ((tx.maxPriorityFeePerGas ?? 0n) > (tx.maxFeePerGas ?? 0n)) throw new RangeError('the tip (maxPriorityFeePerGas) is above the fee cap (maxFeePerGas)')
  const fields = [
    rlpUint(BigInt(tx.chainId)),
    rlpUint(BigInt(tx.nonce ?? 0)),
    rlpUint(tx.maxPriorityFeePerGas ?? 0n),
    rlpUint(tx.maxFeePerGas ?? 0n),
    rlpUint(tx.gas ?? 0n),
    rlpString(hexToBytes(tx.to)),
    rlpUint(tx.value ?? 0n),
    rlpString(hexToBytes(tx.data ?? '0x')),
    EMPTY_LIST,
  ]
  return {
    unsigned: typed(rlpList(fields)),
    signed(yParity, signature) {
      if (signature.length !== 64) throw new RangeError('a signature is 64 bytes (r || s)')
      const r = rlpString(trimZeros(signature.subarray(0, 32)))
      const s = rlpString(trimZeros(signature.subarray(32, 64)))
      const signed = typed(rlpList([...fields, rlpUint(BigInt(yParity)), r, s]))
      // Buffer's hex is one native copy; viem's bytesToHex concatenates a string per byte.
      return `0x${Buffer.from(signed.buffer, signed.byteOffset, signed.byteLength).toString('hex')}`
    },
  }
}

const EMPTY_LIST = Uint8Array.of(0xc0)
const TYPE = 0x02

function typed(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1)
  out[0] = TYPE
  out.set(payload, 1)
  return out
}

/** An unsigned integer as RLP: big-endian without leading zeros (zero is the empty string). */
function rlpUint(value: bigint): Uint8Array {
  if (value < 0n || value > UINT256_MAX) throw new RangeError(`${value} is negative or above 2^256 - 1`)
  if (value === 0n) return rlpString(new Uint8Array(0))
  let hex = value.toString(16)
  if (hex.length % 2 === 1) hex = `0${hex}`
  return rlpString(hexToBytes(`0x${hex}`))
}

/** A byte string as RLP. */
function rlpString(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 1 && bytes[0]! < 0x80) return bytes
  return withHeader(0x80, bytes)
}

/** A list of RLP items as RLP. */
function rlpList(items: readonly Uint8Array[]): Uint8Array {
  let length = 0
  for (const item of items) length += item.length
  const payload = new Uint8Array(length)
  let at = 0
  for (const item of items) {
    payload.set(item, at)
    at += item.length
  }
  return withHeader(0xc0, payload)
}

/** RLP's length prefix: `offset + length` below 56 bytes, else `offset + 55 + length of length` and the length. */
function withHeader(offset: 0x80 | 0xc0, payload: Uint8Array): Uint8Array {
  const length = payload.length
  let header: number[]
  if (length < 56) header = [offset + length]
  else {
    const lengthBytes: number[] = []
    for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) lengthBytes.unshift(rest % 256)
    header = [offset + 55 + lengthBytes.length, ...lengthBytes]
  }
  const out = new Uint8Array(header.length + length)
  out.set(header, 0)
  out.set(payload, header.length)
  return out
}

function trimZeros(bytes: Uint8Array): Uint8Array {
  let start = 0
  while (start < bytes.length && bytes[start] === 0) start++
  return bytes.subarray(start)
}
