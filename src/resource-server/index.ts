// The resource-server entry (`x402-facilitator/server`): charge for a route through a facilitator, and the x402 headers.
export {
  decodePaymentHeader,
  encodeJsonHeader,
  encodePaymentResponseHeader,
  PAYMENT_HEADERS,
  type DecodedPaymentHeader,
} from './payment-headers.js'
export {
  paymentRequiredResponse,
  toRequirementsV1,
  toRequirementsV2,
  type PaymentChallengeInput,
  type PaymentOffer,
} from './payment-required.js'
export { createPaywall, withPayment, type MeteredResponse, type PaidWork, type Paywall, type PaywallOptions, type VerifiedPayment } from './paywall.js'
export {
  createBatchSettlementServer,
  createChannelStateStore,
  type BatchSettlementServer,
  type BatchSettlementServerOptions,
  type ChannelState,
  type ChannelStateStore,
  type ChannelStateStoreOptions,
  type ClaimPolicyOptions,
  type ClaimRound,
} from './batch/index.js'
