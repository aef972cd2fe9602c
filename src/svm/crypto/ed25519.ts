import { createPublicKey, KeyObject, sign, verify } from 'node:crypto'
import { type Address, getAddressEncoder, type ReadonlyUint8Array, type SignatureBytes, type TransactionPartialSigner } from '@solana/kit'
import { decodeBase58 } from '../codec/base58.js'
import { isStrictEd25519PublicKey, isStrictEd25519SignatureEncoding } from './ed25519-strict.js'

/** What a fee payer signs, and what its signatures look like: kit's partial-signer types. */
type SignableTransaction = Parameters<TransactionPartialSigner['signTransactions']>[0][number]
type SignatureDictionary = Awaited<ReturnType<TransactionPartialSigner['signTransactions']>>[number]

/** Most payer keys an {@link Ed25519Verifier} keeps imported. */
const KEY_CACHE_SIZE = 4_096

/** Checks Ed25519 signatures by Solana address. */
export type Ed25519Verifier = (address: Address, message: ReadonlyUint8Array, signature: ReadonlyUint8Array) => boolean

/**
 * A checker of Ed25519 signatures with the Solana runtime's strict semantics (ed25519-dalek
 * `verify_strict`): canonical key and R not of small order, S below L (byte compares), then the
 * equation on Node's native Ed25519. OpenSSL alone accepts a small-order R, which the chain
 * refuses. Imported keys are kept (up to 4,096 payers). Verify checks the payer's signature with
 * it, so the RPC simulates the payer-signed bytes (`sigVerify: false`) and never sees ours.
 *
 * @example
 * const verifySignature = createEd25519Verifier()
 * verifySignature(payer, transaction.messageBytes, transaction.signatures[payer]!)
 */
export function createEd25519Verifier(): Ed25519Verifier {
  const keys = new Map<Address, KeyObject | null>()
  const keyOf = (address: Address): KeyObject | null => {
    let key = keys.get(address)
    if (key !== undefined) return key
    try {
      // Our decoder, not kit's address codec: ~2 µs instead of ~20 for each new payer. Not 32 bytes: no key.
      const decoded = address.length >= 32 && address.length <= 44 ? decodeBase58(address) : undefined
      const bytes = decoded?.length === 32 ? decoded : undefined
      // A small-order or non-canonical key signs nothing the chain accepts; remembered as such, like a non-point.
      if (bytes && isStrictEd25519PublicKey(bytes)) {
        // A JWK imports faster than the equivalent DER SubjectPublicKeyInfo.
        key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(bytes).toString('base64url') }, format: 'jwk' })
      } else {
        key = null
      }
    } catch {
      // Not a curve point: it cannot have signed anything.
      key = null
    }
    // Bounded whatever the traffic: a full cache starts over.
    if (keys.size >= KEY_CACHE_SIZE) keys.clear()
    keys.set(address, key)
    return key
  }
  return (address, message, signature) => {
    if (!isStrictEd25519SignatureEncoding(signature)) return false
    const key = keyOf(address)
    if (!key) return false
    try {
      return verify(null, viewOf(message), key, viewOf(signature))
    } catch {
      return false
    }
  }
}

/** Signs transactions as one fee payer. */
export type FeePayerSigning = (transaction: SignableTransaction) => Promise<SignatureDictionary>

/**
 * How a fee payer signs: a kit `KeyPairSigner` on Node's native Ed25519, synchronously (kit's path
 * derives the address through WebCrypto on every call), when its key provably is the signer's
 * (its public key is the address); any other signer through its own `signTransactions`.
 *
 * @example
 * const signing = feePayerSigning(await createKeyPairSignerFromBytes(secret))
 * const signatures = await signing(transaction)
 */
export function feePayerSigning(signer: TransactionPartialSigner): FeePayerSigning {
  const key = nativeKeyOf(signer)
  if (!key) {
    return async (transaction) => {
      const [signatures] = await signer.signTransactions([transaction])
      if (!signatures) throw new Error('the fee payer signer returned no signatures')
      return signatures
    }
  }
  const address = signer.address
  return async (transaction) => ({ [address]: new Uint8Array(sign(null, viewOf(transaction.messageBytes), key)) as SignatureBytes })
}

function nativeKeyOf(signer: TransactionPartialSigner): KeyObject | undefined {
  const privateKey = (signer as { keyPair?: { privateKey?: unknown } }).keyPair?.privateKey
  if (!(privateKey instanceof CryptoKey) || privateKey.algorithm.name !== 'Ed25519' || privateKey.type !== 'private') return undefined
  try {
    const key = KeyObject.from(privateKey)
    const x = createPublicKey(key).export({ format: 'jwk' }).x
    const expected = Buffer.from(getAddressEncoder().encode(signer.address)).toString('base64url')
    return x === expected ? key : undefined
  } catch {
    return undefined
  }
}

/** A Buffer over the same bytes (no copy), the type node:crypto takes. */
function viewOf(bytes: ReadonlyUint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
