import { cachedFor } from './cached-for.js'
import type { FacilitatorHooks } from '../core/hooks.js'
import type { ExtraRoute, FetchHandler } from '../http/handler.js'
import { requireStoreRole } from '../stores/store-roles.js'
import type { StatsStore } from '../stores/store.js'
import { statsPageRoute, type StatsPageRouteOptions } from './page/stats-page-route.js'
import { createStatsHandler, statsRoute, type PublicHandlerOptions } from './stats-handler.js'
import { readPublicStats, type ReadStatsOptions } from './stats-reader.js'
import { createStatsRecorder, type StatsRecorderOptions } from './stats-recorder.js'
import type { PublicStats } from './stats-schema.js'

/** Options of `createPublicStats`. */
export interface PublicStatsOptions extends ReadStatsOptions, Pick<StatsRecorderOptions, 'dedupeTtlMs'> {
  /**
   * Where counters live: the facilitator's store when it is a full `Store`, else one of their own (a
   * settlement-only store is refused). Share it between instances so their statistics add up.
   */
  store: StatsStore
  /** How long a computed body is reused, here and by HTTP caches (`max-age`). @default 15 */
  cacheSeconds?: number
}

/** Options of the statistics page (`stats.page()`): its statistics are the service's own. */
export type StatsPageOptions = Omit<StatsPageRouteOptions, 'stats'>

/** Statistics wired together: hooks to record, a cached reader and its HTTP forms. */
export interface PublicStatsService {
  /** Pass to `createFacilitator({ hooks })`. */
  readonly hooks: FacilitatorHooks
  readonly cacheSeconds: number
  /** The body of GET /public/stats, computed at most once per `cacheSeconds`. */
  read(): Promise<PublicStats>
  /** GET /public/stats for `createHandler({ routes })`. */
  route(path?: string): ExtraRoute
  /** A handler of its own, for the separate statistics host: GET /public/stats plus `routes`. */
  handler(options?: PublicHandlerOptions): FetchHandler
  /**
   * GET / (or `path`) as an extra route: the same statistics, and the catalog if given, as an
   * HTML page for people, rendered from the cached bodies and served with their `cache-control`.
   * `assets` defaults to the service's own.
   */
  page(options?: StatsPageOptions): ExtraRoute
}

/**
 * Public statistics for a facilitator: record with `hooks`, serve with
 * `route()` on the payment host or `handler()` on a host of its own, and
 * `page()` for the HTML page for people on either.
 *
 * @example
 * // partial
 * const store = createMemoryStore()
 * const stats = createPublicStats({ store })
 * const facilitator = createFacilitator({ schemes, store, hooks: [stats.hooks] })
 * const payments = createHandler(facilitator, { routes: [stats.route()] })
 * const statsHost = stats.handler({ routes: [stats.page()] })
 */
export function createPublicStats(options: PublicStatsOptions): PublicStatsService {
  requireStoreRole(options.store, 'statistics', 'createPublicStats')
  const now = options.now ?? Date.now
  const cacheSeconds = options.cacheSeconds ?? 15
  const hooks = createStatsRecorder({ store: options.store, now, dedupeTtlMs: options.dedupeTtlMs })
  const service: PublicStatsService = {
    hooks,
    cacheSeconds,
    read: cachedFor(cacheSeconds * 1000, now, () => readPublicStats(options.store, { assets: options.assets, now })),
    route: (path) => statsRoute(service, path),
    handler: (handlerOptions) => createStatsHandler(service, handlerOptions),
    page: (pageOptions = {}) => statsPageRoute({ assets: options.assets, ...pageOptions, stats: service }),
  }
  return service
}
