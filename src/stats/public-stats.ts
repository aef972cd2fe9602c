import { cachedFor } from './cached-for.js'
import type { FacilitatorHooks } from '../core/hooks.js'
import type { ExtraRoute, FetchHandler } from '../http/handler.js'
import { requireStoreRole } from '../stores/store-roles.js'
import type { StatsStore } from '../stores/store.js'
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

/** Statistics wired together: hooks to record, a cached reader and its HTTP forms. */
export interface PublicStatsService {
  /** Pass to `createFacilitator({ hooks })`. */
  readonly hooks: FacilitatorHooks
  readonly cacheSeconds: number
  /** The body of GET /public/stats, computed at most once per `cacheSeconds`. */
  read(): Promise<PublicStats>
  /** GET /public/stats for `createHandler({ routes })`. */
  route(path?: string): ExtraRoute
  /** A handler of its own, for the separate statistics host. */
  handler(options?: PublicHandlerOptions): FetchHandler
}

/**
 * Public statistics for a facilitator: record with `hooks`, serve with
 * `route()` on the payment host or `handler()` on a host of its own.
 *
 * @example
 * // partial
 * const store = createMemoryStore()
 * const stats = createPublicStats({ store })
 * const facilitator = createFacilitator({ schemes, store, hooks: [stats.hooks] })
 * const payments = createHandler(facilitator, { routes: [stats.route()] })
 * const statsHost = stats.handler()
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
  }
  return service
}
