import type { Facilitator } from '../facilitator/facilitator.js'
import { FacilitatorError, toFacilitatorError } from '../errors/facilitator-error.js'
import { proxiedClientAddress, type TrustProxy } from './client-address.js'
import type { HttpAnswer, HttpCall } from './http-call.js'
import { createRateLimiter, type RateLimitOptions } from './rate-limit.js'
import { readJsonBody, readStreamBytes } from './read-body.js'
import { requestIdOf, requestIdSettings, type RequestIdOptions } from './request-id.js'
import { routePath } from './route-path.js'
import type { SettleCaller } from '../facilitator/settle-caller.js'

/** The three payment routes, as named to `authenticate`. */
export type PaymentRoute = 'supported' | 'verify' | 'settle'

/** What `authenticate` is asked about: a payment route, or `'private'` for an extra route with `public: false` (only without `authorizeAdmin`). */
export type AuthenticatedRoute = PaymentRoute | 'private'

/** An extra GET route served by the handler (statistics, catalog). */
export interface ExtraRoute {
  /** Path below the base path, e.g. `/public/stats`. */
  path: string
  handle(request: Request): Response | Promise<Response>
  /**
   * Public routes skip authentication. A private one (`false`: the ledger, protected
   * metrics, admin routes) is served only to requests that `authorizeAdmin` allows (without
   * it, that `authenticate` allows when asked with the route name `'private'`), and answers
   * 401 when the handler has neither hook. @default true
   */
  public?: boolean
}

export interface CorsOptions {
  /** Allowed origins; `*` for any. @default '*' */
  origin?: string | readonly string[]
  /** @default 600 */
  maxAgeSeconds?: number
}

export interface HandlerOptions {
  /** Mount point, e.g. `/x402`. @default '' */
  basePath?: string
  /** Largest accepted body in bytes. @default 65_536 */
  maxBodyBytes?: number
  /** Deepest accepted JSON nesting. @default 32 */
  maxJsonDepth?: number
  /**
   * Decides whether a request may use a payment route; `false` answers 401.
   * Answering `{ clientId }` (e.g. the API key's name) allows it and names the
   * client for `rateLimit`. Public extra routes are never asked; private ones
   * are asked of `authorizeAdmin` when it is set, else of this hook with the route
   * name `'private'` (the hook must then tell operators from payment clients).
   * With this hook, /settle serves payments whose settle request sets the amount (`upto`)
   * to the callers it admits to `'settle'`: admit only your resource servers there. The same holds
   * for payloads an adapter marks with `settleNeedsAuthentication` (a `batch-settlement` refund our
   * delegated receiver authorizer signs): without this hook they are refused (`settle_requires_authentication`).
   */
  authenticate?: (request: Request, route: AuthenticatedRoute) => AuthenticateResult | Promise<AuthenticateResult>
  /**
   * Decides whether a request may use the private extra routes (`public: false`: the ledger,
   * protected metrics, admin routes); anything but `true` answers 401. Kept apart from
   * `authenticate` so that a payment client's credentials never open them: a client of
   * /settle must not read other clients' payments. When set, `authenticate` is not asked
   * about private routes. @default private routes ask `authenticate` with `'private'`
   *
   * @example
   * // partial
   * createHandler(facilitator, { authorizeAdmin: (request) => request.headers.get('authorization') === `Bearer ${process.env.ADMIN_TOKEN}` })
   */
  authorizeAdmin?: (request: Request) => boolean | Promise<boolean>
  /**
   * Settle payments whose settle request sets the amount charged (adapters with
   * `settleSetsAmount`, such as `upto`) for callers that are not authenticated. Off, a
   * handler without `authenticate` answers their /settle with `success: false`,
   * `errorReason: "settle_requires_authentication"`: anyone who can reach /settle, the payer
   * included, could otherwise settle a payment for 0 before the resource server charges it.
   * Turn it on only when nothing but your own resource servers can reach /settle (a private
   * network, a proxy that authenticates). /verify is never affected. @default false
   */
  allowUnauthenticatedSettleAmount?: boolean
  /**
   * Per-client limits of `/verify` and `/settle`, counted in the store (instances sharing
   * it share the limits): past them, 429 `{error, code: "rate_limited"}` with `Retry-After`.
   * A client is the `clientId` that `authenticate` names, else its address
   * (`clientAddress`). @default no limits
   *
   * @example
   * // partial
   * createHandler(facilitator, { rateLimit: { store: facilitator.store, verify: { limit: 600 }, settle: { limit: 120 } } })
   */
  rateLimit?: RateLimitOptions
  /**
   * The client's address, for `rateLimit` when `authenticate` names no client. The node
   * listener gives the socket's remote address; on a runtime whose `Request` carries no
   * address, read it here. Answering `undefined` falls back to the socket's address.
   * Behind reverse proxies, prefer `trustProxy`. Not with `trustProxy`.
   * @default the socket's address under createNodeListener, else 'unknown' (one bucket for all)
   */
  clientAddress?: (request: Request) => string | undefined
  /**
   * Behind reverse proxies: `{ hops: n }` takes the client's address `n` entries from the
   * right end of `X-Forwarded-For` (`{ hops: 1 }`: one proxy in front), `{ header }` from a
   * header your proxy overwrites (`cf-connecting-ip`, `x-real-ip`). Never the left end of
   * `X-Forwarded-For`, which the client writes. A request without a usable address falls back
   * to the socket's. Not with `clientAddress`. @default the socket's address
   */
  trustProxy?: TrustProxy
  /** Adds CORS headers and answers preflight requests. @default false */
  cors?: boolean | CorsOptions
  routes?: readonly ExtraRoute[]
  /** Sees every fault answered with a 5xx, with its cause, for logging. */
  onError?: (error: FacilitatorError, request: Request) => void
  /**
   * Names every request: the id its client sent in `x-request-id` (1 to 128 characters of
   * letters, digits and `._:@/+=-`), else a new UUID, echoed in the answer's `x-request-id`.
   * `run` wraps the request's work (verify, settle, after-hooks, `onError`) so that a logger
   * can add the id to every line the request causes. @default no ids
   *
   * @example
   * // partial
   * const requests = new AsyncLocalStorage<string>()
   * const logger = pino({ mixin: () => ({ requestId: requests.getStore() }) })
   * createHandler(facilitator, { requestId: { run: (id, work) => requests.run(id, work) } })
   */
  requestId?: RequestIdOptions | true
}

