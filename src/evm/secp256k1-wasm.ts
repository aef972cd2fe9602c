/** The optional WebAssembly build of libsecp256k1 (`tiny-secp256k1`). */
export type TinySecp256k1 = typeof import('tiny-secp256k1')

// The one module-level cache of the library: the WebAssembly module takes ~100 ms to compile,
// so it is loaded once, on first use, and shared. It holds no payment state, so two
// facilitators in one process cannot affect each other through it.
let loading: Promise<TinySecp256k1 | undefined> | undefined

/**
 * `tiny-secp256k1` when the optional dependency is installed (and WebAssembly
 * runs here), `undefined` otherwise: callers then use viem's pure-JS code.
 */
export function loadTinySecp256k1(): Promise<TinySecp256k1 | undefined> {
  loading ??= import('tiny-secp256k1').then(
    (secp) => secp,
    () => undefined,
  )
  return loading
}
