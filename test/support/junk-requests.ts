import type { RefusalKind } from '../../src/stats/refusals.js'

/**
 * Verify/settle bodies an attacker sends to grow a facilitator's metrics and statistics: random
 * networks and schemes (some 2,000+ characters, with quotes, newlines and braces), random
 * protocol versions, payloads naming other requirements, malformed bodies and unreadable
 * payloads for a served kind. Each is made from a real body of a served kind (v1 and v2), so
 * it fails on the one field changed.
 */
export interface JunkRequest {
  /** What the facilitator refuses it as. */
  readonly refusal: RefusalKind
  /** The code it is answered with (`invalid_request` is a 400). */
  readonly code: string
  readonly body: unknown
}

/** A seeded PRNG (mulberry32), so a failing run can be replayed. */
export function randomSource(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789:-_."\\\n{}=,é漢 '

/** How many kinds of junk {@link junkRequest} makes; `junkRequest(i % JUNK_KINDS, ...)` makes each in turn. */
export const JUNK_KINDS = 8

/**
 * One junk request of kind `kind` (0..7) made from the served bodies `v2` and `v1`.
 * Kind 7 (`malformed`, `invalid_payload`) reaches the adapter: its payload is unreadable.
 */
export function junkRequest(kind: number, random: () => number, served: { v2: Body; v1: Body }): JunkRequest {
  const text = () => {
    // Up to 2,047 characters: the schema refuses a longer name as malformed.
    const length = random() < 0.1 ? 1000 + Math.floor(random() * 1043) : 1 + Math.floor(random() * 40)
    let out = ''
    for (let i = 0; i < length; i++) out += ALPHABET[Math.floor(random() * ALPHABET.length)]
    return `junk-${out}`
  }
  const v2 = structuredClone(served.v2)
  const v1 = structuredClone(served.v1)
  switch (kind) {
    case 0: {
      const network = text()
      v2.paymentRequirements.network = network
      v2.paymentPayload.accepted!.network = network
      return { refusal: 'unsupportedKind', code: 'invalid_network', body: v2 }
    }
    case 1: {
      const scheme = text()
      v2.paymentRequirements.scheme = scheme
      v2.paymentPayload.accepted!.scheme = scheme
      return { refusal: 'unsupportedKind', code: 'unsupported_scheme', body: v2 }
    }
    case 2: {
      const [scheme, network] = [text(), text()]
      Object.assign(v1.paymentRequirements, { scheme, network })
      Object.assign(v1.paymentPayload, { scheme, network })
      return { refusal: 'unsupportedKind', code: 'unsupported_scheme', body: v1 }
    }
    case 3: {
      const version = 3 + Math.floor(random() * 1_000_000)
      v2.x402Version = version
      v2.paymentPayload.x402Version = version
      v2.paymentRequirements.network = text()
      return { refusal: 'unsupportedVersion', code: 'invalid_x402_version', body: v2 }
    }
    case 4: {
      const which = Math.floor(random() * 3)
      if (which === 0) return { refusal: 'malformed', code: 'invalid_request', body: { ...v2, paymentRequirements: { ...v2.paymentRequirements, network: random() * 1e6 } } }
      if (which === 1) return { refusal: 'malformed', code: 'invalid_request', body: { x402Version: 2, paymentPayload: text() } }
      delete (v1.paymentRequirements as Record<string, unknown>).payTo
      v1.paymentRequirements.network = text()
      return { refusal: 'malformed', code: 'invalid_request', body: v1 }
    }
    case 5:
      v2.paymentPayload.accepted!.network = text()
      return { refusal: 'mismatch', code: 'accepted_requirements_mismatch', body: v2 }
    case 6:
      v1.paymentPayload.network = text()
      return { refusal: 'mismatch', code: 'network_mismatch', body: v1 }
    default:
      v2.paymentPayload.payload = { [text()]: text() }
      return { refusal: 'malformed', code: 'invalid_payload', body: v2 }
  }
}

/** The fields of a verify/settle body the junk changes. */
export interface Body {
  x402Version: number
  paymentPayload: { x402Version: number; scheme?: string; network?: string; accepted?: { scheme: string; network: string }; payload: unknown }
  paymentRequirements: { scheme: string; network: string }
}
