import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { FetchHandler } from './handler.js'

export interface NodeListenerOptions {
  /** Origin used to build request URLs when the Host header is missing. @default 'http://localhost' */
  origin?: string
}

/**
 * Adapts a web-standard handler to node:http (and to Express or Fastify,
 * which hand out the same request and response objects). The body is streamed
 * into the handler, which enforces its own size limit.
 *
 * @example
 * http.createServer(createNodeListener(createHandler(facilitator))).listen(4020)
 */
export function createNodeListener(handler: FetchHandler, options: NodeListenerOptions = {}) {
  const fallbackOrigin = options.origin ?? 'http://localhost'
  return async function listener(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const response = await handler(await toBufferedRequest(req, fallbackOrigin))
      await writeResponse(response, res)
    } catch {
      // Only a broken socket gets here: the handler itself never throws.
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":"internal error","code":"internal_error"}')
    }
  }
}

/** Builds a web `Request` from a node request (body streamed, not buffered). */
export function toRequest(req: IncomingMessage, fallbackOrigin = 'http://localhost'): Request {
  const host = req.headers.host
  const origin = host && /^[\w.:[\]-]+$/.test(host) ? `http://${host}` : fallbackOrigin
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':')) continue
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else headers.set(name, value)
  }
  const method = req.method ?? 'GET'
  const hasBody = method !== 'GET' && method !== 'HEAD'
  const init: RequestInit & { duplex?: 'half' } = { method, headers }
  if (hasBody) {
    init.body = Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>
    init.duplex = 'half'
  }
  return new Request(new URL(req.url ?? '/', origin), init)
}

/**
 * Bodies up to this declared size are read before the `Request` is built:
 * a web stream over a node stream costs more than a whole /verify body, and
 * node's HTTP parser never delivers more bytes than `content-length` says.
 * The bytes are handed over as they came: the handler decodes them once
 * (invalid UTF-8 becomes U+FFFD), with no decode and re-encode on the way.
 */
const BUFFERED_BODY_BYTES = 65_536

async function toBufferedRequest(req: IncomingMessage, fallbackOrigin: string): Promise<Request> {
  const declared = Number(req.headers['content-length'])
  const method = req.method ?? 'GET'
  if (method === 'GET' || method === 'HEAD' || !Number.isSafeInteger(declared) || declared > BUFFERED_BODY_BYTES || req.headers['transfer-encoding'] !== undefined) {
    return toRequest(req, fallbackOrigin)
  }
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)))
  const host = req.headers.host
  const origin = host && /^[\w.:[\]-]+$/.test(host) ? `http://${host}` : fallbackOrigin
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':')) continue
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else headers.set(name, value)
  }
  return new Request(new URL(req.url ?? '/', origin), { method, headers, body: Buffer.concat(chunks) })
}

/** Writes a web `Response` to a node response. */
export async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    const existing = headers[name]
    headers[name] = existing === undefined ? value : ([] as string[]).concat(existing, value)
  })
  res.writeHead(response.status, headers)
  if (!response.body) {
    res.end()
    return
  }
  res.end(Buffer.from(await response.arrayBuffer()))
}
