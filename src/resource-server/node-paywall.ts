/**
 * The paywall on node:http's own request and response (and so in Express, whose req/res they are):
 * the same core as `createPaywall`, without building a web `Request` or `Response` per request.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { nodeHeader, originOf } from '../http/node-listener.js'
import type { AnswerKit } from './paywall-answer.js'
import { createPaywallCore, type PaywallRequestView } from './paywall-core.js'
import type { PaywallOptions, VerifiedPayment } from './paywall.js'

/** What node-native paid work answers: a status (default 200), headers and a body (default empty). */
export interface NodePaidAnswer {
  /** 200 to 599. @default 200 */
  readonly status?: number
  readonly headers?: Record<string, string>
  readonly body?: string | Uint8Array
}

/** What node-native paid work answers for a metered (`upto`) payment: its answer and the usage to charge. */
export interface NodeMeteredAnswer {
  readonly response: NodePaidAnswer
  readonly usage: bigint
}

/**
 * The paid work of a node paywall: runs only for a verified payment, and answers by returning (it
 * does not write to the response). A plain answer charges a fixed-price payment its price; a
 * metered (`upto`) payment must answer `{ response, usage }`.
 */
export type NodePaidWork = (payment: VerifiedPayment) => Promise<NodePaidAnswer | NodeMeteredAnswer>

/** A paid endpoint on node:http: answers `res` once the work ran (or the payment was refused). */
export type NodePaywall = (req: IncomingMessage, res: ServerResponse, work: NodePaidWork) => Promise<void>

export interface NodePaywallOptions extends PaywallOptions {
  /**
   * Told of a throw of the work or a fault of the channel store, after the 500 is answered (the
   * returned promise never rejects, so a plain node:http server cannot crash on it).
   * @default writes the error to `console.error`
   */
  onError?: (error: unknown, req: IncomingMessage) => void
}

/**
 * {@link createPaywall} for node:http and Express: the same offers, checks, charges, statuses,
 * headers and bodies, read from the `IncomingMessage` and written to the `ServerResponse` directly
 * (no web `Request`/`Response` per request, which cost more than a voucher's own checks).
 *
 * The work answers a plain `{ status, headers, body }` (a string or bytes), or `{ response, usage }`
 * for a metered payment; `content-length` is written from the body. The same rules as
 * `createPaywall`: nothing is charged on a work status >= 400, and the work's mistakes (a usage out
 * of range, a missing usage, an answer that is not a valid status, headers and body) are answered
 * 500 `{code: "misconfigured"}` with nothing charged. The request URL of the challenge is built from
 * the Host header over `http:` (set `resource.url` behind a proxy). When the work throws (or the
 * channel store fails), nothing is charged, the answer is 500 `{code: "internal_error"}`, as
 * `createNodeListener` answers for `createPaywall`, and the error goes to `onError`; the returned
 * promise does not reject.
 *
 * @example
 * import { createServer } from 'node:http'
 * import { createFacilitator } from 'x402-facilitator'
 * import { evmSchemes } from 'x402-facilitator/evm'
 * import { createNodePaywall } from 'x402-facilitator/server'
 * import { privateKeyToAccount } from 'viem/accounts'
 *
 * const facilitator = createFacilitator({
 *   schemes: evmSchemes({ networks: [{ network: 'base', rpcUrls: [process.env.BASE_RPC!] }], signers: [privateKeyToAccount(process.env.FACILITATOR_KEY as `0x${string}`)] }),
 * })
 * const usdc = '0x833589fCD6eDb6E08f4c7C32B51991b6D7C02913'
 * const paid = createNodePaywall({
 *   facilitator,
 *   offers: [{ scheme: 'exact', network: 'eip155:8453', amount: '10000', asset: usdc, payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C', extra: { name: 'USD Coin', version: '2' } }],
 * })
 * // In Express: app.get('/weather', (req, res) => paid(req, res, work))
 * createServer((req, res) => void paid(req, res, async () => ({ headers: { 'content-type': 'application/json' }, body: '{"weather":"sunny"}' }))).listen(3000)
 */
export function createNodePaywall(options: NodePaywallOptions): NodePaywall {
  const core = createPaywallCore(options)
  const onError = options.onError ?? ((error: unknown) => console.error('x402-facilitator: createNodePaywall answered 500:', error))
  return async (req, res, work) => {
    try {
      writeAnswer(res, await core(nodeView(req), work, nodeAnswers))
    } catch (error) {
      // A throw of the work or a fault of the channel store: answered as createNodeListener answers a web handler's.
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":"internal error","code":"internal_error"}')
      try {
        onError(error, req)
      } catch {
        // the operator's reporter failing must not reject the request's promise
      }
    }
  }
}

function nodeView(req: IncomingMessage): PaywallRequestView {
  return {
    url() {
      const origin = originOf(req, 'http://localhost')
      try {
        return new URL(req.url ?? '/', origin).href
      } catch {
        return `${origin}/`
      }
    },
    header: (name) => nodeHeader(req, name),
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// What node:http refuses in a header value (it would throw after the charge).
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/

const nodeAnswers: AnswerKit<NodePaidAnswer> = {
  fromPlain: (answer) => answer,
  statusOf: (answer) => answer.status ?? 200,
  withHeaders(answer, added) {
    const headers: Record<string, string> = {}
    const replaced = new Set(Object.keys(added).map((name) => name.toLowerCase()))
    for (const name in answer.headers) if (!replaced.has(name.toLowerCase())) headers[name] = answer.headers[name]!
    return { ...answer, headers: Object.assign(headers, added) }
  },
  problemOf(answer) {
    if (typeof answer !== 'object' || answer === null) return `the paid work answered ${answer === null ? 'null' : typeof answer}, not { status, headers, body } (or { response, usage })`
    const { status, headers, body } = answer
    if (status !== undefined && (!Number.isInteger(status) || status < 200 || status > 599)) return `the paid work answered status ${String(status)}: use 200 to 599`
    if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) return `the paid work answered a body that is neither a string nor a Uint8Array (${typeof body})`
    if (headers === undefined) return undefined
    if (typeof headers !== 'object' || headers === null) return 'the paid work answered headers that are not a record of strings'
    for (const name in headers) {
      const value: unknown = headers[name]
      if (!TOKEN.test(name)) return `the paid work answered a header name that is not an HTTP token (${JSON.stringify(name)})`
      if (typeof value !== 'string' || BAD_VALUE.test(value)) return `the paid work answered header ${name} with a value HTTP cannot carry`
    }
    return undefined
  },
}

function writeAnswer(res: ServerResponse, answer: NodePaidAnswer): void {
  const body = answer.body ?? ''
  const headers: Record<string, string | number> = {}
  for (const name in answer.headers) if (name.length !== 14 || name.toLowerCase() !== 'content-length') headers[name] = answer.headers[name]!
  headers['content-length'] = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
  if (res.headersSent) throw new Error('the paid work wrote to the response: answer by returning { status, headers, body }')
  res.writeHead(answer.status ?? 200, headers)
  res.end(body)
}
