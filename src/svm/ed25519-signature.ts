import { createPublicKey, verify } from 'node:crypto'
import { type Address, getAddressEncoder, type ReadonlyUint8Array } from '@solana/kit'

/**
 * Whether `signature` is `address`'s Ed25519 signature of `message`, checked
 * with Node's native (OpenSSL) Ed25519: synchronous and far cheaper than a
 * pure-JS check. Verify checks the payer's signature with it so that the RPC
 * simulates the payer-signed transaction (`sigVerify: false`) and never sees
 * the fee payer's signature before settle sends it.
 *
 * @example
 * verifyEd25519Signature(payer, transaction.messageBytes, transaction.signatures[payer]!)
 */
export function verifyEd25519Signature(address: Address, message: ReadonlyUint8Array, signature: ReadonlyUint8Array): boolean {
  if (signature.length !== 64) return false
  try {
    // A JWK imports several times faster than the equivalent DER SubjectPublicKeyInfo.
    const x = Buffer.from(getAddressEncoder().encode(address)).toString('base64url')
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' })
    return verify(null, viewOf(message), key, viewOf(signature))
  } catch {
    // A key that is not a curve point cannot have signed anything.
    return false
  }
}

/** A Buffer over the same bytes (no copy), the type node:crypto takes. */
function viewOf(bytes: ReadonlyUint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
