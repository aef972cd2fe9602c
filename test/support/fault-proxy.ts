import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** How the proxy treats the next requests. */
export type FaultMode =
  | { kind: 'pass' }
  /** Forward after a delay. */
  | { kind: 'delay'; ms: number }
  /** Accept the request and never answer. */
  | { kind: 'hang' }
  /** Answer an HTTP error without forwarding. */
  | { kind: 'error'; status: number }
  /** Answer a JSON-RPC error without forwarding, as a hosted RPC's gateway does (rate limit, upstream failure). */
  | { kind: 'gateway-error'; status: number; code: number }
  /** Destroy the connection without an answer. */
  | { kind: 'cut' }
  /** Forward, then destroy the connection instead of relaying the answer (the request did reach the chain). */
  | { kind: 'cut-after-forward' }
  /**
   * Answer a JSON-RPC batch as a whole with one error, as a server that takes no batches does
   * (`object`), or as geth refuses a batch above its limit, one error in an array with the first
   * call's id (`array`), with HTTP `status` (200 by default); single calls pass.
   */
  | { kind: 'refuse-batches'; shape?: 'object' | 'array'; status?: number }
  /** Answer every call with this `result` without forwarding (a node or gateway that answers garbage). */
  | { kind: 'result'; result: unknown }

export interface FaultProxy {
  readonly url: string
  /** Requests seen, by JSON-RPC method (batches count each method). */
  readonly methods: string[]
  /** The JSON-RPC calls of each request received, in order (a batch is one request of several calls). */
  readonly calls: { method: string; params: unknown }[][]
  /** Requests received (a JSON-RPC batch is one request). */
  requests: number
  /** Most requests open at once (received, not yet answered or cut), since the start or the last `resetPeak()`. */
  readonly peakOpen: number
  /** TCP connections accepted since the start. */
  readonly connections: number
  resetPeak(): void
  setMode(mode: FaultMode): void
  /**
   * Applies `mode` only to requests whose body contains one of these JSON-RPC
   * methods; with `times`, only to the next `times` such requests (then they pass);
   * with `batches`, only to JSON-RPC batches of more than one call; with `matching`, only to
   * requests whose calls it accepts.
   */
  setModeFor(
    methods: readonly string[],
    mode: FaultMode,
    options?: { times?: number; batches?: boolean; matching?: (calls: readonly { method: string; params: unknown }[]) => boolean },
  ): void
  close(): Promise<void>
}

export interface FaultProxyOptions {
  /** Called with the body of each answer relayed from upstream (as the node sent it). */
  onAnswer?: (body: string) => void
}

/**
 * A loopback HTTP proxy in front of a real RPC endpoint (anvil, the Solana
 * test RPC) that delays, hangs, errors or cuts connections on demand. The
 * chain behind it stays real; only the path to it is faulty.
 */
