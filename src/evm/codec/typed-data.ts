import { hashTypedData, isAddress, stringToBytes, type Address, type Hex } from 'viem'
import { keccak256 } from '../crypto/keccak.js'
import { transferWithAuthorizationTypes } from './abi.js'

/** The EIP-712 domain of an EIP-3009 token. */
export interface TokenDomain {
  readonly name: string
  readonly version: string
  readonly chainId: number
  /** The token contract. */
  readonly verifyingContract: Address
}

/** The signed fields of a transfer authorization. */
export interface AuthorizationMessage {
  readonly from: Address
  readonly to: Address
  readonly value: bigint
  readonly validAfter: bigint
  readonly validBefore: bigint
  readonly nonce: Hex
}

/**
 * The typed data a payer signs for EIP-3009 `TransferWithAuthorization`,
 * in the shape viem's `signTypedData` takes.
 *
 * @example
 * // partial
 * const signature = await account.signTypedData(authorizationTypedData(domain, message))
 */
export function authorizationTypedData(domain: TokenDomain, message: AuthorizationMessage) {
  return {
    domain: { ...domain },
    types: transferWithAuthorizationTypes,
    primaryType: 'TransferWithAuthorization' as const,
    message: { ...message },
  }
}

const DOMAIN_TYPE_HASH = keccak256(stringToBytes('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'), 'bytes')
const AUTHORIZATION_TYPE_HASH = keccak256(
  stringToBytes('TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)'),
  'bytes',
)
/** The largest uint256. */
export const UINT256_MAX = (1n << 256n) - 1n
/** 32 bytes as 0x-prefixed hex. */
export const BYTES32 = /^0x[0-9a-fA-F]{64}$/

/**
 * The EIP-712 digest the token checks the signature against.
 *
 * Verify computes one per payment, so the fixed EIP-3009 layout is encoded
 * directly (two 32-byte-word buffers; the domain separator is kept per token) instead of through viem's
 * generic typed-data encoder, which is several times slower. Inputs outside
 * that layout (an address failing its checksum, an out-of-range number) go to viem, which
 * answers or throws exactly as before; test/evm/recover-signer.test.ts checks
 * both paths agree.
 */
export function hashAuthorization(domain: TokenDomain, message: AuthorizationMessage): Hex {
  if (!fitsFastPath(domain, message)) return hashTypedData(authorizationTypedData(domain, message))
  const structWords = new Uint8Array(7 * 32)
  structWords.set(AUTHORIZATION_TYPE_HASH, 0)
  writeAddress(structWords, 32, message.from)
  writeAddress(structWords, 64, message.to)
  writeUint(structWords, 96, message.value)
  writeUint(structWords, 128, message.validAfter)
  writeUint(structWords, 160, message.validBefore)
  writeHex(structWords, 192, message.nonce)

  return eip712Digest(domainSeparator(domain), keccak256(structWords, 'bytes'))
}

/** The digest EIP-712 signs: keccak256 of 0x1901, the domain separator and the struct hash. */
export function eip712Digest(domainSeparator: Uint8Array, structHash: Uint8Array): Hex {
  const envelope = new Uint8Array(2 + 64)
  envelope[0] = 0x19
  envelope[1] = 0x01
  envelope.set(domainSeparator, 2)
  envelope.set(structHash, 34)
  return keccak256(envelope)
}

/** Most domain separators kept: a facilitator serves a handful of tokens. */
const DOMAIN_CACHE_SIZE = 256
const domainSeparators = new Map<string, Uint8Array>()

/** The EIP-712 domain separator, three of a digest's five keccaks, computed once per token domain. */
function domainSeparator(domain: TokenDomain): Uint8Array {
  const key = JSON.stringify([domain.chainId, domain.verifyingContract.toLowerCase(), domain.name, domain.version])
  let separator = domainSeparators.get(key)
  if (separator) return separator
  const words = new Uint8Array(5 * 32)
  words.set(DOMAIN_TYPE_HASH, 0)
  words.set(keccak256(stringToBytes(domain.name), 'bytes'), 32)
  words.set(keccak256(stringToBytes(domain.version), 'bytes'), 64)
  writeUint(words, 96, BigInt(domain.chainId))
  writeAddress(words, 128, domain.verifyingContract)
  separator = keccak256(words, 'bytes')
  // Bounded whatever the requirements name: a full cache starts over.
  if (domainSeparators.size >= DOMAIN_CACHE_SIZE) domainSeparators.clear()
  domainSeparators.set(key, separator)
  return separator
}

function fitsFastPath(domain: TokenDomain, message: AuthorizationMessage): boolean {
  return (
    typeof domain.name === 'string' &&
    typeof domain.version === 'string' &&
    Number.isSafeInteger(domain.chainId) &&
    domain.chainId >= 0 &&
    // viem's own (cached) check: a mixed-case address must match its checksum.
    isAddress(domain.verifyingContract) &&
    isAddress(message.from) &&
    isAddress(message.to) &&
    BYTES32.test(message.nonce) &&
    isUint256(message.value) &&
    isUint256(message.validAfter) &&
    isUint256(message.validBefore)
  )
}

export function isUint256(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= 0n && value <= UINT256_MAX
}

/** Writes a big-endian unsigned integer ending at the end of the 32-byte word at `offset`. */
export function writeUint(target: Uint8Array, offset: number, value: bigint): void {
  let rest = value
  for (let i = offset + 31; i >= offset && rest > 0n; i--) {
    target[i] = Number(rest & 0xffn)
    rest >>= 8n
  }
}

/** Writes the bytes of a 0x-prefixed hex string (already validated) at `offset`. */
export function writeHex(target: Uint8Array, offset: number, hex: string): void {
  for (let i = 2, o = offset; i < hex.length; i += 2, o++) target[o] = Number.parseInt(hex.slice(i, i + 2), 16)
}

/** Writes a (validated) 0x-prefixed 20-byte address right-aligned in the word at `offset`. */
export function writeAddress(target: Uint8Array, offset: number, address: string): void {
  writeHex(target, offset + 12, address)
}
