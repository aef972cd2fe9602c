// The resource-server entry (`x402-facilitator/server`): charge for a route through a facilitator, and the x402 headers.
// `batch-settlement`'s channel side needs viem: it has an entry of its own, `x402-facilitator/server/batch`.
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
export { createNodePaywall, type NodeMeteredAnswer, type NodePaidAnswer, type NodePaidWork, type NodePaywall, type NodePaywallOptions } from './node-paywall.js'
