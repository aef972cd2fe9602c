import type { ReadonlyUint8Array } from '@solana/kit'

/**
 * The y-coordinates (little-endian, sign bit cleared) of the eight points of
 * small order on edwards25519: y = 1 (the identity), y = p - 1 (order 2),
 * y = 0 (order 4) and the two y of the order-8 points. Each y stands for
 * both signs of x, so these five cover every canonical encoding of the
 * torsion points and the two with x = 0 whose sign bit is set; the encodings
 * with y >= p (p and p + 1) are caught by {@link isCanonicalEd25519Point}.
 */
const SMALL_ORDER_Y: readonly Uint8Array[] = [
  '0100000000000000000000000000000000000000000000000000000000000000',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  '0000000000000000000000000000000000000000000000000000000000000000',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
].map((hex) => Uint8Array.from(Buffer.from(hex, 'hex')))

/** L, the order of the prime-order subgroup, little-endian. */
const GROUP_ORDER = Uint8Array.from(Buffer.from('edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010', 'hex'))

/**
 * Whether 32 bytes encode one of the eight small-order points, in any encoding
 * (either sign bit; non-canonical y >= p is refused separately).
 *
 * @example
 * isSmallOrderEd25519Point(new Uint8Array(32)) // true: y = 0, a point of order 4
 */
export function isSmallOrderEd25519Point(point: ReadonlyUint8Array): boolean {
  if (point.length !== 32) return false
  outer: for (const y of SMALL_ORDER_Y) {
    for (let i = 0; i < 31; i++) if (point[i] !== y[i]) continue outer
    if ((point[31]! & 0x7f) === y[31]) return true
  }
  return false
}

/**
 * Whether the y-coordinate of a point encoding is below p = 2^255 - 19. With
 * the sign bit cleared, y >= p only when it is one of p .. 2^255 - 1: bytes 1
 * to 30 all 0xff, the top byte 0x7f and the first at least 0xed.
 *
 * @example
 * isCanonicalEd25519Point(Uint8Array.from({ length: 32 }, (_, i) => (i === 31 ? 0x7f : 0xff))) // false
 */
export function isCanonicalEd25519Point(point: ReadonlyUint8Array): boolean {
  if (point.length !== 32) return false
  if ((point[31]! & 0x7f) !== 0x7f) return true
  for (let i = 30; i >= 1; i--) if (point[i] !== 0xff) return true
  return point[0]! < 0xed
}

/**
 * Whether a little-endian 32-byte scalar is below the group order L (a
 * signature's S must be; otherwise S + L would be a second valid signature).
 *
 * @example
 * isCanonicalEd25519Scalar(new Uint8Array(32)) // true
 */
export function isCanonicalEd25519Scalar(scalar: ReadonlyUint8Array): boolean {
  if (scalar.length !== 32) return false
  for (let i = 31; i >= 0; i--) {
    if (scalar[i]! < GROUP_ORDER[i]!) return true
    if (scalar[i]! > GROUP_ORDER[i]!) return false
  }
  return false
}

/**
 * Whether a public key may sign under the Solana runtime's rules (ed25519-dalek
 * `verify_strict`, stricter than OpenSSL): a canonical encoding of a point that
 * is not of small order. Whether it is a curve point at all is left to the
 * key import.
 */
export function isStrictEd25519PublicKey(publicKey: ReadonlyUint8Array): boolean {
  return isCanonicalEd25519Point(publicKey) && !isSmallOrderEd25519Point(publicKey)
}

/**
 * The encoding rules a signature (R || S) must meet before the group equation
 * is worth checking, as the Solana runtime applies them: R canonical and not of
 * small order, S below L. OpenSSL accepts a small-order R (for instance the
 * identity, with S = k·a mod L), so without these a payer could hand us a
 * signature that verifies here and that the chain refuses.
 *
 * @example
 * if (!isStrictEd25519SignatureEncoding(signature)) return false
 */
export function isStrictEd25519SignatureEncoding(signature: ReadonlyUint8Array): boolean {
  if (signature.length !== 64) return false
  const r = signature.subarray(0, 32)
  return isCanonicalEd25519Scalar(signature.subarray(32, 64)) && isCanonicalEd25519Point(r) && !isSmallOrderEd25519Point(r)
}
