import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'

/**
 * JSON-RPC over node:http / node:https with keep-alive connections, shared by
 * the EVM and Solana subpaths (never the core entry, which stays free of node
 * modules). Per request it costs a fraction of what `fetch` does: no web
 * streams, no signal composition, no `Headers` objects.
 */

/** Keep-alive connection pools, one pair per network (never module state). */
export interface KeepAliveAgents {
  readonly 'http:': HttpAgent
  readonly 'https:': HttpsAgent
}

/** A fresh pair of keep-alive connection pools. */
export function createKeepAliveAgents(): KeepAliveAgents {
  return { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) }
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
  readonly agents: KeepAliveAgents
  readonly headers: Readonly<Record<string, string>>
  /** Budget of the exchange, the answer's body included. */
  readonly timeoutMs: number
  readonly signal?: AbortSignal
}

/** Posts `body` and reads the whole answer; rejects with {@link PostFailure} only. */
export function postKeepAlive(url: URL, body: string, options: PostOptions): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const protocol = url.protocol
    if (protocol !== 'http:' && protocol !== 'https:') return reject(new PostFailure(false, new Error(`unsupported protocol ${protocol}`)))
    const { signal } = options
    if (signal?.aborted) return reject(new PostFailure(false, signal.reason))
    let timedOut = false
    let settled = false
    const fail = (error: unknown) => {
      if (settled) return
      settled = true
      cleanup()
      reject(new PostFailure(timedOut, error))
    }
    const send = protocol === 'https:' ? httpsRequest : httpRequest
    const request = send(
      url,
      { method: 'POST', agent: options.agents[protocol], headers: { ...options.headers, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('error', fail)
        response.on('end', () => {
          if (settled) return
          settled = true
          cleanup()
          resolve({
            status: response.statusCode ?? 0,
            statusMessage: response.statusMessage,
            contentType: response.headers['content-type'],
            text: Buffer.concat(chunks).toString('utf8'),
          })
        })
      },
    )
    const timer = setTimeout(() => {
      timedOut = true
      request.destroy(new Error(`no answer within ${options.timeoutMs} ms`))
    }, options.timeoutMs)
    const onAbort = () => request.destroy(new Error('aborted by the caller'))
    signal?.addEventListener('abort', onAbort, { once: true })
    function cleanup() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    request.on('error', fail)
    request.end(body)
  })
}
