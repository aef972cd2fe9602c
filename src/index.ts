// Core entry: no chain library is imported from here (see test/package/shape.test.ts).
export type {
  AdapterNetwork,
  AdapterServices,
  BroadcastRecord,
  Parsed,
  PayerSpend,
  PaymentContext,
  ReadinessCheck,
  SchemeAdapter,
  SenderSlot,
  SettleJournal,
  SettleReservation,
  Verdict,
} from './core/adapter.js'
export {
  createFacilitator,
  settle,
  supported,
  verify,
  type Facilitator,
  type FacilitatorConfig,
  type PaymentOptions,
  type SettleOptions,
  type Timeouts,
} from './facilitator/facilitator.js'
export type { FacilitatorHooks, HookRejection, PaymentEvent, RefusalEvent, SettleEvent, VerifyEvent } from './core/hooks.js'
export { loggingHooks, type Logger } from './facilitator/logging-hooks.js'
export { watchSignerBalances, type SignerBalance, type SignerBalanceWatch, type SignerBalanceWatchOptions } from './facilitator/signer-balance-watch.js'
export { createRegistry, type Registry, type RegistryMatch } from './core/registry.js'
export {
  FAULT_STATUS,
  FacilitatorError,
  isFacilitatorError,
  toFacilitatorError,
  type FacilitatorErrorOptions,
  type FaultCode,
} from './errors/facilitator-error.js'
export { REJECTION, type RejectionCode } from './errors/reasons.js'
export { createAssetTable, KNOWN_ASSETS, type AssetTable, type KnownAsset } from './networks/assets.js'
export {
  describeNetwork,
  evmChainId,
  isCaip2Network,
  KNOWN_NETWORKS,
  SOLANA_DEVNET,
  SOLANA_MAINNET,
  SOLANA_TESTNET,
  toCaip2,
  type Caip2Network,
  type NetworkFamily,
  type NetworkInfo,
} from './networks/networks.js'
export * from './schemas/messages.js'
export * from './schemas/payload.js'
export * from './schemas/requirements.js'
export { amountSchema } from './schemas/primitives.js'
export { formatIssuePath, parsePaymentRequest, type ParsedPaymentRequest } from './schemas/parse-request.js'
export { settlementRecordSchema, type SettlementRecord } from './settlement/settlement-record.js'
export type { SettlementOptions } from './settlement/settle-once.js'
export { createMemoryStore, type MemoryStoreOptions } from './stores/memory-store.js'
export type { CloseHoldOptions, ExpiryOptions, HoldRequest, KeyValueStore, SetOptions, SettlementStore, StatsStore, Store } from './stores/store.js'
export {
  decodePaymentHeader,
  encodeJsonHeader,
  encodePaymentResponseHeader,
  PAYMENT_HEADERS,
  type DecodedPaymentHeader,
} from './resource-server/payment-headers.js'
export {
  paymentRequiredResponse,
  toRequirementsV1,
  toRequirementsV2,
  type PaymentChallengeInput,
  type PaymentOffer,
} from './resource-server/payment-required.js'
export { createPaywall, withPayment, type MeteredResponse, type PaidWork, type Paywall, type PaywallOptions, type VerifiedPayment } from './resource-server/paywall.js'

// ---- Stores, public statistics and the catalog of paid resources (issue 5) ----
export type { MemoryStore, MemoryStoreSize } from './stores/memory-store.js'
export type { RankedEntry, RankedIncrement, RankOptions, RankRange } from './stores/store.js'
export { createLatencyHistogram, latencyBucket, type LatencyHistogram, type LatencySummary } from './stats/latency-histogram.js'
export { createStatsRecorder, type StatsRecorderOptions } from './stats/stats-recorder.js'
export { readPublicStats, type ReadStatsOptions } from './stats/stats-reader.js'
export { REFUSAL_KINDS, refusalOf, type RefusalKind } from './stats/refusals.js'
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
} from './stats/stats-schema.js'
export {
  createPublicHandler,
  createStatsHandler,
  PUBLIC_STATS_PATH,
  statsRoute,
  type PublicHandlerOptions,
  type StatsSource,
} from './stats/stats-handler.js'
export { createPublicStats, type PublicStatsOptions, type PublicStatsService } from './stats/public-stats.js'
export { formatTokenUnits, usdValue } from './stats/token-units.js'
export {
  CATALOG_LISTING_PATH,
  createCatalog,
  DISCOVERY_PATH,
  type CatalogEntry,
  type CatalogOptions,
  type CatalogResourceConfig,
  type CatalogService,
  type CatalogSnapshot,
} from './catalog/catalog.js'
export { createCatalogRecorder, type CatalogRecorderOptions } from './catalog/catalog-recorder.js'
export {
  catalogListingSchema,
  catalogResourceSchema,
  discoveryItemSchema,
  discoveryQuerySchema,
  discoveryResponseSchema,
  type CatalogListing,
  type CatalogResource,
  type DiscoveryItem,
  type DiscoveryQuery,
  type DiscoveryResponse,
} from './catalog/catalog-schema.js'
export { formatLastCalled, formatUsdCompact } from './catalog/catalog-format.js'
export { resourceId, resourceName } from './catalog/resource-name.js'

// ---- The statistics page for people (issue 25) ----
export { escapeHtml } from './pages/escape-html.js'
export { safeHttpUrl } from './pages/safe-http-url.js'
export { pricesOf, resourcePriceSchema, type ResourcePrice } from './pages/resource-price.js'
export { renderStatsPage, renderUnavailablePage, type StatsPageCatalog, type StatsPageInput } from './pages/stats-page.js'
export { STATS_PAGE_PATH, statsPageRoute, type StatsPageOptions } from './pages/stats-page-route.js'
export { publicCacheControl } from './stats/public-response.js'
// ---- Settlement ledger (issue 23) ----
export type { SettleOrigin } from './core/hooks.js'
export {
  LEDGER_DEFAULT_LIMIT,
  LEDGER_MAX_LIMIT,
  ledgerEntrySchema,
  ledgerPageSchema,
  ledgerStatusSchema,
  type LedgerEntry,
  type LedgerPage,
  type LedgerQuery,
  type LedgerStatus,
  type NewLedgerEntry,
  type SettlementLedger,
} from './ledger/settlement-ledger.js'
export { createMemoryLedger, type MemoryLedgerOptions } from './ledger/memory-ledger.js'
export { createLedgerRecorder, type LedgerRecorderOptions } from './ledger/ledger-recorder.js'
export { csvField, LEDGER_CSV_COLUMNS, ledgerCsv } from './ledger/ledger-csv.js'
export { LEDGER_PATH, ledgerRoute, ledgerRouteQuerySchema, type LedgerRouteOptions } from './ledger/ledger-route.js'
