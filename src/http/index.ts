export {
  createHandler,
  json,
  type CorsOptions,
  type ExtraRoute,
  type FetchHandler,
  type HandlerOptions,
  type PaymentRoute,
} from './handler.js'
export { createNodeListener, toRequest, writeResponse, type NodeListenerOptions } from './node-listener.js'
export { readJsonBody, exceedsDepth } from './read-body.js'