export async function startFaultProxy(target: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  const upstream = new URL(target)
  let mode: FaultMode = { kind: 'pass' }
  let scoped:
    | { methods: Set<string>; mode: FaultMode; left: number; batches: boolean; matching: (calls: readonly { method: string; params: unknown }[]) => boolean }
    | undefined
  const hanging = new Set<ServerResponse>()
  const state = { requests: 0, open: 0, peakOpen: 0, connections: 0 }
  const methods: string[] = []
  const calls: { method: string; params: unknown }[][] = []

  const forward = (req: IncomingMessage, body: Buffer, res: ServerResponse, cutAfter: boolean) => {
    const out = httpRequest(
      { hostname: upstream.hostname, port: upstream.port, path: upstream.pathname, method: req.method, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        if (cutAfter) {
          answer.resume()
          answer.on('end', () => res.socket?.destroy())
          return
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        if (options.onAnswer) {
          const chunks: Buffer[] = []
          answer.on('data', (c: Buffer) => chunks.push(c))
          answer.on('end', () => options.onAnswer?.(Buffer.concat(chunks).toString('utf8')))
        }
        answer.pipe(res)
      },
    )
    out.on('error', () => res.socket?.destroy())
    out.end(body)
  }

  const server = createServer((req, res) => {
    state.open++
    state.peakOpen = Math.max(state.peakOpen, state.open)
    res.once('close', () => state.open--)
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      state.requests++
      const body = Buffer.concat(chunks)
      const received = rpcCalls(body)
      const seen = received.map((call) => call.method)
      methods.push(...seen)
      calls.push(received)
      const batch = body.subarray(0, 1).toString() === '[' && received.length > 1
      let active = mode
      if (scoped && scoped.left > 0 && (!scoped.batches || batch) && seen.some((m) => scoped?.methods.has(m)) && scoped.matching(received)) {
        active = scoped.mode
        scoped.left--
      }
      switch (active.kind) {
        case 'pass':
          return forward(req, body, res, false)
        case 'delay':
          return void setTimeout(() => forward(req, body, res, false), active.ms)
        case 'hang':
          hanging.add(res)
          return
        case 'error':
          res.writeHead(active.status, { 'content-type': 'text/plain' })
          return void res.end('injected fault')
        case 'gateway-error':
          res.writeHead(active.status, { 'content-type': 'application/json' })
          return void res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: active.code, message: 'injected gateway fault' } }))
        case 'cut':
          return void res.socket?.destroy()
        case 'cut-after-forward':
          return forward(req, body, res, true)
        case 'result': {
          const parsed = JSON.parse(body.toString('utf8')) as { id: unknown } | { id: unknown }[]
          const answer = (call: { id: unknown }) => ({ jsonrpc: '2.0', id: call.id, result: active.result })
          res.writeHead(200, { 'content-type': 'application/json' })
          return void res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(answer) : answer(parsed)))
        }
        case 'refuse-batches':
          if (!batch) return forward(req, body, res, false)
          res.writeHead(active.status ?? 200, { 'content-type': 'application/json' })
          if (active.shape === 'array') {
            const [first] = JSON.parse(body.toString('utf8')) as { id: unknown }[]
            return void res.end(JSON.stringify([{ jsonrpc: '2.0', id: first?.id ?? null, error: { code: -32600, message: 'batch too large' } }]))
          }
          return void res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } }))
      }
    })
  })
  server.on('connection', () => state.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    methods,
    calls,
    get requests() {
      return state.requests
    },
    set requests(value: number) {
      state.requests = value
    },
    get peakOpen() {
      return state.peakOpen
    },
    get connections() {
      return state.connections
    },
    resetPeak() {
      state.peakOpen = state.open
    },
    setMode(next) {
      mode = next
      scoped = undefined
    },
    setModeFor(list, next, options = {}) {
      scoped = {
        methods: new Set(list),
        mode: next,
        left: options.times ?? Number.POSITIVE_INFINITY,
        batches: options.batches ?? false,
        matching: options.matching ?? (() => true),
      }
    },
    async close() {
      for (const res of hanging) res.socket?.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function rpcCalls(body: Buffer): { method: string; params: unknown }[] {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'))
    const calls = Array.isArray(parsed) ? parsed : [parsed]
    return calls.map((c) => (c && typeof c === 'object' && 'method' in c ? { method: String(c.method), params: (c as { params?: unknown }).params } : { method: '?', params: undefined }))
  } catch {
    return []
  }
}

/** Runs `work` and answers its result, the requests the proxy received meanwhile (each the JSON-RPC calls it carried), and how long it took. */
export async function requestsDuring<T>(proxy: FaultProxy, work: () => Promise<T>): Promise<{ result: T; requests: FaultProxy['calls']; elapsedMs: number }> {
  const before = proxy.calls.length
  const started = performance.now()
  const result = await work()
  const elapsedMs = performance.now() - started
  return { result, requests: proxy.calls.slice(before), elapsedMs }
}
