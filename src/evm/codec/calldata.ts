import type { Address, Hex } from 'viem'
import { isHexAddress } from '../exact/authorization.js'
import { BYTES32, UINT256_MAX, type AuthorizationMessage } from './typed-data.js'

/**
 * The calldata a verify and a settle send, and the one answer they read, written word by word:
 * viem's generic ABI coder is a large share of a settle's CPU for these few fixed shapes (see
 * docs/benchmarks.md, "Notes on the EVM path"). Inputs are the validated payload's; anything out of
 * shape throws instead of encoding something else. test/evm/calldata.test.ts holds every function
 * to viem's coder byte for byte. Output hex is lowercase. Addresses are taken in any casing: their
 * checksum, when mixed case, was checked upstream (`addressRejection` in exact/eip3009.ts). With an
 * EIP-2612 permit the proxies' `settleWithPermit` stays with viem.
 */

const SELECTOR = {
  balanceOf: '70a08231',
  authorizationState: 'e94a0102',
  /** transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32) */
  transferWithAuthorizationVrs: 'e3ee160e',
  /** transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes) */
  transferWithAuthorizationBytes: 'cf092995',
  /** aggregate3((address,bool,bytes)[]) */
  aggregate3: '82ad56cb',
  isValidSignature: '1626ba7e',
  allowance: 'dd62ed3e',
  nonceBitmap: '4fe02b44',
  PERMIT2: '6afdd850',
  /** the exact proxy's settle(((address,uint256),uint256,uint256),address,(address,uint256),bytes) */
  exactProxySettle: '13cd3b53',
  /** the upto proxy's settle(((address,uint256),uint256,uint256),uint256,address,(address,address,uint256),bytes) */
  uptoProxySettle: 'ff11e7b4',
} as const

const ZEROS = '0'.repeat(64)
const TRUE_WORD = `${ZEROS.slice(1)}1`
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/

/** One call of a Multicall3 `aggregate3`. */
export interface Aggregate3Call {
  readonly target: Address
  readonly allowFailure: boolean
  readonly callData: Hex
}

/** One result of a Multicall3 `aggregate3`. */
export interface Aggregate3Result {
  readonly success: boolean
  readonly returnData: Hex
}

export function balanceOfCalldata(account: Address): Hex {
  return `0x${SELECTOR.balanceOf}${addressWord(account)}`
}

export function authorizationStateCalldata(authorizer: Address, nonce: Hex): Hex {
  return `0x${SELECTOR.authorizationState}${addressWord(authorizer)}${bytes32Word(nonce)}`
}

/** `transferWithAuthorization` with the signature as (v, r, s): what a plain account's signature goes as. */
export function transferWithAuthorizationVrsCalldata(a: AuthorizationMessage, v: number, r: Hex, s: Hex): Hex {
  if (!Number.isInteger(v) || v < 0 || v > 255) throw new RangeError(`v ${v} is not a uint8`)
  return `0x${SELECTOR.transferWithAuthorizationVrs}${authorizationWords(a)}${uintWord(BigInt(v))}${bytes32Word(r)}${bytes32Word(s)}`
}

/** `transferWithAuthorization` with the signature as bytes: what a smart wallet's signature goes as. */
export function transferWithAuthorizationBytesCalldata(a: AuthorizationMessage, signature: Hex): Hex {
  // Six head words, then the offset of the bytes, which follow the seven words of the head.
  return `0x${SELECTOR.transferWithAuthorizationBytes}${authorizationWords(a)}${uintWord(7n * 32n)}${bytesTail(signature)}`
}

export function isValidSignatureCalldata(digest: Hex, signature: Hex): Hex {
  return `0x${SELECTOR.isValidSignature}${bytes32Word(digest)}${uintWord(2n * 32n)}${bytesTail(signature)}`
}

export function allowanceCalldata(owner: Address, spender: Address): Hex {
  return `0x${SELECTOR.allowance}${addressWord(owner)}${addressWord(spender)}`
}

/** Permit2's `nonceBitmap(owner, wordPosition)`. */
export function nonceBitmapCalldata(owner: Address, wordPosition: bigint): Hex {
  return `0x${SELECTOR.nonceBitmap}${addressWord(owner)}${uintWord(wordPosition)}`
}

/** The proxies' `PERMIT2()`: whether a proxy is deployed (it answers Permit2's address). */
export const PERMIT2_GETTER_CALLDATA: Hex = `0x${SELECTOR.PERMIT2}`

/** The fields of a Permit2 `PermitTransferFrom` and its witness, as the proxies take them. */
export interface ProxySettleFields {
  readonly token: Address
  /** The permitted amount (upto: the maximum). */
  readonly amount: bigint
  readonly nonce: bigint
  readonly deadline: bigint
  readonly from: Address
  readonly to: Address
  readonly validAfter: bigint
  readonly signature: Hex
}

/** The exact proxy's `settle(permit, owner, witness, signature)`. */
export function exactProxySettleCalldata(p: ProxySettleFields): Hex {
  // Static tuples inline: the permit's four words, the owner, the witness's two; then the offset of the bytes (eight words).
  return `0x${SELECTOR.exactProxySettle}${permitWords(p)}${addressWord(p.from)}${addressWord(p.to)}${uintWord(p.validAfter)}${uintWord(8n * 32n)}${bytesTail(p.signature)}`
}

