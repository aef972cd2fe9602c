import diagnostics from 'node:diagnostics_channel'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { FacilitatorHooks } from '../core/hooks.js'
import type { ExtraRoute } from '../http/handler.js'
import { costOutcome, KNOWN_OUTCOMES, metricLabels } from './metric-labels.js'
import { RPC_RESPONSE_CHANNEL, type RpcResponseEvent } from '../transport/keep-alive-post.js'

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Where the metrics are registered. @default a new prom-client `Registry` */
  registry?: Registry
  /** Prefix of every metric name. @default 'x402_' */
  prefix?: string
  /** Also register prom-client's default process metrics (CPU, memory, event loop). @default false */
  processMetrics?: boolean
  /**
   * Reason codes of your own (a hook's `reason`, an adapter of yours) to count under their
   * name; any other code this library does not know counts as `outcome="other"`. @default []
   */
  outcomes?: readonly string[]
}

/** Prometheus metrics of a facilitator: hooks to install, a route to serve, and gauges to set. */
export interface FacilitatorMetrics {
  readonly registry: Registry
  /** Install in `createFacilitator({ hooks: [metrics.hooks] })`. */
  readonly hooks: FacilitatorHooks
  /**
   * `GET /metrics` in the Prometheus text format, for `createHandler({ routes })`. Private by
   * default: served only to requests the handler's `authenticate` allows (asked as `'private'`),
   * and closed without a hook. `{ public: true }` serves it to anyone (a scraper on a private
   * network, a port of its own).
   */
  route(path?: string, options?: { public?: boolean }): ExtraRoute
  /** Records a signer's gas balance (in the chain's smallest unit, as a float). */
  setSignerBalance(network: string, signer: string, balance: bigint): void
  /** Stops listening to the RPC diagnostics channel. */
  close(): void
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/**
 * Prometheus metrics through `prom-client` (an optional peer): verifies and
 * settles by network, scheme and outcome code, their latency, settles in
 * flight, what the transactions sent cost (`settlement_cost_total` by network
 * and `landed` / `reverted` / `failed`, in wei or lamports), RPC exchanges by
 * host and outcome (from the transports' diagnostics channel: never a path or
 * an API key), signer balances and store faults.
 * Opt-in: nothing is measured until it is installed.
 *
 * Label values never come from a request (see `metricLabels`): `network` and
 * `scheme` are those of the adapter that served it, or `unsupported` for a
 * request no adapter served (an unsupported kind or version, a mismatched or
 * malformed body, counted with its code as `outcome` and no duration);
 * `outcome` is a code of this library (or of `outcomes`), else `other`. The
 * series stay as many as the served kinds and codes, whatever clients send.
 *
 * @example
 * // partial
 * import { createMetrics } from 'x402-facilitator/metrics'
 * const metrics = createMetrics()
 * const facilitator = createFacilitator({ schemes, hooks: [metrics.hooks] })
 * const handler = createHandler(facilitator, { routes: [metrics.route()] })
 */
export function createMetrics(options: MetricsOptions = {}): FacilitatorMetrics {
  const registry = options.registry ?? new Registry()
  const p = options.prefix ?? 'x402_'
  const registers = [registry]
  const verifies = new Counter({ name: `${p}verify_total`, help: 'Verifies by network, scheme and outcome (valid, an invalid reason, or a fault code)', labelNames: ['network', 'scheme', 'outcome'], registers })
  const settles = new Counter({ name: `${p}settle_total`, help: 'Settles by network, scheme and outcome (success, an error reason, or a fault code)', labelNames: ['network', 'scheme', 'outcome'], registers })
  const verifySeconds = new Histogram({ name: `${p}verify_duration_seconds`, help: 'Time of a verify', labelNames: ['network', 'scheme'], buckets: LATENCY_BUCKETS, registers })
  const settleSeconds = new Histogram({ name: `${p}settle_duration_seconds`, help: 'Time of a settle, confirmation included', labelNames: ['network', 'scheme'], buckets: LATENCY_BUCKETS, registers })
  const inFlight = new Gauge({ name: `${p}settles_in_flight`, help: 'Settles started and not yet answered', registers })
  const rpc = new Counter({ name: `${p}rpc_requests_total`, help: 'RPC exchanges by host and outcome (ok, http_error, timeout, error)', labelNames: ['host', 'outcome'], registers })
  const rpcSeconds = new Histogram({ name: `${p}rpc_duration_seconds`, help: 'Time of an RPC exchange', labelNames: ['host'], buckets: LATENCY_BUCKETS, registers })
  const storeFaults = new Counter({ name: `${p}store_faults_total`, help: 'Verifies and settles that failed because the store did not answer', labelNames: ['operation'], registers })
  const spent = new Counter({
    name: `${p}settlement_cost_total`,
    help: 'What the settlement transactions sent cost the facilitator, in the network\'s native smallest unit (wei, lamports), by network and outcome (landed, reverted, failed)',
    labelNames: ['network', 'outcome'],
    registers,
  })
  const balances = new Gauge({ name: `${p}signer_balance`, help: 'Gas balance of a signer, in the chain\'s smallest unit', labelNames: ['network', 'signer'], registers })
  if (options.processMetrics) {
    void import('prom-client').then(({ collectDefaultMetrics }) => collectDefaultMetrics({ register: registry, prefix: p }))
  }

  const onRpc = (message: unknown) => {
    const event = message as RpcResponseEvent
    rpc.inc({ host: event.host, outcome: event.outcome })
    rpcSeconds.observe({ host: event.host }, event.durationMs / 1000)
  }
  diagnostics.subscribe(RPC_RESPONSE_CHANNEL, onRpc)

  const known = options.outcomes?.length ? new Set([...KNOWN_OUTCOMES, ...options.outcomes]) : KNOWN_OUTCOMES

  // Settles counted in flight: a beforeSettle of an earlier hook may refuse one before ours runs.
  const started = new WeakSet<object>()
  const hooks: FacilitatorHooks = {
    afterVerify(event) {
      const { network, scheme, outcome } = metricLabels(event, known)
      verifies.inc({ network, scheme, outcome })
      verifySeconds.observe({ network, scheme }, event.durationMs / 1000)
      if (event.fault?.code === 'store_unavailable') storeFaults.inc({ operation: 'verify' })
    },
    beforeSettle(ctx) {
      started.add(ctx)
      inFlight.inc()
    },
    afterSettle(event) {
      if (event.context && started.delete(event.context)) inFlight.dec()
      const { network, scheme, outcome } = metricLabels(event, known)
      settles.inc({ network, scheme, outcome })
      settleSeconds.observe({ network, scheme }, event.durationMs / 1000)
      if (event.fault?.code === 'store_unavailable') storeFaults.inc({ operation: 'settle' })
      const cost = event.context?.cost
      if (typeof cost === 'bigint' && cost > 0n) spent.inc({ network, outcome: costOutcome(event) }, Number(cost))
    },
    afterRefusal(event) {
      const counter = event.operation === 'verify' ? verifies : settles
      counter.inc(metricLabels(event, known))
    },
  }

  return {
    registry,
    hooks,
    route(path = '/metrics', options = {}) {
      return {
        path,
        public: options.public ?? false,
        async handle() {
          return new Response(await registry.metrics(), { status: 200, headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' } })
        },
      }
    },
    setSignerBalance(network, signer, balance) {
      balances.set({ network, signer }, Number(balance))
    },
    close() {
      diagnostics.unsubscribe(RPC_RESPONSE_CHANNEL, onRpc)
    },
  }
}
