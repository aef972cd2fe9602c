import { FacilitatorError, toFacilitatorError } from '../errors/facilitator-error.js'

/**
 * A JSON answer for a public, unauthenticated GET: shared caches may keep it
 * for `maxAgeSeconds` and serve it stale a while longer while they refresh,
 * and any origin may read it (it holds aggregates only).
 *
 * @example
 * return publicJson(request, await stats.read(), 15)
 */
export function publicJson(request: Request, body: unknown, maxAgeSeconds: number): Response {
  return new Response(request.method === 'HEAD' ? null : JSON.stringify(body), {
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': publicCacheControl(maxAgeSeconds),
      'access-control-allow-origin': '*',
      'x-content-type-options': 'nosniff',
    },
  })
}

/**
 * The `cache-control` of every public answer (the JSON routes and the page):
 * shared caches keep it `maxAgeSeconds` and may serve it stale four times as
 * long while they refresh it.
 *
 * @example
 * import { publicCacheControl } from './public-response.js'
 *
 * publicCacheControl(15) // 'public, max-age=15, stale-while-revalidate=60'
 */
export function publicCacheControl(maxAgeSeconds: number): string {
  const age = Number.isFinite(maxAgeSeconds) ? Math.max(0, Math.floor(maxAgeSeconds)) : 0
  return `public, max-age=${age}, stale-while-revalidate=${age * 4}`
}

/** The `{error, code}` body of a fault on a public route; never cached, never with a stack. */
export function publicError(error: unknown): Response {
  const fault = error instanceof FacilitatorError ? error : toFacilitatorError(error)
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'access-control-allow-origin': '*',
  }
  if (fault.status === 405) headers.allow = 'GET, HEAD, OPTIONS'
  return new Response(JSON.stringify(fault.toBody()), { status: fault.status, headers })
}
