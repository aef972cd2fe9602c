/** The `batch-settlement` EVM scheme: payment channels with cumulative vouchers, claims batched on chain. */
export { batchSettlementEvm, type BatchSettlementEvmConfig, type BatchSettlementOptions, type BatchSettlementSigner } from './batch-settlement-evm.js'
export { BATCH_REJECTION, type BatchRejection } from './reasons.js'
export { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_SCHEME, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from './constants.js'
export { channelId, type ChannelConfig, type ChannelSnapshot } from './codec.js'
