import { traced } from '../../core/tracing.js'
import { countOption } from '../../core/count-option.js'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { isRecord } from '../../schemas/parse-request.js'
import { createConnectionPool, MAX_TIMEOUT_MS, PostFailure, postKeepAlive } from '../../transport/keep-alive-post.js'
import { createRpcCoalescer, DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT, Regroup } from '../../transport/rpc-coalescer.js'
import { connectionCause } from '../../transport/connection-cause.js'

/** ` (connection refused)`: how a connection failed, for a fault message, or nothing. */
const causeOf = (error: unknown) => {
  const cause = connectionCause(error)
  return cause ? ` (${cause})` : ''
}

/** One JSON-RPC call: a Solana RPC method and its positional params. */
export interface RpcCall {
  readonly method: string
  readonly params: readonly unknown[]
}

/** The answer to one call: its `result`, or the node's JSON-RPC `error`. */
export type RpcOutcome =
  | { readonly ok: true; readonly result: unknown }
  | { readonly ok: false; readonly error: { readonly code: number; readonly message: string } }

/**
 * The port the adapter speaks to a Solana node through. `request` sends all
 * `calls` as one JSON-RPC batch (one HTTP round trip) and answers them in order.
 * It throws `FacilitatorError('rpc_unavailable' | 'rpc_error' | 'rpc_timeout')`
 * when the node cannot answer; a per-call JSON-RPC error is an outcome, not a throw.
 * An aborted `signal` ends the caller's wait with `FacilitatorError('timeout')`
 * (the default transport then drops a request still waiting for a slot unsent).
 */
export interface SvmRpcTransport {
  request(calls: readonly RpcCall[], signal?: AbortSignal): Promise<RpcOutcome[]>
}

/** Options of {@link createHttpRpcTransport}. */
export interface HttpRpcTransportOptions {
  /** Node URLs; on a connection failure or a 5xx the next one is tried. */
  urls: readonly string[]
  /** Budget of one HTTP exchange. @default 10_000 */
  timeoutMs?: number
  /** Extra HTTP headers (API keys). They are never quoted in errors. */
  headers?: Record<string, string>
  /**
   * A fetch implementation to send requests through (proxies, instrumentation).
   * @default our HTTP/1.1 client over keep-alive connections (TCP or TLS)
   */
  fetch?: typeof globalThis.fetch
  /**
   * Most requests on the wire at once. A request that finds one free leaves at once
   * (while another is on the wire, a verify's replay check and simulation wait for the
   * end of their event-loop turn, with the other verifies of that turn); those made while
   * every one is taken wait, and leave together as one JSON-RPC batch when one comes
   * back. @default 8
   */
  maxInFlight?: number
}

/** An HTTP answer, read whole. */
interface HttpAnswer {
  readonly status: number
  readonly text: string
}

/** Posts a JSON body and reads the whole answer; throws {@link PostFailure}. */
type Exchange = (url: string, body: string) => Promise<HttpAnswer>

/**
 * A JSON-RPC-over-HTTP transport with batching and fail-over. Errors never
 * quote the URL or headers (they may carry API keys).
 *
 * @example
 * import { createHttpRpcTransport } from 'x402-facilitator/svm'
 *
 * const rpc = createHttpRpcTransport({ urls: ['https://api.devnet.solana.com'] })
 * const [slot] = await rpc.request([{ method: 'getSlot', params: [] }])
 */
