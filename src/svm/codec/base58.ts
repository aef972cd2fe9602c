const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
/** 58^5: five base58 digits per limb keeps limb x 256 + carry below 2^53, exact in a double. */
const LIMB = 656_356_768
const DIGITS_PER_LIMB = 5

/**
 * Base58 (Bitcoin alphabet) text of `bytes`: how Solana writes addresses and signatures.
 * Works in limbs of five digits rather than through BigInt (see docs/benchmarks.md, Solana notes).
 *
 * @example
 * encodeBase58(new Uint8Array(32)) // '11111111111111111111111111111111'
 */
export function encodeBase58(bytes: Uint8Array): string {
  let zeros = 0
  while (zeros < bytes.length && bytes[zeros] === 0) zeros += 1
  // Little-endian limbs of the number the bytes spell (big-endian).
  const limbs: number[] = []
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!
    for (let j = 0; j < limbs.length; j++) {
      const value = limbs[j]! * 256 + carry
      carry = Math.floor(value / LIMB)
      limbs[j] = value - carry * LIMB
    }
    while (carry > 0) {
      const next = Math.floor(carry / LIMB)
      limbs.push(carry - next * LIMB)
      carry = next
    }
  }
  let text = ''
  for (let j = 0; j < limbs.length; j++) {
    let limb = limbs[j]!
    // The top limb drops its leading zero digits; the others keep all five.
    for (let d = 0; d < DIGITS_PER_LIMB && (limb > 0 || j < limbs.length - 1); d++) {
      const next = Math.floor(limb / 58)
      text = ALPHABET[limb - next * 58]! + text
      limb = next
    }
  }
  return '1'.repeat(zeros) + text
}
