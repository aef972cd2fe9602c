import { traced } from '../../core/tracing.js'
import { custom, HttpRequestError, RpcRequestError, TimeoutError, type Transport } from 'viem'
import { createRpcCoalescer, DEFAULT_MAX_IN_FLIGHT, Regroup } from '../../transport/rpc-coalescer.js'
import { basicAuthorization, type ConnectionPool, PostFailure, postKeepAlive, type PostAnswer } from '../../transport/keep-alive-post.js'

/** Options of {@link keepAliveHttp}. */
export interface KeepAliveHttpOptions {
  /** Budget of one HTTP exchange, the answer's body included. */
  readonly timeoutMs: number
  /** Retries of a failed request (viem's `retryCount`). */
  readonly retryCount: number
  /** Connections shared by the transports of one network. */
  readonly pool: ConnectionPool
  /**
   * Most requests on the wire to this URL at once. A call that finds one free
   * leaves at once, alone (one of `batchMethods` waits for the end of its microtask, or of
   * its event-loop turn while another request is on the wire, to leave with the others
   * made meanwhile); calls made while every one is taken wait, and leave together as one
   * JSON-RPC batch when one comes back. A server that answers a
   * batch as a whole gets the same calls alone, and no batch for a minute.
   * @default 8
   */
  readonly maxInFlight?: number
  /**
   * Methods whose requests issued together travel as one JSON-RPC batch even while
   * requests are free: those of one microtask (the receipt poller asks for every
   * pending receipt at once; exactEvm's verify asks for its chain check and the
   * payer's code), and while another request is on the wire, those of one turn of the
   * event loop (the verifies of HTTP requests that arrived together).
   * @default none
   */
  readonly batchMethods?: ReadonlySet<string>
}

// Calls per batch: at or under every node's own batch limit we know of (Erigon 100, geth 1000).
const MAX_GROUP_CALLS = 100

// After a server answered a batch as a whole, calls issued together go alone for this long.
const BATCH_REFUSED_PAUSE_MS = 60_000

type RpcBody = {
  readonly jsonrpc: '2.0'
  readonly id: number
  readonly method: string
  readonly params: unknown
}

interface RpcAnswer {
  readonly id?: unknown
  readonly result?: unknown
  readonly error?: { code: number; message: string; data?: unknown }
}

/** One call's fate in a group: the server's answer (maybe a JSON-RPC error), or no answer. */
type Outcome = { readonly answer: RpcAnswer } | { readonly error: unknown }

/**
 * A viem transport speaking JSON-RPC over our HTTP/1.1 client on keep-alive
 * connections (../transport/keep-alive-post.ts): per request it costs a fraction
 * of what viem's fetch-based `http()` does. Its errors
 * are viem's own (`HttpRequestError`, `RpcRequestError`, `TimeoutError`, quoting
 * the URL without user info and the call's own request, as viem does), so retries,
 * `fallback` and the fault mapping behave as with `http(url, { retryCount, timeout })`.
 * At most `maxInFlight` requests are on the wire (sends aside); a call waits for a
 * free one at most `timeoutMs`, then fails with `TimeoutError` unsent.
 *
 * @example
 * const pool = createConnectionPool() // from ../transport/keep-alive-post.js
 * const client = createPublicClient({ transport: keepAliveHttp(url, { timeoutMs: 4_000, retryCount: 1, pool }) })
 */
