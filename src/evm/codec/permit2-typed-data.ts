import { hashTypedData, isAddress, stringToBytes, type Address, type Hex } from 'viem'
import { keccak256 } from '../crypto/keccak.js'
import { PERMIT2_ADDRESS, permitWitnessTransferFromTypes, uptoPermitWitnessTransferFromTypes } from './permit2-abi.js'
import { eip712Digest, isUint256, writeAddress, writeUint } from './typed-data.js'

/** The signed fields of a Permit2 `PermitWitnessTransferFrom`; `facilitator` present for the upto witness. */
export interface Permit2WitnessMessage {
  readonly token: Address
  readonly amount: bigint
  readonly spender: Address
  readonly nonce: bigint
  readonly deadline: bigint
  readonly to: Address
  readonly validAfter: bigint
}

export interface UptoWitnessMessage extends Permit2WitnessMessage {
  readonly facilitator: Address
}

type Types = Readonly<Record<string, readonly { readonly name: string; readonly type: string }[]>>

/** EIP-712 `encodeType` of the primary type: itself, then the struct types it references, sorted by name. */
function encodeType(types: Types, primary: string): string {
  const struct = (name: string) => `${name}(${types[name]!.map((field) => `${field.type} ${field.name}`).join(',')})`
  const referenced = new Set<string>()
  const walk = (name: string) => {
    for (const field of types[name]!) {
      if (field.type in types && field.type !== primary && !referenced.has(field.type)) {
        referenced.add(field.type)
        walk(field.type)
      }
    }
  }
  walk(primary)
  return [primary, ...[...referenced].sort()].map(struct).join('')
}

const typeHash = (types: Types, primary: string) => keccak256(stringToBytes(encodeType(types, primary)), 'bytes')

// Computed once, from the same type tables the signer and viem use (permit2-abi.ts).
const DOMAIN_TYPE_HASH = keccak256(stringToBytes('EIP712Domain(string name,uint256 chainId,address verifyingContract)'), 'bytes')
const PERMIT2_NAME_HASH = keccak256(stringToBytes('Permit2'), 'bytes')
const TOKEN_PERMISSIONS_TYPE_HASH = typeHash(permitWitnessTransferFromTypes, 'TokenPermissions')
const EXACT_TYPE_HASH = typeHash(permitWitnessTransferFromTypes, 'PermitWitnessTransferFrom')
const EXACT_WITNESS_TYPE_HASH = typeHash(permitWitnessTransferFromTypes, 'Witness')
const UPTO_TYPE_HASH = typeHash(uptoPermitWitnessTransferFromTypes, 'PermitWitnessTransferFrom')
const UPTO_WITNESS_TYPE_HASH = typeHash(uptoPermitWitnessTransferFromTypes, 'Witness')

/** Permit2's domain separator per chain id (its address is fixed): one of a facilitator's handful of chains. */
const domainSeparators = new Map<number, Uint8Array>()
const DOMAIN_CACHE_SIZE = 256

function permit2DomainSeparator(chainId: number): Uint8Array {
  let separator = domainSeparators.get(chainId)
  if (separator) return separator
  const words = new Uint8Array(4 * 32)
  words.set(DOMAIN_TYPE_HASH, 0)
  words.set(PERMIT2_NAME_HASH, 32)
  writeUint(words, 64, BigInt(chainId))
  writeAddress(words, 96, PERMIT2_ADDRESS)
  separator = keccak256(words, 'bytes')
  if (domainSeparators.size >= DOMAIN_CACHE_SIZE) domainSeparators.clear()
  domainSeparators.set(chainId, separator)
  return separator
}

/** viem's typed data of a Permit2 exact payment: the reference, and the path for input out of shape. */
export function permit2TypedData(chainId: number, m: Permit2WitnessMessage) {
  return {
    domain: { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS },
    types: permitWitnessTransferFromTypes,
    primaryType: 'PermitWitnessTransferFrom' as const,
    message: { permitted: { token: m.token, amount: m.amount }, spender: m.spender, nonce: m.nonce, deadline: m.deadline, witness: { to: m.to, validAfter: m.validAfter } },
  }
}

