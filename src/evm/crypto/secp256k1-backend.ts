/**
 * libsecp256k1 for signer recovery and transaction signing, from whichever
 * optional package is installed: `secp256k1` (native bindings, about 4x faster
 * than WebAssembly here) first, then `tiny-secp256k1` (WebAssembly). Callers
 * fall back to viem's pure-JS code when neither loads. Both wrap the same C
 * library, so they answer alike (test/evm/recover-signer.test.ts and
 * private-key-signer.test.ts hold each to viem's answers).
 */

/** Which implementation does the work. */
export type Secp256k1Name = 'secp256k1' | 'tiny-secp256k1'

export interface Secp256k1 {
  readonly name: Secp256k1Name
  /** The 65-byte uncompressed public key, or `null` when the signature recovers none (r or s out of range, r off the curve). */
  recover(hash: Uint8Array, compact: Uint8Array, recoveryId: 0 | 1): Uint8Array | null
  /**
   * A deterministic (RFC 6979) low-s signature: 64 bytes r ‖ s, and the recovery id
   * (2 or 3 only when r overflowed the group order, a chance of about 2^-127).
   */
  sign(hash: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recoveryId: number }
}

/** The part of `secp256k1`'s native API used here. */
interface NativeBindings {
  ecdsaRecover(signature: Uint8Array, recoveryId: number, hash: Uint8Array, compressed: boolean): Uint8Array
  ecdsaSign(hash: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number }
}

type TinySecp256k1 = typeof import('tiny-secp256k1')

// The module-level caches of the library: loading opens a shared object or compiles
// WebAssembly (~100 ms), so it happens once, on first use. They hold no payment state, so two
// facilitators in one process cannot affect each other through them.
let native: Promise<Secp256k1 | undefined> | undefined
let wasm: Promise<Secp256k1 | undefined> | undefined

/** The fastest installed backend, or `undefined` (then viem's pure-JS code serves). */
export async function loadSecp256k1(): Promise<Secp256k1 | undefined> {
  native ??= loadNative()
  const found = await native
  if (found) return found
  wasm ??= loadWasm()
  return wasm
}

/** Every installed backend, fastest first (the tests hold each to viem's answers). */
export async function loadSecp256k1Backends(): Promise<Secp256k1[]> {
  native ??= loadNative()
  wasm ??= loadWasm()
  return (await Promise.all([native, wasm])).filter((backend) => backend !== undefined)
}

async function loadNative(): Promise<Secp256k1 | undefined> {
  // The bindings alone: the package's main entry would fall back to a slow pure-JS curve.
  const specifier = 'secp256k1/bindings.js'
  let bindings: NativeBindings
  try {
    const loaded = (await import(specifier)) as { default?: NativeBindings } & Partial<NativeBindings>
    bindings = (loaded.default ?? loaded) as NativeBindings
    if (typeof bindings.ecdsaRecover !== 'function' || typeof bindings.ecdsaSign !== 'function') return undefined
  } catch {
    // Not installed, or no prebuilt binary for this platform.
    return undefined
  }
  return backend(
    'secp256k1',
    (hash, compact, recoveryId) => bindings.ecdsaRecover(compact, recoveryId, hash, false),
    (hash, privateKey) => {
      const { signature, recid } = bindings.ecdsaSign(hash, privateKey)
      return { signature, recoveryId: recid }
    },
  )
}

async function loadWasm(): Promise<Secp256k1 | undefined> {
  let tiny: TinySecp256k1
  try {
    tiny = await import('tiny-secp256k1')
  } catch {
    // Not installed, or no WebAssembly here.
    return undefined
  }
  return backend(
    'tiny-secp256k1',
    (hash, compact, recoveryId) => tiny.recover(hash, compact, recoveryId, false),
    (hash, privateKey) => tiny.signRecoverable(hash, privateKey),
  )
}

/** A backend over one package's calls; a recovery that throws (r or s out of range, r off the curve) recovers nothing. */
function backend(name: Secp256k1Name, recover: Secp256k1['recover'], sign: Secp256k1['sign']): Secp256k1 {
  return {
    name,
    recover(hash, compact, recoveryId) {
      try {
        return recover(hash, compact, recoveryId)
      } catch {
        return null
      }
    },
    sign,
  }
}
