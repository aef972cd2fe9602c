import { createServer, type Server } from 'node:http'
import { FacilitatorError } from '../errors/facilitator-error.js'
import type { FetchHandler } from './handler.js'
import { createNodeListener, type NodeListenerOptions } from './node-listener.js'

/** Bounds of a public node:http server, on top of the listener's. */
export interface NodeServerOptions extends NodeListenerOptions {
  /** Most open connections; the next ones are closed at once. @default 1_024 */
  maxConnections?: number
  /** Time a client has to send the request headers; past it, 408 and the connection closes. @default 10_000 */
  headersTimeoutMs?: number
  /** Time a client has to send the whole request, body included; past it, 408 and the connection closes. @default 15_000 */
  requestTimeoutMs?: number
  /** How long an idle keep-alive connection stays open. @default 5_000 */
  keepAliveTimeoutMs?: number
  /** Largest request head (request line and headers) in bytes; past it, 431. @default 16_384 */
  maxHeaderBytes?: number
}

/**
 * A node:http server over a handler with the bounds a public service needs:
 * connections, the time to receive headers and the whole request (a slow
 * client is answered 408 and closed), the request head's size, and (through the
 * listener) the memory held by bodies in flight. Node's own defaults allow
 * 5 minutes for a request and check it every 30 s.
 *
 * @example
 * // partial
 * import { createHandler, createNodeServer } from 'x402-facilitator/http'
 * createNodeServer(createHandler(facilitator), { maxConnections: 2_048 }).listen(4020)
 */
export function createNodeServer(handler: FetchHandler, options: NodeServerOptions = {}): Server {
  const headersTimeout = positive(options.headersTimeoutMs ?? 10_000, 'headersTimeoutMs')
  const requestTimeout = positive(options.requestTimeoutMs ?? 15_000, 'requestTimeoutMs')
  if (headersTimeout > requestTimeout) throw new FacilitatorError('misconfigured', 'createNodeServer: headersTimeoutMs must not exceed requestTimeoutMs')
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: positive(options.keepAliveTimeoutMs ?? 5_000, 'keepAliveTimeoutMs'),
      maxHeaderSize: positive(options.maxHeaderBytes ?? 16_384, 'maxHeaderBytes'),
      // How often node looks for requests past their timeouts: a tenth of the shortest bound, at least 100 ms.
      connectionsCheckingInterval: Math.max(100, Math.floor(Math.min(headersTimeout, requestTimeout) / 10)),
    },
    createNodeListener(handler, options),
  )
  server.maxConnections = positive(options.maxConnections ?? 1_024, 'maxConnections')
  return server
}

function positive(value: number, name: string): number {
  if (!(Number.isFinite(value) && value > 0)) throw new FacilitatorError('misconfigured', `createNodeServer: ${name} must be a positive number`)
  return value
}