/** What `authenticate` answers: allowed or not, or allowed as a named client. */
export type AuthenticateResult = boolean | { clientId: string }

/** A web-standard request handler: `(Request) => Promise<Response>`. */
export type FetchHandler = (request: Request) => Promise<Response>

/** Answers one call without web `Request`/`Response` objects (see `answerOf`). */
export type CallAnswerer = (call: HttpCall) => Promise<HttpAnswer | Response>

// Symbol.for: the same key whether the handler came from the ESM or the CJS build.
const CALL_ANSWERER = Symbol.for('x402-facilitator.call-answerer')

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

/**
 * The facilitator over HTTP as one web-standard handler: GET /supported,
 * POST /verify, POST /settle, plus any extra routes. Works as is in Bun, Deno,
 * workers and Next.js route handlers; `createNodeListener` adapts it to node:http.
 *
 * @example
 * // partial
 * const handler = createHandler(facilitator, { basePath: '/x402' })
 * export const GET = handler, POST = handler // Next.js app router
 */
export function createHandler(facilitator: Pick<Facilitator, 'supported' | 'verify' | 'settle'>, options: HandlerOptions = {}): FetchHandler {
  const basePath = (options.basePath ?? '').replace(/\/+$/, '')
  const maxBodyBytes = options.maxBodyBytes ?? 65_536
  const maxJsonDepth = options.maxJsonDepth ?? 32
  const cors = options.cors ? (options.cors === true ? {} : options.cors) : undefined
  const extra = new Map((options.routes ?? []).map((route) => [route.path, route]))
  const rateLimit = options.rateLimit ? createRateLimiter(options.rateLimit) : undefined
  if (options.clientAddress && options.trustProxy) throw new FacilitatorError('misconfigured', 'createHandler: give clientAddress or trustProxy, not both')
  const proxied = options.trustProxy ? proxiedClientAddress(options.trustProxy) : undefined
  // Without a hook nobody is authenticated: the facilitator then refuses the settles only an authenticated caller may ask for.
  const caller: SettleCaller | undefined = options.authenticate ? undefined : { authenticated: false, mayChooseAmount: options.allowUnauthenticatedSettleAmount === true }

  const payment: Record<string, { method: 'GET' | 'POST'; route: PaymentRoute }> = {
    '/supported': { method: 'GET', route: 'supported' },
    '/verify': { method: 'POST', route: 'verify' },
    '/settle': { method: 'POST', route: 'settle' },
  }

  async function route(call: HttpCall, path: string): Promise<HttpAnswer | Response> {
    const extraRoute = extra.get(path)
    if (extraRoute) {
      if (call.method !== 'GET' && call.method !== 'HEAD') throw methodNotAllowed('GET')
      if (extraRoute.public === false) await authorizePrivate(call)
      return extraRoute.handle(call.request())
    }
    const known = payment[path]
    if (!known) throw new FacilitatorError('not_found', `no route ${path}`)
    if (call.method !== known.method && !(known.method === 'GET' && call.method === 'HEAD')) {
      throw methodNotAllowed(known.method)
    }
    // Not even awaited without a hook: each await is a turn of the microtask queue on every request.
    const client = options.authenticate ? await authenticate(call, known.route, options.authenticate) : undefined
    if (known.route === 'supported') return jsonAnswer(200, await facilitator.supported())
    if (rateLimit) await rateLimit(known.route, client ?? clientOf(call))
    const body = await readJsonBody(call, maxBodyBytes, maxJsonDepth)
    if (known.route === 'verify') return jsonAnswer(200, await facilitator.verify(body))
    return jsonAnswer(200, await facilitator.settle(body, caller))
  }

  /** Throws 401 unless the caller may use a private route: admins only, never by default. */
  async function authorizePrivate(call: HttpCall): Promise<void> {
    if (!options.authorizeAdmin) {
      if (!options.authenticate) throw new FacilitatorError('unauthorized', 'this route is private and the server has no authorizeAdmin hook')
      await authenticate(call, 'private', options.authenticate)
      return
    }
    let allowed: unknown = false
    try {
      allowed = await options.authorizeAdmin(call.request())
    } catch (error) {
      throw new FacilitatorError('unauthorized', 'authentication failed', { cause: error })
    }
    // Exactly true: a payment client's `{ clientId }` from a shared helper must not open an admin route.
    if (allowed !== true) throw new FacilitatorError('unauthorized', 'this route takes an admin credential; payment clients\' credentials do not open it')
  }

  /** Throws 401 unless the hook allows the call; answers the client it names (as `key:<id>`). */
  async function authenticate(call: HttpCall, name: AuthenticatedRoute, hook: NonNullable<HandlerOptions['authenticate']>): Promise<string | undefined> {
    let allowed: AuthenticateResult = false
    try {
      allowed = await hook(call.request(), name)
    } catch (error) {
      throw new FacilitatorError('unauthorized', 'authentication failed', { cause: error })
    }
    if (!allowed) throw new FacilitatorError('unauthorized', 'missing or invalid credentials')
    return typeof allowed === 'object' && typeof allowed.clientId === 'string' && allowed.clientId !== '' ? `key:${allowed.clientId}` : undefined
  }

  /** A client known only by its address (`addr:<address>`). */
  function clientOf(call: HttpCall): string {
    let address: string | undefined
    try {
      if (proxied) address = proxied((name) => call.header(name))
      else if (options.clientAddress) address = options.clientAddress(call.request())
    } catch {
      address = undefined
    }
    return `addr:${address || call.clientAddress || 'unknown'}`
  }

  const requestIds = options.requestId ? requestIdSettings(options.requestId) : undefined

  const respond: CallAnswerer = async (call) => {
    let result: HttpAnswer | Response
    let path = ''
    try {
      path = routePath(call.pathname, basePath)
      if (cors && call.method === 'OPTIONS') result = { status: 204, headers: {}, body: null }
      else result = await route(call, path)
    } catch (error) {
      const fault = toFacilitatorError(error)
      if (fault.status >= 500) {
        try {
          options.onError?.(fault, call.request())
        } catch {
          // A failing logger must not turn an answer into a crash.
        }
      }
      result = faultAnswer(fault, path)
    }
    if (cors) {
      const target = result
      const set =
        target instanceof Response
          ? (n: string, v: string) => (n === 'vary' ? target.headers.append(n, v) : target.headers.set(n, v))
          : (n: string, v: string) => void (target.headers[n] = v)
      applyCors(set, call.header('origin'), cors)
    }
    return result
  }

  const answer: CallAnswerer = requestIds
    ? async (call) => {
        const id = requestIdOf(call.header(requestIds.header))
        const result = requestIds.run ? await requestIds.run(id, () => respond(call)) : await respond(call)
        if (!(result instanceof Response)) result.headers[requestIds.header] = id
        else {
          try {
            result.headers.set(requestIds.header, id)
          } catch {
            // Immutable headers (an extra route's fetched or redirect answer): the same answer in a new envelope.
            const copy = new Response(result.body, result)
            copy.headers.set(requestIds.header, id)
            return copy
          }
        }
        return result
      }
    : respond

  const handle: FetchHandler = async (request) => toResponse(await answer(webCall(request)))
  return Object.assign(handle, { [CALL_ANSWERER]: answer })
}

