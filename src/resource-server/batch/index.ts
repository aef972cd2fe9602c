/** The resource-server side of `batch-settlement`: channel state, its store, refunds and the claim policy. */
export { createBatchSettlementServer, type BatchSettlementServer, type BatchSettlementServerOptions } from './batch-settlement-server.js'
export { createChannelStateStore, type ChannelStateStore, type ChannelStateStoreOptions } from './channel-state-store.js'
export type { ChannelState } from './channel-state.js'
export type { ClaimPolicyOptions, ClaimRound } from './claim-policy.js'
