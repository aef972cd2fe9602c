import { bytesToHex, hexToBytes, keccak256 as keccakWithViem, type Address, type Hex } from 'viem'

/**
 * Keccak-256 for the hot paths (the authorization digest, the recovered
 * address, the transaction to sign and its hash): on the WebAssembly build of
 * the optional package `hash-wasm` once it has loaded, about 15x faster than
 * viem's pure-JS code for a transaction's bytes here, and on viem's code before
 * that or without the package. Both compute the same function
 * (test/evm/keccak.test.ts holds the WebAssembly one to viem's answers).
 */

/** The part of hash-wasm's hasher used here. */
interface Hasher {
  init(): unknown
  update(data: Uint8Array): unknown
  digest(format: 'binary'): Uint8Array
}

const HEX = /^0x[0-9a-fA-F]*$/

// One hasher for the process: it is used synchronously from start to digest, so calls never interleave.
let hasher: Hasher | undefined
let loading: Promise<void> | undefined

/**
 * Starts loading the WebAssembly hasher (once per process; it compiles in a few
 * milliseconds). Calls made before it is ready use viem's code.
 */
export function loadKeccak(): Promise<void> {
  loading ??= import('hash-wasm')
    .then(async (module) => {
      hasher = (await module.createKeccak(256)) as Hasher
    })
    // Not installed, or no WebAssembly here (node --jitless): viem's code serves.
    .catch(() => undefined)
  return loading
}

/** Which implementation hashes now. */
export function keccakBackend(): 'hash-wasm' | 'viem' {
  return hasher ? 'hash-wasm' : 'viem'
}

/**
 * Keccak-256 of bytes, or of the bytes a `0x` hex string spells. Any other string
 * throws (viem's own `keccak256` would hash something else for it).
 */
export function keccak256(data: Uint8Array | Hex): Hex
export function keccak256(data: Uint8Array | Hex, to: 'bytes'): Uint8Array
export function keccak256(data: Uint8Array | Hex, to?: 'bytes'): Hex | Uint8Array {
  if (typeof data === 'string' && !HEX.test(data)) throw new TypeError('keccak256: expected 0x-prefixed hex')
  const bytes = typeof data === 'string' ? hexToBytes(data) : data
  if (!hasher) return to === 'bytes' ? keccakWithViem(bytes, 'bytes') : keccakWithViem(bytes)
  hasher.init()
  hasher.update(bytes)
  const digest = hasher.digest('binary')
  return to === 'bytes' ? digest : bytesToHex(digest)
}

/** The EIP-55 checksummed form of 20 address bytes. */
export function checksummed(address: Uint8Array): Address {
  const lower = bytesToHex(address).slice(2)
  const hash = keccak256(new TextEncoder().encode(lower), 'bytes')
  let out = '0x'
  for (let i = 0; i < 40; i++) {
    const char = lower[i]!
    // A letter is upper case where the matching nibble of the hash is 8 or more.
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f
    out += nibble >= 8 ? char.toUpperCase() : char
  }
  return out as Address
}