export function keepAliveHttp(url: string, options: KeepAliveHttpOptions): Transport {
  const { timeoutMs, retryCount, pool } = options
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
  const batchMethods = options.batchMethods ?? new Set<string>()
  const target = parseTarget(url)
  // One queue per URL, not per viem client: viem's fallback builds the transport again for every request.
  let nextId = 0
  // Until when calls go alone: the server answered a batch as a whole (it takes none, or not that many).
  let batchesRefusedUntil = 0
  const sendGroup = async (bodies: readonly RpcBody[]): Promise<Outcome[]> => {
    if (bodies.length === 1) return [{ answer: (await exchange(target, bodies[0]!, timeoutMs, pool)) as RpcAnswer }]
    let matched: (RpcAnswer | undefined)[] | undefined
    try {
      matched = await exchangeBatch(target, bodies, timeoutMs, pool)
    } catch (error) {
      // Each call gets an error quoting its own request only, never the other callers' calldata.
      return bodies.map((body) => ({ error: errorForCall(error, body, target) }))
    }
    if (!matched) {
      batchesRefusedUntil = Date.now() + BATCH_REFUSED_PAUSE_MS
      throw new Regroup('the server refused the batch as a whole')
    }
    return bodies.map((body, index): Outcome => {
      const answer = matched[index]
      return answer ? { answer } : { error: missingAnswer(body, target) }
    })
  }
  const calls = createRpcCoalescer<RpcBody, Outcome>(sendGroup, {
    maxInFlight,
    maxGroup: () => (Date.now() < batchesRefusedUntil ? 1 : MAX_GROUP_CALLS),
    // A call that waited its whole budget for a slot is never sent: it failed as if sent and unanswered.
    maxWaitMs: timeoutMs,
    expired: ([body]) => new TimeoutError({ body: body!, url: target.href }),
  })

  return (parameters) => {
    const transport = custom(
      {
        request({ method, params }: { method: string; params?: unknown }) {
          // A child span of the verify or settle that made the call (no-op without an SDK); the host only.
          return traced('x402.rpc', { 'rpc.system': 'jsonrpc', 'rpc.method': method, 'server.address': target.url.host }, async () => {
            const body: RpcBody = { jsonrpc: '2.0', id: nextId++, method, params }
            // A send leaves at once: the send lane bounds its wait, and a send still queued when the lane
            // gave up its nonce must not leave later.
            const [outcome] = await calls.request([body], { together: batchMethods.has(method), now: method === 'eth_sendRawTransaction' })
            if (!outcome || 'error' in outcome) throw outcome?.error
            if (outcome.answer.error) throw new RpcRequestError({ body, error: outcome.answer.error, url: target.href })
            return outcome.answer.result
          })
        },
      },
      { key: 'http', name: 'HTTP JSON-RPC (keep-alive)', retryCount },
    )
    return transport(parameters)
  }
}

/** A group's failure as the same call sent alone would have got it, quoting that call only. */
function errorForCall(error: unknown, body: RpcBody, target: Target): unknown {
  if (error instanceof TimeoutError) return new TimeoutError({ body, url: target.href })
  if (error instanceof RpcRequestError) {
    return new RpcRequestError({ body, error: { code: error.code, message: error.details, data: error.data }, status: error.status, url: target.href })
  }
  if (error instanceof HttpRequestError) {
    return new HttpRequestError({ body, cause: error.cause as Error | undefined, details: error.details, status: error.status, url: target.href })
  }
  return error
}

/** One call's answer in a JSON-RPC batch: its result, or the error the same call sent alone would throw. */
export type BatchEntryAnswer = { readonly result: unknown } | { readonly error: Error }

/** Calls sent as one JSON-RPC batch; see {@link keepAliveBatchPoster}. */
export type BatchPoster = (calls: readonly { readonly method: string; readonly params: unknown }[]) => Promise<BatchEntryAnswer[] | undefined>

/**
 * Posts calls as one JSON-RPC batch over the same client, to each URL in turn
 * until one answers (a server handles a batch's calls in order, which is why a
 * signer's transactions travel this way, see ./send-lane.ts). Resolves one
 * answer per call, in call order; a call missing from the answer gets an
 * `HttpRequestError` (no answer), an error entry an `RpcRequestError`, as if
 * it had been sent alone. Resolves `undefined` when the server answered the
 * batch as a whole (one that takes no batches, or not that many calls: a single
 * error, or an HTTP client error other than 408 and 429), and then for a minute
 * without posting; throws viem's transport error of the last URL when none answered.
 *
 * @example
 * const post = keepAliveBatchPoster([url], { timeoutMs: 4_000, pool })
 * const answers = await post(raws.map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })))
 */
export function keepAliveBatchPoster(urls: readonly string[], options: Pick<KeepAliveHttpOptions, 'timeoutMs' | 'pool'>): BatchPoster {
  const targets = urls.map(parseTarget)
  let refusedUntil = 0
  const refused = () => {
    refusedUntil = Date.now() + BATCH_REFUSED_PAUSE_MS
    return undefined
  }
  return async (calls) => {
    if (Date.now() < refusedUntil) return undefined
    const bodies: RpcBody[] = calls.map((call, id) => ({ jsonrpc: '2.0', id, method: call.method, params: call.params }))
    let failure: unknown = new Error('no RPC URL')
    for (const target of targets) {
      let matched: (RpcAnswer | undefined)[] | undefined
      try {
        matched = await exchangeBatch(target, bodies, options.timeoutMs, options.pool)
      } catch (error) {
        failure = error
        continue
      }
      if (!matched) return refused()
      return bodies.map((body, index): BatchEntryAnswer => {
        const answer = matched[index]
        if (!answer) return { error: missingAnswer(body, target) }
        if (answer.error) return { error: new RpcRequestError({ body, error: answer.error, url: target.href }) }
        return { result: answer.result }
      })
    }
    throw failure
  }
}

