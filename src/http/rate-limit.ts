import { FacilitatorError } from '../errors/facilitator-error.js'
import { boundedStoreCall } from '../settlement/bounded-store-call.js'
import type { SettlementStore } from '../stores/store.js'

/** How many requests one client may make in a window. */
export interface RateLimitRule {
  /** Requests allowed per window. */
  limit: number
  /** Length of a window in milliseconds. @default 60_000 */
  windowMs?: number
}

/**
 * Per-client rate limits of the payment routes, counted in the store so that
 * instances sharing one store share the limits. A client is the API key that the
 * `authenticate` hook names (`{ clientId }`), else its address.
 */
export interface RateLimitOptions {
  /** Where the counts live: the facilitator's store. */
  store: SettlementStore
  /** Limit of `POST /verify` per client (each costs an RPC round trip the operator pays for). */
  verify?: RateLimitRule
  /** Limit of `POST /settle` per client. */
  settle?: RateLimitRule
  /**
   * Longest wait for the store. A store that fails or is slow lets the request through
   * (a limiter must not take the service down with it). @default 1_000
   */
  storeTimeoutMs?: number
}

/** Checks one request against its route's limit; throws `rate_limited` (429, with the seconds to wait) past it. */
export type RateLimiter = (route: 'verify' | 'settle', client: string) => Promise<void>

const DEFAULT_WINDOW_MS = 60_000

/**
 * A fixed-window counter per client and route: one `incrementFields` and one
 * `readFields` a request. Fixed windows let a client make up to twice the limit
 * across a window boundary; that is the price of two cheap store calls instead of
 * a sorted set per client.
 *
 * @example
 * // partial
 * const limit = createRateLimiter({ store, verify: { limit: 600 }, settle: { limit: 120 } })
 * await limit('verify', '203.0.113.7') // throws FacilitatorError('rate_limited') past 600 a minute
 */
export function createRateLimiter(options: RateLimitOptions): RateLimiter {
  const rules = { verify: checkedRule(options.verify, 'verify'), settle: checkedRule(options.settle, 'settle') }
  const storeTimeoutMs = options.storeTimeoutMs ?? 1_000
  return async (route, client) => {
    const rule = rules[route]
    if (!rule) return
    const now = Date.now()
    const window = Math.floor(now / rule.windowMs)
    const key = `rate:${route}:${client}:${window}`
    let count: number
    try {
      count = await boundedStoreCall(
        async () => {
          await options.store.incrementFields(key, { n: 1 }, { ttlMs: rule.windowMs })
          return (await options.store.readFields(key)).n ?? 0
        },
        storeTimeoutMs,
        'counting the client\'s requests',
      )
    } catch {
      return
    }
    if (count <= rule.limit) return
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * rule.windowMs - now) / 1000))
    throw new FacilitatorError('rate_limited', `too many ${route} requests: at most ${rule.limit} every ${rule.windowMs / 1000} s; retry in ${retryAfterSeconds} s`, {
      details: { retryAfterSeconds },
    })
  }
}

function checkedRule(rule: RateLimitRule | undefined, name: string): Required<RateLimitRule> | undefined {
  if (!rule) return undefined
  const windowMs = rule.windowMs ?? DEFAULT_WINDOW_MS
  if (!(Number.isInteger(rule.limit) && rule.limit >= 1)) throw new FacilitatorError('misconfigured', `rateLimit.${name}.limit must be an integer of at least 1`)
  if (!(Number.isFinite(windowMs) && windowMs >= 1_000)) throw new FacilitatorError('misconfigured', `rateLimit.${name}.windowMs must be at least 1000`)
  return { limit: rule.limit, windowMs }
}