export function createHttpRpcTransport(options: HttpRpcTransportOptions): SvmRpcTransport {
  const urls = [...options.urls]
  if (urls.length === 0) throw new FacilitatorError('misconfigured', 'a Solana network needs at least one RPC URL')
  const timeoutMs = options.timeoutMs ?? 10_000
  if (!(timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) throw new FacilitatorError('misconfigured', `the Solana RPC timeout must be above 0 and at most ${MAX_TIMEOUT_MS} ms`)
  const maxInFlight = countOption(options.maxInFlight, DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT, 'maxRpcRequestsInFlight of a Solana network')
  const headers = { 'content-type': 'application/json', ...options.headers }
  const exchange = options.fetch ? fetchExchange(options.fetch, headers, timeoutMs) : nodeExchange(headers, timeoutMs)
  const noAnswerInTime = (cause?: unknown) => new FacilitatorError('rpc_timeout', `the Solana RPC did not answer within ${timeoutMs} ms`, { cause })

  /** One batch of calls to each URL in turn until one answers. */
  const post = async (calls: readonly RpcCall[]): Promise<RpcOutcome[]> => {
    const body = JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, method: call.method, params: call.params })))
    let lastFault: FacilitatorError | undefined
    for (const url of urls) {
      let answer: HttpAnswer
      try {
        answer = await exchange(url, body)
      } catch (error) {
        lastFault =
          error instanceof PostFailure && error.timedOut
            ? noAnswerInTime(error)
            : new FacilitatorError('rpc_unavailable', `the Solana RPC is unreachable${causeOf(error)}`, { cause: error })
        continue
      }
      if (answer.status >= 500 || answer.status === 429) {
        lastFault = new FacilitatorError('rpc_unavailable', `the Solana RPC answered HTTP ${answer.status}`)
        continue
      }
      if (answer.status < 200 || answer.status > 299) throw new FacilitatorError('rpc_error', `the Solana RPC answered HTTP ${answer.status}`)
      let json: unknown
      try {
        json = JSON.parse(answer.text)
      } catch (error) {
        throw new FacilitatorError('rpc_error', 'the Solana RPC answered something that is not JSON', { cause: error })
      }
      return matchBatch(json, calls.length)
    }
    throw lastFault ?? new FacilitatorError('rpc_unavailable', 'the Solana RPC is unreachable')
  }

  // Requests that wait for a free slot leave together, their calls in one batch. A node that
  // refuses that batch as a whole (too many calls or bytes for it) gets each request alone, as
  // it was made, and no merged batch for a minute.
  let mergingRefusedUntil = 0
  const sendGroup = async (requests: readonly (readonly RpcCall[])[]): Promise<RpcOutcome[][]> => {
    if (requests.length === 1) return [await post(requests[0]!)]
    let outcomes: RpcOutcome[]
    try {
      outcomes = await post(requests.flat())
    } catch (error) {
      if (!(error instanceof FacilitatorError && error.code === 'rpc_error')) throw error
      mergingRefusedUntil = Date.now() + MERGING_REFUSED_PAUSE_MS
      throw new Regroup('the Solana RPC refused the merged batch')
    }
    let at = 0
    return requests.map((calls) => outcomes.slice(at, (at += calls.length)))
  }
  const coalescer = createRpcCoalescer<readonly RpcCall[], RpcOutcome[]>(sendGroup, {
    maxInFlight,
    maxGroup: () => (Date.now() < mergingRefusedUntil ? 1 : MAX_MERGED_BYTES),
    weigh: weightOf,
    // A request that waited its whole budget for a slot is never sent.
    maxWaitMs: timeoutMs,
    expired: () => noAnswerInTime(),
  })

  return {
    request(calls, signal) {
      // A child span of the verify or settle that made the request (no-op without an SDK): methods only, never the URL.
      return traced('x402.rpc', { 'rpc.system': 'jsonrpc', 'rpc.method': calls.map((call) => call.method).join(',') }, async () => {
        // A request not yet sent when the signal aborts (or already aborted) is dropped unsent; one on the
        // wire may carry other requests' calls too, so it is not cut short: the caller stops waiting.
        const together = calls.every((call) => TOGETHER_METHODS.has(call.method))
        const [outcomes] = await (signal ? withDeadline(coalescer.request([calls], { signal, together }), signal) : coalescer.request([calls], { together }))
        return outcomes!
      })
    },
  }
}

// Requests of only these methods (a verify's replay check, simulation and Token-2022 mint read) leave with
// the others made in their microtask, or, while another request is on the wire, in their event-loop turn,
// even while requests are free: of the verifies of HTTP requests that arrived together, all but one that
// found the RPC idle then share one batch. Sends and the poller's rounds never wait.
const TOGETHER_METHODS: ReadonlySet<string> = new Set(['getSignatureStatuses', 'simulateTransaction', 'getMultipleAccounts'])