/**
 * Posts calls as one batch: their answers in call order (`undefined` for a call
 * the answer left out), or `undefined` when the server answered the batch as a
 * whole (see {@link inCallOrder}, {@link refusesBatch}). Throws viem's transport
 * error when no answer came.
 */
async function exchangeBatch(target: Target, bodies: readonly RpcBody[], timeoutMs: number, pool: ConnectionPool): Promise<(RpcAnswer | undefined)[] | undefined> {
  let answers: unknown
  try {
    answers = await exchange(target, bodies as RpcBody[], timeoutMs, pool)
  } catch (error) {
    if (refusesBatch(error)) return undefined
    throw error
  }
  return inCallOrder(bodies, answers)
}

/**
 * A batch's answers matched to its calls by id, in call order (servers may answer
 * in any order), or `undefined` when the batch was answered as a whole: nothing
 * matches, or a single error came back for several calls.
 */
function inCallOrder(bodies: readonly RpcBody[], answers: unknown): (RpcAnswer | undefined)[] | undefined {
  if (!Array.isArray(answers)) return undefined
  // One error for a batch of several calls refuses the batch (geth's "batch too large" carries the first call's id).
  if (answers.length === 1 && bodies.length > 1 && (answers[0] as RpcAnswer | undefined)?.error) return undefined
  const byId = new Map<unknown, RpcAnswer>()
  for (const answer of answers as RpcAnswer[]) if (answer && typeof answer === 'object') byId.set(answer.id, answer)
  const matched = bodies.map((body) => byId.get(body.id))
  return matched.some((answer) => answer !== undefined) ? matched : undefined
}

/**
 * Whether a failed batch exchange refused the batch rather than its calls: an HTTP client
 * error about the request itself (400 "batch too large", 413). A timeout (408) or a rate
 * limit (429) is no answer, as a 5xx is.
 */
function refusesBatch(error: unknown): boolean {
  const status = error instanceof RpcRequestError || error instanceof HttpRequestError ? error.status : undefined
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429
}

const missingAnswer = (body: RpcBody, target: Target) => new HttpRequestError({ body, details: 'missing answer in the batch', url: target.href })

interface Target {
  readonly url: URL
  /** The URL as viem quotes it in errors: without user info. */
  readonly href: string
  readonly headers: Record<string, string>
}

function parseTarget(raw: string): Target {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    // Every request then fails as unreachable, as viem's fetch would.
    return { url: new URL('invalid:'), href: raw, headers }
  }
  if (url.username) {
    // Basic credentials travel as a header, never in the URL errors quote (viem does the same).
    headers.authorization = basicAuthorization(url)!
    url.username = ''
    url.password = ''
  }
  return { url, href: url.toString(), headers }
}

const isRpcError = (data: unknown): data is { error: { code: number; message: string } } => {
  const error = (data as { error?: { code?: unknown; message?: unknown } } | undefined)?.error
  return typeof error?.code === 'number' && typeof error.message === 'string'
}

/** One POST, read whole and parsed; failures as viem's `http()` reports them. */
async function exchange(target: Target, body: RpcBody | RpcBody[], timeoutMs: number, pool: ConnectionPool): Promise<unknown> {
  let answer: PostAnswer
  try {
    answer = await postKeepAlive(target.url, JSON.stringify(body), { pool, headers: target.headers, timeoutMs })
  } catch (error) {
    const failure = error instanceof PostFailure ? error : new PostFailure(false, error)
    if (failure.timedOut) throw new TimeoutError({ body, url: target.href })
    throw new HttpRequestError({ body, cause: failure.cause as Error, url: target.href })
  }
  const { status } = answer
  const ok = status >= 200 && status <= 299
  let data: unknown
  try {
    data = JSON.parse(answer.text || '{}')
  } catch (error) {
    if (ok || answer.contentType?.startsWith('application/json')) throw new HttpRequestError({ body, cause: error as Error, url: target.href })
    data = { error: answer.text }
  }
  if (ok) return data
  // A server that rejects a whole batch replies with a single error, bare or in a one-element array.
  const error = Array.isArray(body) && Array.isArray(data) && data.length === 1 ? data[0] : data
  if (isRpcError(error)) throw new RpcRequestError({ body, error: error.error, status, url: target.href })
  const details = JSON.stringify((data as { error?: unknown }).error) || answer.statusMessage || `HTTP ${status}`
  throw new HttpRequestError({ body, details, status, url: target.href })
}
