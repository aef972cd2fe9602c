import { FacilitatorError } from '../errors/facilitator-error.js'
import type { ExtraRoute, FetchHandler } from '../http/handler.js'
import { routePath } from '../http/route-path.js'
import { publicError, publicJson } from '../http/public-response.js'
import type { PublicStats } from './stats-schema.js'

/** What the stats routes need: a (cached) reader and how long answers may be cached. */
export interface StatsSource {
  read(): Promise<PublicStats>
  readonly cacheSeconds: number
}

/** The path of the statistics in SPEC.md. */
export const PUBLIC_STATS_PATH = '/public/stats'

/**
 * GET /public/stats as an extra route of `createHandler`: public (never asks
 * `authenticate`), cacheable. Users reach it as `createPublicStats(...).route()`.
 */
export function statsRoute(source: StatsSource, path: string = PUBLIC_STATS_PATH): ExtraRoute {
  return {
    path,
    public: true,
    async handle(request) {
      try {
        return publicJson(request, await source.read(), source.cacheSeconds)
      } catch (error) {
        return publicError(new FacilitatorError('store_unavailable', 'statistics are unavailable right now', { cause: error }))
      }
    },
  }
}

/** Options of the standalone public handler. */
export interface PublicHandlerOptions {
  /** Mount point, e.g. `/x402`. @default '' */
  basePath?: string
  /** More public GET routes on the same host (e.g. the catalog routes). */
  routes?: readonly ExtraRoute[]
}

/**
 * A web-standard handler for the statistics host of SPEC.md (`{stats_url}`),
 * separate from the payment endpoints: GET/HEAD /public/stats plus any extra
 * public routes, CORS open to any origin, 404/405 as `{error, code}`. Users
 * reach it as `createPublicStats(...).handler()`.
 */
export function createStatsHandler(source: StatsSource, options: PublicHandlerOptions = {}): FetchHandler {
  return createPublicHandler([statsRoute(source), ...(options.routes ?? [])], options.basePath)
}

/** Routes public GET requests to extra routes; shared by the stats host and tests. */
export function createPublicHandler(routes: readonly ExtraRoute[], basePath = ''): FetchHandler {
  const base = basePath.replace(/\/+$/, '')
  const table = new Map(routes.map((route) => [route.path, route]))
  return async (request) => {
    try {
      const path = routePath(new URL(request.url).pathname, base)
      const route = table.get(path)
      if (!route) throw new FacilitatorError('not_found', `no route ${path}`)
      if (request.method === 'OPTIONS') {
        return new Response(null, {
          status: 204,
          headers: { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET, HEAD, OPTIONS', 'access-control-max-age': '600' },
        })
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') throw new FacilitatorError('method_not_allowed', 'use GET for this route')
      return await route.handle(request)
    } catch (error) {
      return publicError(error)
    }
  }
}
