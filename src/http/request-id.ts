import type { FetchHandler } from './handler.js'

/** How a handler names each request (`createHandler({ requestId })`, `withRequestId`). */
export interface RequestIdOptions {
  /** The header read from the request (when sent and sane) and written on the answer. @default 'x-request-id' */
  header?: string
  /**
   * Runs the request's work knowing its id, so that every log line the request causes can
   * carry it: with node's `AsyncLocalStorage`, `(id, work) => storage.run(id, work)`, and
   * a logger that reads `storage.getStore()` (pino's `mixin`). @default the work runs as is
   */
  run?: <T>(id: string, work: () => T) => T
}

/** The default header of request ids, as proxies and tracing tools send it. */
export const REQUEST_ID_HEADER = 'x-request-id'

// Letters, digits and the punctuation of UUIDs, trace ids and base64: nothing that could forge a log field or a header.
const SANE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/**
 * The id of a request: the one its client sent when it is 1 to 128 characters of letters,
 * digits and `._:@/+=-`, else a new random UUID.
 *
 * @example
 * import { requestIdOf } from 'x402-facilitator/http'
 *
 * requestIdOf('4bf92f35-77b3')  // '4bf92f35-77b3'
 * requestIdOf('bad id "quoted"') // a new UUID
 */
export function requestIdOf(sent: string | null | undefined): string {
  return sent !== null && sent !== undefined && SANE_ID.test(sent) ? sent : crypto.randomUUID()
}

/** The header name and the runner of `options`, checked. */
export function requestIdSettings(options: RequestIdOptions | true): { header: string; run: RequestIdOptions['run'] } {
  const settings = options === true ? {} : options
  return { header: (settings.header ?? REQUEST_ID_HEADER).toLowerCase(), run: settings.run }
}

/**
 * Gives every request of any web-standard handler an id (see `requestIdOf`), runs it with
 * `run`, and echoes the id in the answer's header. `createHandler` does the same with its
 * own `requestId` option, without giving up the node listener's fast path.
 *
 * @example
 * // partial
 * const storage = new AsyncLocalStorage<string>()
 * const statsHost = withRequestId(stats.handler(), { run: (id, work) => storage.run(id, work) })
 */
export function withRequestId(handler: FetchHandler, options: RequestIdOptions = {}): FetchHandler {
  const { header, run } = requestIdSettings(options)
  return async (request) => {
    const id = requestIdOf(request.headers.get(header))
    const response = run ? await run(id, () => handler(request)) : await handler(request)
    try {
      response.headers.set(header, id)
      return response
    } catch {
      // Immutable headers (a Response.redirect, a fetched one): the same answer in a new envelope.
      const copy = new Response(response.body, response)
      copy.headers.set(header, id)
      return copy
    }
  }
}
