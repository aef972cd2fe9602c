import type { KeyValueStore } from '../stores/store.js'
import { resourceId } from './resource-name.js'

/**
 * Which payTo a catalog entry belongs to.
 *
 * Any client can settle a payment that names any resource URL, so the URL
 * alone says nothing about who owns the entry. The catalog binds each URL to
 * the first payTo a payment for it settled to; payments to any other payTo
 * under that URL are ignored: they never count in its trust score, nor change
 * its requirements, description or name. An operator can pin a URL to its
 * payTo (one per network, when they differ): the pin wins over any binding.
 *
 * Why one binding per URL and not one entry per (URL, payTo): an entry per
 * payTo would still list the attacker's payTo under the victim's URL, which is
 * the poisoning itself. Why not one binding per network: an attacker could then
 * bind the networks the owner does not use. The price is that a resource whose
 * payTo differs between networks (EVM and Solana addresses always do) lists only
 * the payTo it was bound to, until its operator pins the others.
 */
export const catalogPayToKey = (id: string) => `catalog:payto:${id}`

/** A resource URL and the payTo an operator fixes for it. */
export interface PayToPin {
  url: string
  /** The address payments must go to, or one per network; absent: bound by the first settled payment. */
  payTo?: string | readonly string[]
}

/**
 * What a payment may do to the entry of its resource:
 * - `owner`: it went to the entry's payTo (or just bound a free URL to it) and counts;
 * - `takeover`: it went to a pinned payTo of a URL bound to another payTo before the pin:
 *   the entry is now the pinned payTo's, and what the other one left must be cleared;
 * - `ignored`: another payTo's payment, or a failure that cannot bind.
 */
export type PayToClaim = 'owner' | 'takeover' | 'ignored'

export interface PayToBinding {
  /** Binds `id` to `payTo` when free (a settled payment only) and tells what the payment may do. */
  claim(id: string, payTo: string, settled: boolean): Promise<PayToClaim>
  /** Whether the data stored under `id` is its pinned payTo's (always true without a pin). */
  holdsPinnedOwner(id: string): Promise<boolean>
}

/**
 * The binding rule over a store; shared stores make one binding for every
 * instance (the claim is an atomic set-if-absent).
 *
 * @example
 * const binding = createPayToBinding(store, [{ url: 'https://api.example.com/weather', payTo: '0x…' }])
 * await binding.claim('https://api.example.com/weather', '0x…', true) // 'owner'
 */
export function createPayToBinding(store: KeyValueStore, pins: readonly PayToPin[] = []): PayToBinding {
  const pinned = new Map<string, ReadonlySet<string>>()
  for (const pin of pins) {
    const id = resourceId(pin.url)
    if (!id || pin.payTo === undefined) continue
    pinned.set(id, new Set((typeof pin.payTo === 'string' ? [pin.payTo] : pin.payTo).map(comparableAddress)))
  }

  return {
    async claim(id, rawPayTo, settled) {
      const payTo = comparableAddress(rawPayTo)
      const pin = pinned.get(id)
      if (pin && !pin.has(payTo)) return 'ignored'
      const owns = (bound: string | undefined) => bound !== undefined && (pin ? pin.has(bound) : bound === payTo)
      const key = catalogPayToKey(id)
      const bound = await store.get(key)
      if (owns(bound)) return 'owner'
      // Only money that reached a payTo binds: a failure or a verify costs the sender nothing.
      if (!settled) return 'ignored'
      if (bound === undefined) {
        if (await store.set(key, payTo, { ifAbsent: true })) return 'owner'
        // Another instance bound it first: its payTo wins.
        if (owns(await store.get(key))) return 'owner'
      }
      if (!pin) return 'ignored'
      // Bound to a payTo the operator has not pinned (bound before the pin): the pin takes it over.
      await store.set(key, payTo)
      return 'takeover'
    },
    async holdsPinnedOwner(id) {
      const pin = pinned.get(id)
      if (!pin) return true
      const bound = await store.get(catalogPayToKey(id))
      return bound !== undefined && pin.has(bound)
    },
  }
}

/** EVM addresses are one address whatever their checksum casing; other addresses (Solana) are case-sensitive. */
function comparableAddress(address: string): string {
  return /^0x[0-9a-fA-F]{40}$/.test(address) ? address.toLowerCase() : address
}