// Bytes of one merged batch, about: under the 50 KiB request body that Agave's RPC takes.
const MAX_MERGED_BYTES = 40_000
const MERGING_REFUSED_PAUSE_MS = 60_000

/** About the bytes one request adds to a batch: its string params (a transaction) and some framing. */
function weightOf(calls: readonly RpcCall[]): number {
  let bytes = 0
  for (const call of calls) {
    bytes += 64 + call.method.length
    for (const param of call.params) bytes += typeof param === 'string' ? param.length : 64
  }
  return bytes
}

/** Our HTTP/1.1 client over keep-alive connections owned by the transport (see keep-alive-post.ts). */
function nodeExchange(headers: Record<string, string>, timeoutMs: number): Exchange {
  const pool = createConnectionPool()
  // Each URL is parsed once, not per request; a malformed one fails every request as unreachable.
  const targets = new Map<string, URL | PostFailure>()
  const targetOf = (url: string): URL | PostFailure => {
    let target = targets.get(url)
    if (target === undefined) {
      try {
        target = new URL(url)
      } catch (error) {
        target = new PostFailure(false, error)
      }
      targets.set(url, target)
    }
    return target
  }
  return async (url, body) => {
    const target = targetOf(url)
    if (target instanceof PostFailure) throw target
    // postKeepAlive rejects with PostFailure only.
    const answer = await postKeepAlive(target, body, { pool, headers, timeoutMs })
    return { status: answer.status, text: answer.text }
  }
}

/** The exchange through a caller-supplied fetch. */
function fetchExchange(doFetch: typeof globalThis.fetch, headers: Record<string, string>, timeoutMs: number): Exchange {
  return async (url, body) => {
    const timeout = AbortSignal.timeout(timeoutMs)
    try {
      // Bounded here too: a fetch that ignores its signal would hold a request slot for good.
      return await withDeadline(
        doFetch(url, { method: 'POST', headers, body, signal: timeout }).then(async (response) => ({ status: response.status, text: await response.text() })),
        timeout,
      )
    } catch (error) {
      throw new PostFailure(timeout.aborted, error)
    }
  }
}

/** Orders a batch answer by id; a node may answer a batch in any order. */
function matchBatch(json: unknown, count: number): RpcOutcome[] {
  if (!Array.isArray(json)) {
    // Some nodes answer a whole rejected batch with one error object.
    const message = isRecord(json) && isRecord(json.error) && typeof json.error.message === 'string' ? json.error.message : 'not a batch answer'
    throw new FacilitatorError('rpc_error', `the Solana RPC rejected the request: ${message}`)
  }
  // One error for several calls refuses the batch as a whole (geth-style "batch too large").
  const [only] = json as unknown[]
  if (json.length === 1 && count > 1 && isRecord(only) && isRecord(only.error)) {
    const message = typeof only.error.message === 'string' ? only.error.message : 'one error for the whole batch'
    throw new FacilitatorError('rpc_error', `the Solana RPC rejected the batch: ${message}`)
  }
  const outcomes: (RpcOutcome | undefined)[] = new Array(count).fill(undefined)
  for (const entry of json) {
    if (!isRecord(entry) || typeof entry.id !== 'number' || entry.id < 0 || entry.id >= count) continue
    if (isRecord(entry.error)) {
      const code = typeof entry.error.code === 'number' ? entry.error.code : 0
      const message = typeof entry.error.message === 'string' ? entry.error.message : 'unknown error'
      outcomes[entry.id] = { ok: false, error: { code, message } }
    } else if ('result' in entry) {
      outcomes[entry.id] = { ok: true, result: entry.result }
    }
  }
  return outcomes.map((outcome) => outcome ?? { ok: false, error: { code: 0, message: 'missing answer in the batch' } })
}

/**
 * The result of one outcome, or a thrown `rpc_error` naming the method. For
 * calls whose JSON-RPC error is infrastructure, not a judgement of the payment.
 */
export function resultOf(outcome: RpcOutcome | undefined, method: string): unknown {
  if (!outcome) throw new FacilitatorError('rpc_error', `the Solana RPC gave no answer to ${method}`)
  if (!outcome.ok) throw new FacilitatorError('rpc_error', `the Solana RPC failed ${method}: ${outcome.error.message}`)
  return outcome.result
}
