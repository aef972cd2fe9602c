import { hexToBytes, recoverAddress, type Address, type Hex } from 'viem'
import { checksummed, keccak256 } from './keccak.js'
import { loadSecp256k1, type Secp256k1, type Secp256k1Name } from './secp256k1-backend.js'

/** Which implementation recovers signers in this process. */
export type RecoveryBackend = Secp256k1Name | 'viem'

/**
 * The backend `recoverAuthorizationSigner` uses here: native `secp256k1`
 * (~0.05 ms) or `tiny-secp256k1` (WebAssembly, ~0.2 ms) when one is installed,
 * viem's pure-JS recovery (~2.5 ms) otherwise.
 */
export async function recoveryBackend(): Promise<RecoveryBackend> {
  return (await loadSecp256k1())?.name ?? 'viem'
}

/**
 * The address whose key produced a 65-byte ECDSA signature over `digest`, or
 * `undefined` when the bytes are no valid signature. This is the CPU hot spot
 * of verify: it uses libsecp256k1 when an optional package provides it and
 * viem otherwise, with the same answers (checked against viem in
 * test/evm/recover-signer.test.ts): `v` may be 0, 1, 27 or 28, `r` and `s`
 * must lie in [1, n), high-s is recovered as viem does (the token contract
 * decides whether it accepts it).
 *
 * @example
 * const signer = await recoverAuthorizationSigner(hashAuthorization(domain, message), signature)
 */
export async function recoverAuthorizationSigner(digest: Hex, signature: Hex): Promise<Address | undefined> {
  return recoverWith(await loadSecp256k1(), digest, signature)
}

/** {@link recoverAuthorizationSigner} on a given backend (viem's code when none). */
export async function recoverWith(secp: Secp256k1 | undefined, digest: Hex, signature: Hex): Promise<Address | undefined> {
  // Only plain 65-byte (r, s, v) signatures can belong to an externally owned account.
  if (signature.length !== 132) return undefined
  if (!secp) return recoverWithViem(digest, signature)
  const vHex = signature.slice(130)
  const recoveryId = /^[0-9a-fA-F]{2}$/.test(vHex) ? toRecoveryId(Number.parseInt(vHex, 16)) : undefined
  if (recoveryId === undefined) return undefined
  let publicKey: Uint8Array | null
  try {
    publicKey = secp.recover(hexToBytes(digest), hexToBytes(`0x${signature.slice(2, 130)}`), recoveryId)
  } catch {
    // hexToBytes refuses characters that are not hex.
    return undefined
  }
  if (!publicKey || publicKey.length !== 65) return undefined
  return checksummed(keccak256(publicKey.subarray(1), 'bytes').subarray(12))
}

/** viem's recovery: the reference the fast path must agree with. */
export async function recoverWithViem(digest: Hex, signature: Hex): Promise<Address | undefined> {
  if (signature.length !== 132) return undefined
  try {
    return await recoverAddress({ hash: digest, signature })
  } catch {
    return undefined
  }
}

// The `v` values viem accepts for a 65-byte signature.
function toRecoveryId(v: number): 0 | 1 | undefined {
  if (v === 0 || v === 27) return 0
  if (v === 1 || v === 28) return 1
  return undefined
}
