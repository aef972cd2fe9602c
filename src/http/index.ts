export {
  answerOf,
  createHandler,
  json,
  toResponse,
  type CallAnswerer,
  type CorsOptions,
  type ExtraRoute,
  type FetchHandler,
  type HandlerOptions,
  type PaymentRoute,
} from './handler.js'
export type { HttpAnswer, HttpCall } from './http-call.js'
export { createNodeListener, toRequest, writeResponse, type NodeListenerOptions } from './node-listener.js'
export { exceedsDepth, readJsonBody } from './read-body.js'
