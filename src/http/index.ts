// The HTTP entry (`x402-facilitator/http`): the facilitator's routes as a web handler, and its node:http bridges.
export {
  createHandler,
  type AuthenticatedRoute,
  type AuthenticateResult,
  type CorsOptions,
  type ExtraRoute,
  type FetchHandler,
  type HandlerOptions,
  type PaymentRoute,
} from './handler.js'
export type { HttpAnswer, HttpCall } from './http-call.js'
export { createNodeListener, toRequest, writeResponse, type NodeListenerOptions } from './node-listener.js'
export { createNodeServer, type NodeServerOptions } from './node-server.js'
export { REQUEST_ID_HEADER, requestIdOf, withRequestId, type RequestIdOptions } from './request-id.js'
export { healthRoutes, type HealthRoutePaths } from './health-routes.js'
export { createRateLimiter, type RateLimiter, type RateLimitOptions, type RateLimitRule } from './rate-limit.js'
export { forwardedClientAddress, proxiedClientAddress, type TrustProxy } from './client-address.js'