/** viem's typed data of an upto payment (the witness names the facilitator). */
export function uptoTypedData(chainId: number, m: UptoWitnessMessage) {
  return {
    domain: { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS },
    types: uptoPermitWitnessTransferFromTypes,
    primaryType: 'PermitWitnessTransferFrom' as const,
    message: {
      permitted: { token: m.token, amount: m.amount },
      spender: m.spender,
      nonce: m.nonce,
      deadline: m.deadline,
      witness: { to: m.to, facilitator: m.facilitator, validAfter: m.validAfter },
    },
  }
}

/**
 * The EIP-712 digest Permit2 checks for an exact payment's `PermitWitnessTransferFrom` with the
 * witness `Witness(address to,uint256 validAfter)`, encoded in its fixed layout: four keccaks over
 * word buffers, the type hashes computed once and Permit2's domain separator kept per chain.
 * viem's generic `hashTypedData` is the reference (test/evm/permit2-typed-data.test.ts holds both
 * to the same digest on random messages) and still answers (or throws) for input out of shape.
 * About a tenth of viem's time (see docs/benchmarks.md, "Notes on the EVM path").
 */
export function hashPermit2Witness(chainId: number, m: Permit2WitnessMessage): Hex {
  if (!fitsFastPath(chainId, m) || !isAddress(m.to)) return hashTypedData(permit2TypedData(chainId, m))
  const witness = new Uint8Array(3 * 32)
  witness.set(EXACT_WITNESS_TYPE_HASH, 0)
  writeAddress(witness, 32, m.to)
  writeUint(witness, 64, m.validAfter)
  return digestOf(chainId, EXACT_TYPE_HASH, m, keccak256(witness, 'bytes'))
}

/**
 * The same for an upto payment, witness `Witness(address to,address facilitator,uint256 validAfter)`.
 */
export function hashUptoWitness(chainId: number, m: UptoWitnessMessage): Hex {
  if (!fitsFastPath(chainId, m) || !isAddress(m.to) || !isAddress(m.facilitator)) return hashTypedData(uptoTypedData(chainId, m))
  const witness = new Uint8Array(4 * 32)
  witness.set(UPTO_WITNESS_TYPE_HASH, 0)
  writeAddress(witness, 32, m.to)
  writeAddress(witness, 64, m.facilitator)
  writeUint(witness, 96, m.validAfter)
  return digestOf(chainId, UPTO_TYPE_HASH, m, keccak256(witness, 'bytes'))
}

function digestOf(chainId: number, primaryTypeHash: Uint8Array, m: Permit2WitnessMessage, witnessHash: Uint8Array): Hex {
  const permissions = new Uint8Array(3 * 32)
  permissions.set(TOKEN_PERMISSIONS_TYPE_HASH, 0)
  writeAddress(permissions, 32, m.token)
  writeUint(permissions, 64, m.amount)

  const struct = new Uint8Array(6 * 32)
  struct.set(primaryTypeHash, 0)
  struct.set(keccak256(permissions, 'bytes'), 32)
  writeAddress(struct, 64, m.spender)
  writeUint(struct, 96, m.nonce)
  writeUint(struct, 128, m.deadline)
  struct.set(witnessHash, 160)

  return eip712Digest(permit2DomainSeparator(chainId), keccak256(struct, 'bytes'))
}

function fitsFastPath(chainId: number, m: Permit2WitnessMessage): boolean {
  return (
    Number.isSafeInteger(chainId) &&
    chainId >= 0 &&
    // viem's own (cached) check: a mixed-case address must match its checksum, or viem throws.
    isAddress(m.token) &&
    isAddress(m.spender) &&
    isUint256(m.amount) &&
    isUint256(m.nonce) &&
    isUint256(m.deadline) &&
    isUint256(m.validAfter)
  )
}

