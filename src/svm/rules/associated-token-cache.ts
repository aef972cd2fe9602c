import type { Address } from '@solana/kit'
import { findAssociatedTokenPda } from '@solana-program/token'

/** Derives the associated token account of `owner` for a mint under a token program. */
export type AssociatedTokenAccountOf = (owner: Address, mint: Address, tokenProgram: Address) => Promise<Address>

/**
 * `findAssociatedTokenPda` behind a small LRU: deriving a PDA runs a pure-JS on-curve check per
 * bump, while a facilitator sees few distinct (payTo, mint, program) triples.
 *
 * @example
 * const ataOf = createAssociatedTokenCache(256)
 * const destination = await ataOf(payTo, mint, TOKEN_PROGRAM_ADDRESS)
 */
export function createAssociatedTokenCache(capacity = 256): AssociatedTokenAccountOf {
  const entries = new Map<string, Promise<Address>>()
  return (owner, mint, tokenProgram) => {
    const key = `${owner}:${mint}:${tokenProgram}`
    const hit = entries.get(key)
    if (hit) {
      // Map keeps insertion order: re-inserting marks the entry most recently used.
      entries.delete(key)
      entries.set(key, hit)
      return hit
    }
    const derived = findAssociatedTokenPda({ owner, mint, tokenProgram }).then(([address]) => address)
    entries.set(key, derived)
    derived.catch(() => entries.delete(key))
    if (entries.size > capacity) {
      const oldest = entries.keys().next().value
      if (oldest !== undefined) entries.delete(oldest)
    }
    return derived
  }
}
