import { checksumAddress, hexToBytes, keccak256, recoverAddress, type Address, type Hex } from 'viem'
import { loadTinySecp256k1 } from './secp256k1-wasm.js'

/** Recovers the uncompressed (65-byte) public key, or `null` when the signature recovers no point. */
type RecoverPublicKey = (hash: Uint8Array, compact: Uint8Array, recoveryId: 0 | 1) => Uint8Array | null

/** Which implementation recovers signers in this process. */
export type RecoveryBackend = 'tiny-secp256k1' | 'viem'

async function loadFastPath(): Promise<RecoverPublicKey | undefined> {
  const secp = await loadTinySecp256k1()
  // Not installed (or no WebAssembly): viem's pure-JS recovery serves instead.
  return secp ? (hash, compact, recoveryId) => secp.recover(hash, compact, recoveryId, false) : undefined
}

/**
 * The backend `recoverAuthorizationSigner` uses here: `tiny-secp256k1`
 * (WebAssembly, ~0.3 ms) when the optional dependency is installed, viem's
 * pure-JS recovery (~2.5 ms) otherwise.
 */
export async function recoveryBackend(): Promise<RecoveryBackend> {
  return (await loadFastPath()) ? 'tiny-secp256k1' : 'viem'
}

/**
 * The address whose key produced a 65-byte ECDSA signature over `digest`, or
 * `undefined` when the bytes are no valid signature. This is the CPU hot spot
 * of verify: it uses the WebAssembly build of libsecp256k1 when available and
 * viem otherwise, with the same answers (checked against viem in
 * test/evm/recover-signer.test.ts): `v` may be 0, 1, 27 or 28, `r` and `s`
 * must lie in [1, n), high-s is recovered as viem does (the token contract
 * decides whether it accepts it).
 *
 * @example
 * const signer = await recoverAuthorizationSigner(hashAuthorization(domain, message), signature)
 */
export async function recoverAuthorizationSigner(digest: Hex, signature: Hex): Promise<Address | undefined> {
  // Only plain 65-byte (r, s, v) signatures can belong to an externally owned account.
  if (signature.length !== 132) return undefined
  const recover = await loadFastPath()
  if (!recover) return recoverWithViem(digest, signature)
  const recoveryId = toRecoveryId(Number.parseInt(signature.slice(130), 16))
  if (recoveryId === undefined) return undefined
  try {
    const publicKey = recover(hexToBytes(digest), hexToBytes(`0x${signature.slice(2, 130)}`), recoveryId)
    if (!publicKey || publicKey.length !== 65) return undefined
    return checksumAddress(`0x${keccak256(publicKey.subarray(1)).slice(26)}`)
  } catch {
    // Out-of-range r or s, or an r that is no curve point.
    return undefined
  }
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