/** The upto proxy's `settle(permit, amount, owner, witness, signature)`: `charge` is what it moves. */
export function uptoProxySettleCalldata(p: ProxySettleFields & { readonly facilitator: Address }, charge: bigint): Hex {
  // The permit's four words, the charge, the owner, the witness's three; then the offset of the bytes (ten words).
  return `0x${SELECTOR.uptoProxySettle}${permitWords(p)}${uintWord(charge)}${addressWord(p.from)}${addressWord(p.to)}${addressWord(p.facilitator)}${uintWord(p.validAfter)}${uintWord(10n * 32n)}${bytesTail(p.signature)}`
}

export function aggregate3Calldata(calls: readonly Aggregate3Call[]): Hex {
  // The array's head is one offset per tuple, counted from the start of those offsets.
  let offset = calls.length * 32
  let offsets = ''
  let tuples = ''
  for (const call of calls) {
    const tail = bytesTail(call.callData)
    offsets += uintWord(BigInt(offset))
    // (target, allowFailure, offset of callData = after these three words)
    tuples += `${addressWord(call.target)}${uintWord(call.allowFailure ? 1n : 0n)}${uintWord(3n * 32n)}${tail}`
    offset += 3 * 32 + tail.length / 2
  }
  return `0x${SELECTOR.aggregate3}${uintWord(32n)}${uintWord(BigInt(calls.length))}${offsets}${tuples}`
}

/**
 * Reads an `aggregate3` answer to `expected` calls: `(bool success, bytes returnData)[]`. The answer
 * comes from an RPC, so every offset and length is checked against the data's size, and an answer
 * with another number of results (a gateway's cached or empty answer) is refused: a missing result
 * must not read as a failed check of the payment. A malformed answer throws.
 */
export function decodeAggregate3Result(data: Hex, expected: number): Aggregate3Result[] {
  if (!HEX_BYTES.test(data)) throw new TypeError('the aggregate3 answer is not hex bytes')
  const hex = data.slice(2).toLowerCase()
  const size = hex.length / 2
  const wordAt = (at: number): string => {
    if (at + 32 > size) throw new RangeError(`the aggregate3 answer ends before byte ${at + 32}`)
    return hex.slice(at * 2, at * 2 + 64)
  }
  /** The word at byte `at` as an offset or a length: no larger than the data. */
  const sizeAt = (at: number): number => {
    const word = wordAt(at)
    // Anything above the data's size cannot be an offset or length in it (and 8 hex digits stay exact).
    if (word.slice(0, 56) !== ZEROS.slice(0, 56)) throw new RangeError(`the aggregate3 answer has an out-of-range word at byte ${at}`)
    const value = Number.parseInt(word.slice(56), 16)
    if (value > size) throw new RangeError(`the aggregate3 answer points past its end (byte ${at})`)
    return value
  }
  const arrayAt = sizeAt(0)
  const count = sizeAt(arrayAt)
  if (count !== expected) throw new RangeError(`the aggregate3 answer has ${count} results for ${expected} calls`)
  const headsAt = arrayAt + 32
  const results: Aggregate3Result[] = []
  for (let i = 0; i < count; i++) {
    const tupleAt = headsAt + sizeAt(headsAt + i * 32)
    const flag = wordAt(tupleAt)
    if (flag !== ZEROS && flag !== TRUE_WORD) throw new RangeError(`the aggregate3 answer has a bool that is neither 0 nor 1 at byte ${tupleAt}`)
    const bytesAt = tupleAt + sizeAt(tupleAt + 32)
    const length = sizeAt(bytesAt)
    if (bytesAt + 32 + length > size) throw new RangeError(`the aggregate3 answer's result ${i} runs past its end`)
    results.push({ success: flag === TRUE_WORD, returnData: `0x${hex.slice((bytesAt + 32) * 2, (bytesAt + 32 + length) * 2)}` })
  }
  return results
}

function authorizationWords(a: AuthorizationMessage): string {
  return `${addressWord(a.from)}${addressWord(a.to)}${uintWord(a.value)}${uintWord(a.validAfter)}${uintWord(a.validBefore)}${bytes32Word(a.nonce)}`
}

function permitWords(p: ProxySettleFields): string {
  return `${addressWord(p.token)}${uintWord(p.amount)}${uintWord(p.nonce)}${uintWord(p.deadline)}`
}

function uintWord(value: bigint): string {
  if (value < 0n || value > UINT256_MAX) throw new RangeError(`${value} does not fit in uint256`)
  return value.toString(16).padStart(64, '0')
}

function addressWord(address: Address): string {
  if (!isHexAddress(address)) throw new TypeError(`${address} is not a 20-byte address`)
  return `000000000000000000000000${address.slice(2).toLowerCase()}`
}

function bytes32Word(value: Hex): string {
  if (!BYTES32.test(value)) throw new TypeError(`${value} is not 32 bytes of hex`)
  return value.slice(2).toLowerCase()
}

/** A `bytes` value's tail: its length, then its bytes padded to a whole word. */
function bytesTail(value: Hex): string {
  if (!HEX_BYTES.test(value)) throw new TypeError('not hex bytes')
  const body = value.slice(2).toLowerCase()
  const padding = (64 - (body.length % 64)) % 64
  return `${uintWord(BigInt(body.length / 2))}${body}${ZEROS.slice(0, padding)}`
}
