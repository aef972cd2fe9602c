import diagnostics from 'node:diagnostics_channel'
import type { ConnectionPool } from './connection-pool.js'
import { createResponseReader, HTTP_TOKEN, type HttpResponse, type ResponseLimits } from './response-reader.js'

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

/**
 * Every exchange's end is published here as `{ host, outcome, status?, durationMs }`:
 * `outcome` is `ok` (an HTTP answer below 500), `http_error` (5xx), `timeout` or
 * `error` (the connection failed). Never the path or credentials. Metrics use it.
 */
export const RPC_RESPONSE_CHANNEL = 'x402-facilitator:rpc-response'
const responseChannel = diagnostics.channel(RPC_RESPONSE_CHANNEL)

/** What {@link RPC_RESPONSE_CHANNEL} carries. */
export interface RpcResponseEvent {
  readonly host: string
  readonly outcome: 'ok' | 'http_error' | 'timeout' | 'error'
  readonly status?: number
  /** Why a connection failed (`outcome: 'error'`), as node's error code: `ECONNREFUSED`, `ENOTFOUND`, `ECONNRESET`, … */
  readonly code?: string
  readonly durationMs: number
}

// The answers are JSON-RPC results; a bound keeps a hostile endpoint from filling memory.
const LIMITS: ResponseLimits = { maxHeaderBytes: 64 * 1024, maxBodyBytes: 64 * 1024 * 1024 }

/** Node's code of a failed connection (`ECONNREFUSED`), never its message (which may quote an address with a key). */
function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(code) ? code : undefined
}

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
 * only. One case is repeated here, once, on a new connection: a kept connection
 * that sat idle (the pool's `stale`) and ended before any byte of an answer, which
 * is how a server's idle timeout firing just as the request left looks. Every
 * call made through here may be repeated (reads, and sends of signed bytes, which
 * can only ever be one transaction); other failures are the callers' to retry,
 * as with node:http.
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
    const startedAt = responseChannel.hasSubscribers ? performance.now() : 0
    const report = (outcome: RpcResponseEvent['outcome'], status?: number, code?: string) => {
      if (!responseChannel.hasSubscribers) return
      const event: RpcResponseEvent = { host: url.host, outcome, ...(status === undefined ? {} : { status }), ...(code === undefined ? {} : { code }), durationMs: performance.now() - startedAt }
      responseChannel.publish(event)
    }

    const first = pool.take(url)
    let socket = first.socket
    let reader = createResponseReader(LIMITS)
    let received = false
    let mayRetry = first.stale
    let settled = false
    let timedOut = false
    const detach = () => {
      socket.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', onError)
    }
    const settle = () => {
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      detach()
    }
    const fail = (error: unknown) => {
      if (settled) return
      settle()
      socket.destroy()
      report(timedOut ? 'timeout' : 'error', undefined, timedOut ? undefined : errorCode(error))
      reject(new PostFailure(timedOut, error))
    }
    /** The connection ended or failed: a stale one that never answered is replaced once. */
    const lost = (error: unknown) => {
      if (settled) return
      if (!mayRetry || received) return fail(error)
      mayRetry = false
      detach()
      socket.destroy()
      socket = pool.open(url)
      reader = createResponseReader(LIMITS)
      send()
    }
    const done = (response: HttpResponse) => {
      settle()
      if (response.reusable) pool.give(url, socket, response.idleHintMs === undefined ? undefined : response.idleHintMs - 1_000)
      else socket.destroy()
      report(response.status >= 500 ? 'http_error' : 'ok', response.status)
      resolve({
        status: response.status,
        statusMessage: response.statusMessage || undefined,
        contentType: response.headers.get('content-type'),
        text: response.body.toString('utf8'),
      })
    }
    function onData(chunk: Buffer) {
      received = true
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
        return lost(error)
      }
      done(response)
    }
    function onError(error: Error) {
      lost(error)
    }
    function send() {
      socket.on('data', onData).on('end', onEnd).on('close', onEnd).on('error', onError)
      socket.write(request)
    }
    const timer = setTimeout(() => {
      timedOut = true
      fail(new Error(`no answer within ${options.timeoutMs} ms`))
    }, options.timeoutMs)
    const onAbort = () => fail(signal?.reason ?? new Error('aborted by the caller'))
    signal?.addEventListener('abort', onAbort, { once: true })
    send()
  })
}

const FRAMING_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection'])
// Visible ASCII, spaces and tabs: what node:http lets through, minus bytes above 0x7f (sent as UTF-8 they would not be what was configured).
const HEADER_VALUE = /^[\t\x20-\x7e]*$/

/** The request head and body as one string: one write, one packet for a small call. */
function encodeRequest(url: URL, body: string, headers: Readonly<Record<string, string>>): string {
  let head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`
  for (const name in headers) {
    const value = headers[name]!
    // Names and values come from configuration: a line break or a stray byte would forge or garble a header.
    if (!HTTP_TOKEN.test(name) || !HEADER_VALUE.test(value)) throw new Error(`the header ${JSON.stringify(name)} has a character HTTP does not allow in a header`)
    // Framing is ours to write: a configured copy would contradict it.
    if (FRAMING_HEADERS.has(name.toLowerCase())) continue
    head += `${name}: ${value}\r\n`
  }
  const credentials = basicAuthorization(url)
  if (credentials && !Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) head += `authorization: ${credentials}\r\n`
  return `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
}

/** The `Authorization` value for credentials in a URL (`https://user:pass@host`), as node:http sends them. */
export function basicAuthorization(url: URL): string | undefined {
  if (!url.username) return undefined
  return `Basic ${Buffer.from(`${decodeLenient(url.username)}:${decodeLenient(url.password)}`).toString('base64')}`
}

/** Percent-decoding that keeps a malformed escape as written instead of throwing. */
function decodeLenient(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The longest delay a Node timer can hold (a longer one fires at once). */
export const MAX_TIMEOUT_MS = 2_147_483_647
