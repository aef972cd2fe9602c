import type { Address } from '@solana/kit'

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
/** 58^5: five base58 digits per limb keeps limb x 256 + carry below 2^53, exact in a double. */
const LIMB = 656_356_768
const DIGITS_PER_LIMB = 5

/** Most 32-byte texts {@link encodeBase58} keeps; a full cache starts over. */
const ADDRESS_CACHE_SIZE = 8_192
// Addresses repeat from payment to payment (programs, mints, fee payers, payees, a payer's accounts,
// the blockhash of the moment): their text is kept, keyed by the bytes themselves (latin1, a copy).
const addressTexts = new Map<string, string>()

/**
 * Base58 (Bitcoin alphabet) text of `bytes`: how Solana writes addresses and signatures.
 * Works in limbs of five digits rather than through BigInt (see docs/benchmarks.md, Solana notes);
 * the text of a 32-byte value (an address, a blockhash) seen lately is looked up instead.
 *
 * @example
 * encodeBase58(new Uint8Array(32)) // '11111111111111111111111111111111'
 */
export function encodeBase58(bytes: Uint8Array): string {
  if (bytes.length !== 32) return encodeDigits(bytes)
  const key = Buffer.from(bytes.buffer, bytes.byteOffset, 32).toString('latin1')
  let text = addressTexts.get(key)
  if (text === undefined) {
    text = encodeDigits(bytes)
    if (addressTexts.size >= ADDRESS_CACHE_SIZE) addressTexts.clear()
    addressTexts.set(key, text)
  }
  return text
}

function encodeDigits(bytes: Uint8Array): string {
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

/** Each character's digit value, -1 outside the alphabet. */
const DIGIT = new Int8Array(128).fill(-1)
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i
/** 2^24: three bytes per limb keeps limb x 58 + carry below 2^53, exact in a double. */
const BYTE_LIMB = 16_777_216

/**
 * The bytes base58 `text` spells (Bitcoin alphabet), or `undefined` when a character is outside
 * the alphabet. The inverse of {@link encodeBase58}: each leading '1' is a zero byte. In limbs,
 * not BigInt: kit's codec takes ~20 µs for an address, this ~2 µs (see docs/benchmarks.md).
 *
 * @example
 * decodeBase58('11111111111111111111111111111111') // 32 zero bytes
 */
export function decodeBase58(text: string): Uint8Array | undefined {
  let zeros = 0
  while (zeros < text.length && text.charCodeAt(zeros) === 49 /* '1' */) zeros += 1
  // Little-endian limbs of three bytes each.
  const limbs: number[] = []
  for (let i = zeros; i < text.length; i++) {
    const code = text.charCodeAt(i)
    let carry = code < 128 ? DIGIT[code]! : -1
    if (carry < 0) return undefined
    for (let j = 0; j < limbs.length; j++) {
      const value = limbs[j]! * 58 + carry
      carry = Math.floor(value / BYTE_LIMB)
      limbs[j] = value - carry * BYTE_LIMB
    }
    if (carry > 0) limbs.push(carry)
  }
  const bytes: number[] = []
  for (let j = 0; j < limbs.length; j++) {
    let limb = limbs[j]!
    // The top limb drops its leading zero bytes; the others keep all three.
    for (let b = 0; b < 3 && (limb > 0 || j < limbs.length - 1); b++) {
      bytes.push(limb & 0xff)
      limb = Math.floor(limb / 256)
    }
  }
  const out = new Uint8Array(zeros + bytes.length)
  for (let i = 0; i < bytes.length; i++) out[out.length - 1 - i] = bytes[i]!
  return out
}

/**
 * Whether `text` is a Solana address: 32 to 44 base58 characters spelling exactly 32 bytes (what
 * kit's `isAddress` checks, without its BigInt codec).
 *
 * @example
 * isSolanaAddress('11111111111111111111111111111111') // true
 */
export function isSolanaAddress(text: string): text is Address {
  return text.length >= 32 && text.length <= 44 && decodeBase58(text)?.length === 32
}
