import type { Facilitator } from '../core/facilitator.js'
import { FacilitatorError, toFacilitatorError } from '../errors/facilitator-error.js'
import { readJsonBody } from './read-body.js'

/** The three payment routes, as named to `authenticate`. */
export type PaymentRoute = 'supported' | 'verify' | 'settle'

/** An extra GET route served by the handler (statistics, catalog). */
export interface ExtraRoute {
  /** Path below the base path, e.g. `/public/stats`. */
  path: string
  handle(request: Request): Response | Promise<Response>
  /** Public routes skip `authenticate`. @default true */
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
   * Public extra routes are never asked.
   */
  authenticate?: (request: Request, route: PaymentRoute) => boolean | Promise<boolean>
  /** Adds CORS headers and answers preflight requests. @default false */
  cors?: boolean | CorsOptions
  routes?: readonly ExtraRoute[]
  /** Sees every fault answered with a 5xx, with its cause, for logging. */
  onError?: (error: FacilitatorError, request: Request) => void
}

/** A web-standard request handler: `(Request) => Promise<Response>`. */
export type FetchHandler = (request: Request) => Promise<Response>

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

/**
 * The facilitator over HTTP as one web-standard handler: GET /supported,
 * POST /verify, POST /settle, plus any extra routes. Works as is in Bun, Deno,
 * workers and Next.js route handlers; `createNodeListener` adapts it to node:http.
 *
 * @example
 * const handler = createHandler(facilitator, { basePath: '/x402' })
 * export const GET = handler, POST = handler // Next.js app router
 */
export function createHandler(facilitator: Pick<Facilitator, 'supported' | 'verify' | 'settle'>, options: HandlerOptions = {}): FetchHandler {
  const basePath = (options.basePath ?? '').replace(/\/+$/, '')
  const maxBodyBytes = options.maxBodyBytes ?? 65_536
  const maxJsonDepth = options.maxJsonDepth ?? 32
  const cors = options.cors ? (options.cors === true ? {} : options.cors) : undefined
  const extra = new Map((options.routes ?? []).map((route) => [route.path, route]))

  const payment: Record<string, { method: 'GET' | 'POST'; route: PaymentRoute }> = {
    '/supported': { method: 'GET', route: 'supported' },
    '/verify': { method: 'POST', route: 'verify' },
    '/settle': { method: 'POST', route: 'settle' },
  }

  async function route(request: Request, path: string): Promise<Response> {
    const extraRoute = extra.get(path)
    if (extraRoute) {
      if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed('GET')
      if (extraRoute.public === false) await authenticate(request, 'supported')
      return extraRoute.handle(request)
    }
    const known = payment[path]
    if (!known) throw new FacilitatorError('not_found', `no route ${path}`)
    if (request.method !== known.method && !(known.method === 'GET' && request.method === 'HEAD')) {
      throw methodNotAllowed(known.method)
    }
    await authenticate(request, known.route)
    if (known.route === 'supported') return json(200, await facilitator.supported())
    const body = await readJsonBody(request, maxBodyBytes, maxJsonDepth)
    if (known.route === 'verify') return json(200, await facilitator.verify(body))
    return json(200, await facilitator.settle(body))
  }

  async function authenticate(request: Request, name: PaymentRoute) {
    if (!options.authenticate) return
    let allowed = false
    try {
      allowed = await options.authenticate(request, name)
    } catch (error) {
      throw new FacilitatorError('unauthorized', 'authentication failed', { cause: error })
    }
    if (!allowed) throw new FacilitatorError('unauthorized', 'missing or invalid credentials')
  }

  return async function handle(request: Request): Promise<Response> {
    let response: Response
    let path = ''
    try {
      path = pathOf(request.url, basePath)
      if (cors && request.method === 'OPTIONS') response = new Response(null, { status: 204 })
      else response = await route(request, path)
    } catch (error) {
      const fault = toFacilitatorError(error)
      if (fault.status >= 500) options.onError?.(fault, request)
      response = faultResponse(fault, path)
    }
    if (cors) applyCors(response.headers, request, cors)
    return response
  }
}

function pathOf(url: string, basePath: string): string {
  let path: string
  try {
    path = new URL(url).pathname
  } catch {
    throw new FacilitatorError('invalid_request', 'the request URL is invalid')
  }
  if (basePath) {
    if (path !== basePath && !path.startsWith(`${basePath}/`)) throw new FacilitatorError('not_found', `no route ${path}`)
    path = path.slice(basePath.length) || '/'
  }
  return path.length > 1 ? path.replace(/\/+$/, '') : path
}

/**
 * `{error, code}` for every fault. On /verify and /settle a 4xx also carries
 * `isValid:false` / `success:false`: the official x402 HTTP client passes such
 * a body on as a structured rejection instead of an opaque failure.
 */
function faultResponse(fault: FacilitatorError, path: string): Response {
  const body: Record<string, unknown> = fault.toBody()
  if (fault.status < 500) {
    if (path === '/verify') Object.assign(body, { isValid: false, invalidReason: fault.code, invalidMessage: fault.message })
    if (path === '/settle') Object.assign(body, { success: false, errorReason: fault.code, errorMessage: fault.message, transaction: '', network: '' })
  }
  const response = json(fault.status, body)
  if (fault.status === 405 && fault.details?.allow) response.headers.set('allow', String(fault.details.allow))
  if (fault.status === 429 || fault.status === 503) response.headers.set('retry-after', '1')
  return response
}

function methodNotAllowed(allow: string) {
  return new FacilitatorError('method_not_allowed', `use ${allow} for this route`, { details: { allow } })
}

function applyCors(headers: Headers, request: Request, cors: CorsOptions) {
  const allowed = cors.origin ?? '*'
  const origin = request.headers.get('origin')
  if (allowed === '*') headers.set('access-control-allow-origin', '*')
  else if (origin && (typeof allowed === 'string' ? allowed === origin : allowed.includes(origin))) {
    headers.set('access-control-allow-origin', origin)
    headers.append('vary', 'Origin')
  } else return
  headers.set('access-control-allow-methods', 'GET, POST, OPTIONS')
  headers.set('access-control-allow-headers', 'content-type, authorization')
  headers.set('access-control-max-age', String(cors.maxAgeSeconds ?? 600))
}

/** A JSON response with the headers every facilitator answer carries. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } })
}
