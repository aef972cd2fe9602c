import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * Which reverse proxies in front of the handler are trusted to name the client:
 * - `{ hops: n }`: `n` proxies each append the address they received the request from to
 *   `X-Forwarded-For`; the client is the `n`-th entry from the right end. With one proxy
 *   (nginx `$proxy_add_x_forwarded_for`, most cloud load balancers) that is the last entry.
 * - `{ header: name }`: one proxy writes the client's address into `name`, replacing whatever the
 *   client sent (`cf-connecting-ip` behind Cloudflare, `x-real-ip` set by nginx).
 *
 * The left end of `X-Forwarded-For` is never used: the client writes it, and any value there
 * would let each request claim a new address (a new rate-limit bucket).
 */
export type TrustProxy = { readonly hops: number } | { readonly header: string }

/** Most trusted hops: more proxies than this in front of one service is a configuration mistake. */
const MAX_HOPS = 16

// An IPv4 or IPv6 address, possibly with a port or brackets as some proxies write it; anything
// else (a hostname, `unknown`, junk) is not an address to count requests under.
const ADDRESS = /^[0-9A-Fa-f:.[\]]{2,64}$/

/**
 * The entry `hops` places from the right end of an `X-Forwarded-For` value: the address the
 * outermost trusted proxy received the request from. With fewer entries than hops (the request
 * came through fewer proxies), the leftmost one, which a trusted proxy still wrote.
 * `undefined` when there is none or it is not an address.
 *
 * @example
 * import { forwardedClientAddress } from 'x402-facilitator/http'
 *
 * // The client sent "X-Forwarded-For: 1.2.3.4"; the proxy appended the address it saw.
 * forwardedClientAddress('1.2.3.4, 203.0.113.7', 1) // '203.0.113.7'
 */
export function forwardedClientAddress(forwardedFor: string | null | undefined, hops: number): string | undefined {
  if (!forwardedFor) return undefined
  const entries = forwardedFor.split(',')
  const entry = entries[Math.max(0, entries.length - hops)]
  return addressOf(entry)
}

/**
 * Reads the client's address of one request under `trust`, from its headers.
 * Throws `misconfigured` for hops that are not an integer from 1 to 16, or a header that is
 * not a plain header name (or is `x-forwarded-for`, which takes `hops`).
 *
 * @example
 * // partial
 * const address = proxiedClientAddress({ hops: 1 })
 * address((name) => request.headers.get(name)) // the address the proxy saw
 */
export function proxiedClientAddress(trust: TrustProxy): (header: (name: string) => string | null) => string | undefined {
  if ('hops' in trust) {
    const hops = trust.hops
    if (!(Number.isInteger(hops) && hops >= 1 && hops <= MAX_HOPS)) throw new FacilitatorError('misconfigured', `trustProxy.hops must be an integer from 1 to ${MAX_HOPS}`)
    return (header) => forwardedClientAddress(header('x-forwarded-for'), hops)
  }
  const name = typeof trust.header === 'string' ? trust.header.trim().toLowerCase() : ''
  if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(name)) throw new FacilitatorError('misconfigured', 'trustProxy.header must be a header name, e.g. cf-connecting-ip or x-real-ip')
  if (name === 'x-forwarded-for') throw new FacilitatorError('misconfigured', 'trustProxy.header cannot be x-forwarded-for (the client writes its left end): use trustProxy.hops')
  // A header sent twice (the client's, then the proxy's) reads as one list: the proxy's is the last.
  return (header) => {
    const value = header(name)
    return value === null ? undefined : addressOf(value.slice(value.lastIndexOf(',') + 1))
  }
}

function addressOf(entry: string | undefined): string | undefined {
  const address = entry?.trim()
  return address && ADDRESS.test(address) ? address.toLowerCase() : undefined
}
