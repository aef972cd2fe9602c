import diagnostics from 'node:diagnostics_channel'
import type { ConnectionPool } from './connection-pool.js'
import { createResponseReader, type HttpResponse, type ResponseLimits } from './response-reader.js'

/**
 * JSON-RPC POSTs over HTTP/1.1 keep-alive connections, shared by the EVM and
 * Solana subpaths (never the core entry, which stays free of node modules).
 * The request is written in one piece on a pooled socket and the answer read
 * by our own reader: on a loopback node an exchange costs about a sixth of the
 * CPU node:http's client does (53 µs against 324 µs measured here), and the
 * exchanges are most of a settle's work.
 */

export { createConnectionPool, type ConnectionPool } from './connection-pool.js'

/**
 * Every request the default transports send is published here as
 * `{ host }` (the URL's host and port, never its path or credentials, which
 * may hold an API key), for whoever counts RPC calls.
 */
export const RPC_REQUEST_CHANNEL = 'x402-facilitator:rpc-request'
const requestChannel = diagnostics.channel(RPC_REQUEST_CHANNEL)

// The answers are JSON-RPC results; a bound keeps a hostile endpoint from filling memory.
const LIMITS: ResponseLimits = { maxHeaderBytes: 64 * 1024, maxBodyBytes: 64 * 1024 * 1024 }

/** The whole answer of one POST. */
export interface PostAnswer {
  readonly status: number
  readonly statusMessage: string | undefined
  readonly contentType: string | undefined
  readonly text: string
}

/** A POST that got no answer: `timedOut` tells a missed deadline from a refused or cut connection. */
export class PostFailure extends Error {
  override readonly name = 'PostFailure'
  constructor(
    readonly timedOut: boolean,
    cause: unknown,
  ) {
    super(timedOut ? 'no answer in time' : 'the request failed', { cause })
  }
}

export interface PostOptions {
  readonly pool: ConnectionPool
  readonly headers: Readonly<Record<string, string>>
  /** Budget of the exchange, connecting and the answer's body included. */
  readonly timeoutMs: number
  readonly signal?: AbortSignal
}

/**
 * Posts `body` and reads the whole answer; rejects with {@link PostFailure}
 * only. A failed exchange is not repeated here (the callers' retries decide,
 * as with node:http): kept connections are closed before common server idle
 * timeouts, and one the server closes while idle is never lent again.
 */
export function postKeepAlive(url: URL, body: string, options: PostOptions): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return reject(new PostFailure(false, new Error(`unsupported protocol ${url.protocol}`)))
    let request: string
    try {
      request = encodeRequest(url, body, options.headers)
    } catch (error) {
      return reject(new PostFailure(false, error))
    }
    const { signal, pool } = options
    if (signal?.aborted) return reject(new PostFailure(false, signal.reason))
    if (requestChannel.hasSubscribers) requestChannel.publish({ host: url.host })

    const { socket } = pool.take(url)
    const reader = createResponseReader(LIMITS)
    let settled = false
    let timedOut = false
    const settle = () => {
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      socket.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', fail)
    }
    const fail = (error: unknown) => {
      if (settled) return
      settle()
      socket.destroy()
      reject(new PostFailure(timedOut, error))
    }
    const done = (response: HttpResponse) => {
      settle()
      if (response.reusable) pool.give(url, socket, response.idleHintMs === undefined ? undefined : response.idleHintMs - 1_000)
      else socket.destroy()
      resolve({
        status: response.status,
        statusMessage: response.statusMessage || undefined,
        contentType: response.headers.get('content-type'),
        text: response.body.toString('utf8'),
      })
    }
    function onData(chunk: Buffer) {
      let response: HttpResponse | undefined
      try {
        response = reader.push(chunk)
      } catch (error) {
        return fail(error)
      }
      if (response) done(response)
    }
    // The server ended the connection: an answer read to its end is complete, any other is cut short.
    function onEnd() {
      let response: HttpResponse
      try {
        response = reader.end()
      } catch (error) {
        return fail(error)
      }
      done(response)
    }
    const timer = setTimeout(() => {
      timedOut = true
      fail(new Error(`no answer within ${options.timeoutMs} ms`))
    }, options.timeoutMs)
    const onAbort = () => fail(signal?.reason ?? new Error('aborted by the caller'))
    signal?.addEventListener('abort', onAbort, { once: true })
    socket.on('data', onData).on('end', onEnd).on('close', onEnd).on('error', fail)
    socket.write(request)
  })
}

const FRAMING_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection'])

/** The request head and body as one string: one write, one packet for a small call. */
function encodeRequest(url: URL, body: string, headers: Readonly<Record<string, string>>): string {
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`
  for (const name in headers) {
    // Framing is ours to write: a configured copy would contradict it.
    if (FRAMING_HEADERS.has(name.toLowerCase())) continue
    const value = headers[name]!
    // Header names and values come from configuration; a line break would forge another header.
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new Error(`the header ${JSON.stringify(name)} holds a line break`)
    head += `${name}: ${value}\r\n`
  }
  if (url.username && !Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) {
    // Credentials in the URL travel as Basic authentication, as node:http sends them.
    head += `authorization: Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}\r\n`
  }
  return `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}
