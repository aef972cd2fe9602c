import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import { answerOf, type FetchHandler } from './handler.js'
import type { HttpAnswer, HttpCall } from './http-call.js'
import { concatBytes, readStreamBytes, tooLarge } from './read-body.js'
import { plainPathname } from './route-path.js'
import { FacilitatorError } from '../errors/facilitator-error.js'

export interface NodeListenerOptions {
  /** Origin used to build request URLs when the Host header is missing. @default 'http://localhost' */
  origin?: string
  /**
   * Most bytes of request bodies held in memory at once, over every request in flight.
   * A body that would go past it is refused with 503 `server_busy` and its connection
   * closed, so thousands of slow, nearly complete bodies cannot fill the process.
   * @default 16 MiB
   */
  maxBodyBytesInFlight?: number
}

const DEFAULT_MAX_BODY_BYTES_IN_FLIGHT = 16 * 1024 * 1024

/**
 * Adapts a web-standard handler to node:http (and to Express or Fastify,
 * which hand out the same request and response objects). A handler made by
 * `createHandler` is driven without web `Request`/`Response` objects (they
 * cost more than a /verify body); any other handler gets a `Request`.
 *
 * @example
 * // partial
 * http.createServer(createNodeListener(createHandler(facilitator))).listen(4020)
 */
export function createNodeListener(handler: FetchHandler, options: NodeListenerOptions = {}) {
  const fallbackOrigin = options.origin ?? 'http://localhost'
  const answer = answerOf(handler)
  const budget = { left: options.maxBodyBytesInFlight ?? DEFAULT_MAX_BODY_BYTES_IN_FLIGHT }
  return async function listener(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      if (answer) await writeAnswer(await answer(nodeCall(req, fallbackOrigin, budget)), res)
      else await writeResponse(await handler(toRequest(req, fallbackOrigin)), res)
    } catch {
      // Only a broken socket gets here: the handler itself never throws.
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":"internal error","code":"internal_error"}')
    }
  }
}

/** The request's origin over `http:` from its Host header, or `fallbackOrigin` when that is missing or malformed. */
export function originOf(req: IncomingMessage, fallbackOrigin: string): string {
  const host = req.headers.host
  return host && /^[\w.:[\]-]+$/.test(host) ? `http://${host}` : fallbackOrigin
}

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':')) continue
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else headers.set(name, value)
  }
  return headers
}

/** Builds a web `Request` from a node request (body streamed, not buffered). */
export function toRequest(req: IncomingMessage, fallbackOrigin = 'http://localhost'): Request {
  const method = req.method ?? 'GET'
  const init: RequestInit & { duplex?: 'half' } = { method, headers: headersOf(req) }
  if (method !== 'GET' && method !== 'HEAD') {
    init.body = Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>
    init.duplex = 'half'
  }
  return new Request(new URL(req.url ?? '/', originOf(req, fallbackOrigin)), init)
}

/** The handler's view of a node request: headers read in place, body read once with its limit. */
function nodeCall(req: IncomingMessage, fallbackOrigin: string, budget: BodyBudget): HttpCall {
  const target = req.url ?? '/'
  let url: URL | undefined
  const urlOf = () => (url ??= new URL(target, originOf(req, fallbackOrigin)))
  // Most targets are plain paths: the URL parser (about 1 µs) only for the others.
  let pathname = plainPathname(target)
  if (pathname === undefined) {
    try {
      pathname = urlOf().pathname
    } catch {
      pathname = undefined
    }
  }
  let request: Request | undefined
  return {
    method: req.method ?? 'GET',
    pathname,
    clientAddress: req.socket?.remoteAddress,
    header: (name) => nodeHeader(req, name),
    bytes: (maxBytes) => readNodeBody(req, maxBytes, budget),
    // Built only when asked (authentication hook, extra routes, error hook); the body stays with the handler.
    request: () => (request ??= new Request(pathname === undefined ? new URL('/', fallbackOrigin) : urlOf(), { method: req.method ?? 'GET', headers: headersOf(req) })),
  }
}

/** A header of a node request as web `Headers.get` answers it: null when absent, repeated values joined. */
export function nodeHeader(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name.toLowerCase()]
  if (value === undefined) return null
  return Array.isArray(value) ? value.join(', ') : value
}

/** Bytes of bodies that may still be buffered, shared by every request of one listener. */
interface BodyBudget {
  left: number
}

function readNodeBody(req: IncomingMessage, maxBytes: number, budget: BodyBudget): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let settled = false
    // The bytes this body holds go back to the budget once it is read, refused or abandoned.
    const giveBack = () => {
      if (settled) return
      settled = true
      budget.left += size
    }
    const stop = (error: unknown) => {
      // Stop reading: the rest of the body is never buffered.
      req.off('data', onData)
      req.pause()
      giveBack()
      reject(error)
    }
    const onData = (chunk: Buffer) => {
      if (settled) return
      if (size + chunk.byteLength > maxBytes) return stop(tooLarge(maxBytes))
      if (chunk.byteLength > budget.left) {
        return stop(new FacilitatorError('server_busy', 'too many request bodies are being received at once; retry shortly', { details: { closeConnection: true } }))
      }
      budget.left -= chunk.byteLength
      size += chunk.byteLength
      chunks.push(chunk)
    }
    // Left in place after the end: a request emits nothing more worth hearing, and a settled promise ignores it.
    req.on('data', onData)
    req.once('end', () => {
      const bytes = concatBytes(chunks, size)
      giveBack()
      resolve(bytes)
    })
    req.once('error', stop)
    // A client that goes away mid-body (or is cut by the server's request timeout) frees its share.
    req.once('close', () => {
      if (!settled) stop(new FacilitatorError('request_timeout', 'the request body was not received in time'))
    })
  })
}

function writeAnswer(answer: HttpAnswer | Response, res: ServerResponse): void | Promise<void> {
  if (answer instanceof Response) return writeResponse(answer, res)
  if (answer.body == null) {
    res.writeHead(answer.status, answer.headers)
    res.end()
    return
  }
  // With its length given, node:http writes head and body as one string instead of chunked framing in four parts.
  // Object.assign, not a spread with one more key: V8 builds that spread on a slow path (about 2 µs against 0.1 µs).
  res.writeHead(answer.status, Object.assign({}, answer.headers, { 'content-length': Buffer.byteLength(answer.body) }))
  res.end(answer.body)
}

/** Writes a web `Response` to a node response. */
export async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    const existing = headers[name]
    headers[name] = existing === undefined ? value : ([] as string[]).concat(existing, value)
  })
  if (!response.body) {
    res.writeHead(response.status, headers)
    res.end()
    return
  }
  // The stream's reader directly: half the CPU of `arrayBuffer()`, which goes through more layers of promises.
  const body = await readStreamBytes(response.body, Number.POSITIVE_INFINITY)
  // With its length given, node:http writes head and body at once instead of chunked framing.
  if (headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) headers['content-length'] = String(body.byteLength)
  res.writeHead(response.status, headers)
  res.end(body)
}

