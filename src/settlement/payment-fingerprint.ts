import type { PaymentContext } from '../core/adapter.js'

/**
 * What one payment is, beyond its settlement key: network, asset, recipient,
 * amount (for `upto`, the usage the settle request charges: the same permit
 * charged another usage is another payment) and the scheme payload. Two requests with the same key (the same EVM
 * authorization nonce, the same Solana message) but a different fingerprint
 * are different payments, and the second is never answered with the first's
 * settlement. Hex strings are compared case-insensitively and object keys in
 * any order, as clients vary in both.
 */
export async function paymentFingerprint(ctx: PaymentContext): Promise<string> {
  const text = JSON.stringify(
    canonical({ network: ctx.network, asset: ctx.asset, payTo: ctx.payTo, amount: ctx.amount.toString(), payload: ctx.payload.payload }),
  )
  if (nodeSha256) return nodeSha256(text)
  // The core also runs in workers and edge runtimes, where WebCrypto is what there is.
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  let hex = ''
  for (const byte of new Uint8Array(digest)) hex += byte.toString(16).padStart(2, '0')
  return hex
}

type NodeCrypto = { createHash(algorithm: string): { update(text: string): { digest(encoding: 'hex'): string } } }

// Node's own hash when the runtime offers it without an import (Node 20.16 and later): WebCrypto's
// digest is a round trip through the thread pool, about 40 µs of a settle against a few for this.
const nodeSha256 = (() => {
  const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
  const nodeCrypto = typeof runtime?.getBuiltinModule === 'function' ? (runtime.getBuiltinModule('node:crypto') as NodeCrypto | undefined) : undefined
  return nodeCrypto ? (text: string) => nodeCrypto.createHash('sha256').update(text).digest('hex') : undefined
})()

function canonical(value: unknown): unknown {
  if (typeof value === 'string') return /^0x[0-9a-fA-F]*$/.test(value) ? value.toLowerCase() : value
  if (Array.isArray(value)) return value.map(canonical)
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) out[key] = canonical((value as Record<string, unknown>)[key])
    return out
  }
  return value
}
