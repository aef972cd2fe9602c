// Core entry: the facilitator, its registry, the adapter contract, errors, schemas and the memory store.
// No chain library is imported from here (see test/package/shape.test.ts); the public names of every
// entry are pinned in test/package/public-surface.test.ts.
export type {
  AdapterNetwork,
  AdapterServices,
  AdapterStore,
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
export type { SettleCaller } from './facilitator/settle-caller.js'
export type { FacilitatorHooks, HookRejection, PaymentEvent, RefusalEvent, SettleEvent, SettleOrigin, VerifyEvent } from './core/hooks.js'
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
export { parsePaymentRequest, type ParsedPaymentRequest } from './schemas/parse-request.js'
export { settlementRecordSchema, type SettlementRecord } from './settlement/settlement-record.js'
export type { PayerFailureBudget, SettlementOptions } from './settlement/settlement-options.js'
export { createMemoryStore, type MemoryStore, type MemoryStoreOptions, type MemoryStoreSize } from './stores/memory-store.js'
export type {
  CloseHoldOptions,
  ExpiryOptions,
  HoldRequest,
  KeyValueStore,
  RankedEntry,
  RankedIncrement,
  RankOptions,
  RankRange,
  SetOptions,
  SettlementStore,
  StatsStore,
  Store,
} from './stores/store.js'
