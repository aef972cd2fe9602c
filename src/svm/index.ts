// Solana entry (`x402-facilitator/svm`): the only place @solana/* is imported.
export { buildExactSvmTransaction, type ExactSvmTransactionOptions } from './exact/build-transaction.js'
export type { ExactSvmNetworkConfig } from './exact/config.js'
export { exactSvm, type ExactSvmConfig } from './exact-svm-options.js'
export { SVM_REASON, type SvmReason } from './reasons.js'
export {
  createHttpRpcTransport,
  type HttpRpcTransportOptions,
  type RpcCall,
  type RpcOutcome,
  type SvmRpcTransport,
} from './rpc/solana-rpc.js'
export {
  checkPaymentTransaction,
  DEFAULT_ALLOWED_PROGRAMS,
  DEFAULT_LIMITS,
  LIGHTHOUSE_PROGRAM_ADDRESS,
  MEMO_PROGRAM_ADDRESS,
  TOKEN_2022_PROGRAM_ADDRESS,
  type CheckedPayment,
  type ExactSvmLimits,
  type RuleOutcome,
  type RuleViolation,
  type TransactionRuleInput,
} from './rules/transaction-rules.js'
