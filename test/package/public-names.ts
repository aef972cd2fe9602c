// The runtime names each entry of the package exports, by subpath of package.json `exports`, and
// the source tsup builds it from. A name added or removed here is a change of the public API:
// CHANGELOG.md says so. Types are not listed (they leave no runtime name); see the entries.
export const PUBLIC_ENTRIES: Record<string, { source: string; names: readonly string[] }> = {
  '.': {
    source: 'src/index.ts',
    names: [
      'FAULT_STATUS', 'FacilitatorError', 'KNOWN_ASSETS', 'KNOWN_NETWORKS', 'REJECTION', 'SOLANA_DEVNET', 'SOLANA_MAINNET', 'SOLANA_TESTNET',
      'amountSchema', 'createAssetTable', 'createFacilitator', 'createMemoryStore', 'createRegistry', 'describeNetwork', 'errorBodySchema',
      'isCaip2Network', 'isFacilitatorError', 'loggingHooks', 'parsePaymentRequest', 'paymentPayloadV1Schema', 'paymentPayloadV2Schema',
      'paymentRequestSchema', 'paymentRequestV1Schema', 'paymentRequestV2Schema', 'paymentRequirementsV1Schema', 'paymentRequirementsV2Schema',
      'resourceInfoSchema', 'settle', 'settleResponseSchema', 'settlementRecordSchema', 'supported', 'supportedKindSchema',
      'supportedResponseSchema', 'toCaip2', 'toFacilitatorError', 'verify', 'verifyResponseSchema', 'watchSignerBalances',
    ],
  },
  './http': {
    source: 'src/http/index.ts',
    names: [
      'REQUEST_ID_HEADER', 'createHandler', 'createNodeListener', 'createNodeServer', 'createRateLimiter', 'forwardedClientAddress',
      'healthRoutes', 'proxiedClientAddress', 'requestIdOf', 'toRequest', 'withRequestId', 'writeResponse',
    ],
  },
  './evm': {
    source: 'src/evm/index.ts',
    names: [
      'EIP2612_GAS_SPONSORING', 'EIP2612_REJECTION', 'ERC20_APPROVAL_GAS_SPONSORING', 'EVM_REJECTION', 'MULTICALL3_ADDRESS', 'PERMIT2_ADDRESS',
      'PERMIT2_REJECTION', 'UPTO_REJECTION', 'X402_EXACT_PERMIT2_PROXY', 'X402_UPTO_PERMIT2_PROXY', 'authorizationTypedData', 'cryptoBackends',
      'eip3009Abi', 'erc1271Abi', 'evmSchemes', 'exactEvm', 'exactEvmPayloadSchema', 'exactPermit2ProxyAbi', 'hashAuthorization',
      'multicall3Abi', 'parseExactEvmPayload', 'parsePermit2Payload', 'parseUptoPayload', 'permit2PayloadSchema',
      'permitWitnessTransferFromTypes', 'privateKeySigner', 'signExactEvmPayment', 'uptoPayloadSchema', 'uptoPermit2ProxyAbi',
      'uptoPermitWitnessTransferFromTypes',
      // batch-settlement
      'BATCH_REJECTION', 'BATCH_SETTLEMENT_ADDRESS', 'BATCH_SETTLEMENT_SCHEME', 'ERC3009_DEPOSIT_COLLECTOR_ADDRESS',
      'PERMIT2_DEPOSIT_COLLECTOR_ADDRESS', 'batchSettlementEvm', 'channelId',
    ],
  },
  './svm': {
    source: 'src/svm/index.ts',
    names: [
      'DEFAULT_ALLOWED_PROGRAMS', 'DEFAULT_LIMITS', 'LIGHTHOUSE_PROGRAM_ADDRESS', 'MEMO_PROGRAM_ADDRESS', 'SVM_REASON', 'TOKEN_2022_PROGRAM_ADDRESS',
      'buildExactSvmTransaction', 'checkPaymentTransaction', 'createHttpRpcTransport', 'exactSvm',
    ],
  },
  './server': {
    source: 'src/resource-server/index.ts',
    names: [
      'PAYMENT_HEADERS', 'createNodePaywall', 'createPaywall', 'decodePaymentHeader', 'encodeJsonHeader', 'encodePaymentResponseHeader', 'paymentRequiredResponse',
      'toRequirementsV1', 'toRequirementsV2', 'withPayment',
    ],
  },
  './server/batch': {
    source: 'src/resource-server/batch/index.ts',
    names: ['createBatchSettlementServer', 'createChannelStateStore'],
  },
  './stats': {
    source: 'src/stats/index.ts',
    names: [
      'PUBLIC_STATS_PATH', 'STATS_PAGE_PATH', 'confirmationEntrySchema', 'createPublicStats', 'dailyNetworkSchema', 'latencyEntrySchema',
      'publicStatsSchema', 'refusalTotalsSchema', 'usageTotalsSchema', 'volumeEntrySchema',
    ],
  },
  './catalog': {
    source: 'src/catalog/index.ts',
    names: [
      'CATALOG_LISTING_PATH', 'DISCOVERY_PATH', 'catalogListingSchema', 'catalogResourceSchema', 'createCatalog', 'discoveryItemSchema',
      'discoveryQuerySchema', 'discoveryResponseSchema',
    ],
  },
  './ledger': {
    source: 'src/ledger/index.ts',
    names: [
      'LEDGER_CSV_COLUMNS', 'LEDGER_DEFAULT_LIMIT', 'LEDGER_MAX_LIMIT', 'LEDGER_PATH', 'createLedgerRecorder', 'createMemoryLedger', 'ledgerCsv',
      'ledgerEntrySchema', 'ledgerPageSchema', 'ledgerRoute', 'ledgerStatusSchema',
    ],
  },
  './stores/redis': { source: 'src/stores/redis-store.ts', names: ['REDIS_STORE_DEFAULTS', 'createRedisStore'] },
  './stores/sqlite': { source: 'src/stores/sqlite/index.ts', names: ['SQLITE_SCHEMA_VERSION', 'createSqliteLedger', 'createSqliteStore'] },
  './stores/postgres': {
    source: 'src/stores/postgres/index.ts',
    names: ['POSTGRES_SCHEMA_VERSION', 'POSTGRES_STORE_DEFAULTS', 'createPostgresLedger', 'createPostgresStore', 'migratePostgres'],
  },
  './metrics': { source: 'src/ops/metrics.ts', names: ['createMetrics'] },
  './testing': { source: 'src/testing/index.ts', names: ['adapterConformance'] },
}
