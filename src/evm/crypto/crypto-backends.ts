import { keccakBackend, loadKeccak } from './keccak.js'
import { recoveryBackend } from './recover-signer.js'

/** The implementations behind the EVM hot paths; see {@link cryptoBackends}. */
export interface CryptoBackends {
  /** Signer recovery and `privateKeySigner`: native `secp256k1`, `tiny-secp256k1` (WebAssembly) or viem's pure JS. */
  readonly signatures: 'secp256k1' | 'tiny-secp256k1' | 'viem'
  /** Keccak-256 of digests, addresses and transactions: `hash-wasm` (WebAssembly) or viem's pure JS. */
  readonly keccak: 'hash-wasm' | 'viem'
}

/**
 * Which implementations sign, recover and hash in this process, once the
 * optional packages have loaded: a way to check an install (the fast ones are
 * several times cheaper; see the README's "Speed").
 *
 * @example
 * import { cryptoBackends } from 'x402-facilitator/evm'
 *
 * console.log(await cryptoBackends()) // { signatures: 'tiny-secp256k1', keccak: 'hash-wasm' }
 */
export async function cryptoBackends(): Promise<CryptoBackends> {
  await loadKeccak()
  return { signatures: await recoveryBackend(), keccak: keccakBackend() }
}