/**
 * The answerer behind a handler made by `createHandler`, for adapters that can
 * skip web objects (the node listener); `undefined` for any other handler.
 */
export function answerOf(handler: FetchHandler): CallAnswerer | undefined {
  const answerer = (handler as FetchHandler & { [CALL_ANSWERER]?: CallAnswerer })[CALL_ANSWERER]
  return typeof answerer === 'function' ? answerer : undefined
}

function webCall(request: Request): HttpCall {
  let pathname: string | undefined
  try {
    pathname = new URL(request.url).pathname
  } catch {
    pathname = undefined
  }
  return {
    method: request.method,
    pathname,
    header: (name) => request.headers.get(name),
    bytes: (maxBytes) => readStreamBytes(request.body, maxBytes),
    request: () => request,
  }
}

/** A web `Response` of an answer. */
export function toResponse(answer: HttpAnswer | Response): Response {
  if (answer instanceof Response) return answer
  return new Response(answer.body, { status: answer.status, headers: answer.headers })
}

/**
 * `{error, code}` for every fault. On /verify and /settle a 4xx also carries
 * `isValid:false` / `success:false`: the official x402 HTTP client passes such
 * a body on as a structured rejection instead of an opaque failure.
 */
function faultAnswer(fault: FacilitatorError, path: string): HttpAnswer {
  const body: Record<string, unknown> = fault.toBody()
  if (fault.status < 500) {
    if (path === '/verify') Object.assign(body, { isValid: false, invalidReason: fault.code, invalidMessage: fault.message })
    if (path === '/settle') Object.assign(body, { success: false, errorReason: fault.code, errorMessage: fault.message, transaction: '', network: '' })
  }
  const answer = jsonAnswer(fault.status, body)
  if (fault.status === 405 && fault.details?.allow) answer.headers.allow = String(fault.details.allow)
  if (fault.status === 429 || fault.status === 503) {
    const seconds = fault.details?.retryAfterSeconds
    answer.headers['retry-after'] = typeof seconds === 'number' ? String(seconds) : '1'
  }
  // The rest of an oversized body (or one refused for memory) is not worth reading: close rather than drain it.
  if (fault.status === 413 || fault.details?.closeConnection === true) answer.headers.connection = 'close'
  return answer
}

function methodNotAllowed(allow: string) {
  return new FacilitatorError('method_not_allowed', `use ${allow} for this route`, { details: { allow } })
}

function applyCors(set: (name: string, value: string) => void, origin: string | null, cors: CorsOptions) {
  const allowed = cors.origin ?? '*'
  if (allowed === '*') set('access-control-allow-origin', '*')
  else if (origin && (typeof allowed === 'string' ? allowed === origin : allowed.includes(origin))) {
    set('access-control-allow-origin', origin)
    set('vary', 'Origin')
  } else return
  set('access-control-allow-methods', 'GET, POST, OPTIONS')
  set('access-control-allow-headers', 'content-type, authorization')
  set('access-control-max-age', String(cors.maxAgeSeconds ?? 600))
}

/** A JSON response with the headers every facilitator answer carries. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return toResponse(jsonAnswer(status, body, headers))
}

function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): HttpAnswer {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) }
}
