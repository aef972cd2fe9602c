import { recoverAddress, type Address, type Hex } from 'viem'

/**
 * The address whose key produced a 65-byte ECDSA signature over `digest`, or
 * `undefined` when the bytes are no valid signature. This is the CPU hot spot
 * of verify (~2 ms in pure JS): it lives alone so a faster backend (a
 * WebAssembly or native secp256k1) can replace it without touching callers.
 */
export async function recoverAuthorizationSigner(digest: Hex, signature: Hex): Promise<Address | undefined> {
  // Only plain 65-byte (r, s, v) signatures can belong to an externally owned account.
  if (signature.length !== 132) return undefined
  try {
    return await recoverAddress({ hash: digest, signature })
  } catch {
    return undefined
  }
}
