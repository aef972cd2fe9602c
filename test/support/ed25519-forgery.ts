/**
 * Builds the Ed25519 forgery of security issue #20: R is the identity point
 * (`01 00..00`, of small order) and S = k·a mod L, with k = SHA-512(R || A || M)
 * mod L and a the signer's secret scalar. [S]B = [k·a]B = [k]A = R + [k]A, so
 * the group equation holds and OpenSSL accepts it under the signer's real key;
 * the Solana runtime (ed25519-dalek `verify_strict`) refuses a small-order R.
 *
 * @example
 * const forged = forgeSmallOrderSignature(seed, messageBytes)
 */
import { createHash } from 'node:crypto'

/** L, the order of the Ed25519 prime-order subgroup. */
export const ED25519_GROUP_ORDER = 2n ** 252n + 27742317777372353535851937790883648493n

/** The canonical encoding of the identity point: y = 1, x = 0. */
export const IDENTITY_POINT = Uint8Array.from({ length: 32 }, (_, i) => (i === 0 ? 1 : 0))

/** A 64-byte signature of `message` under the key of `seed` (RFC 8032 private key) whose R is the identity. */
export function forgeSmallOrderSignature(seed: Uint8Array, publicKey: Uint8Array, message: Uint8Array): Uint8Array {
  const h = createHash('sha512').update(seed).digest()
  const clamped = Uint8Array.from(h.subarray(0, 32))
  clamped[0]! &= 248
  clamped[31]! &= 127
  clamped[31]! |= 64
  const a = littleEndianToBigInt(clamped)
  const k = littleEndianToBigInt(createHash('sha512').update(IDENTITY_POINT).update(publicKey).update(message).digest()) % ED25519_GROUP_ORDER
  const s = (k * a) % ED25519_GROUP_ORDER
  const signature = new Uint8Array(64)
  signature.set(IDENTITY_POINT, 0)
  signature.set(bigIntToLittleEndian(s, 32), 32)
  return signature
}

export function littleEndianToBigInt(bytes: Uint8Array): bigint {
  let value = 0n
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!)
  return value
}

export function bigIntToLittleEndian(value: bigint, length: number): Uint8Array {
  const bytes = new Uint8Array(length)
  for (let i = 0; i < length; i++) {
    bytes[i] = Number(value & 0xffn)
    value >>= 8n
  }
  return bytes
}
