// The statistics entry (`x402-facilitator/stats`): one service records (hooks) and serves them
// (route, handler of its own host, page for people); the body's schemas.
export { createPublicStats, type PublicStatsOptions, type PublicStatsService, type StatsPageOptions } from './public-stats.js'
export { PUBLIC_STATS_PATH, type PublicHandlerOptions } from './stats-handler.js'
export { STATS_PAGE_PATH } from './page/stats-page-route.js'
export type { ReadStatsOptions } from './stats-reader.js'
export type { RefusalKind } from './refusals.js'
export {
  confirmationEntrySchema,
  dailyNetworkSchema,
  latencyEntrySchema,
  publicStatsSchema,
  refusalTotalsSchema,
  usageTotalsSchema,
  volumeEntrySchema,
  type DailyNetworkEntry,
  type LatencyEntry,
  type PublicStats,
  type RefusalTotals,
  type UsageTotals,
  type VolumeEntry,
} from './stats-schema.js'
