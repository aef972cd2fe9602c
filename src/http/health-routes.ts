import type { Facilitator } from '../facilitator/facilitator.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import type { ExtraRoute } from './handler.js'

/** Paths of the health routes. */
export interface HealthRoutePaths {
  /** @default '/healthz' */
  healthz?: string
  /** @default '/readyz' */
  readyz?: string
  /** Budget of the readiness checks. @default 5_000 */
  readyTimeoutMs?: number
  /**
   * How long one readiness check answers `/readyz` after it finished. Each check costs RPC
   * requests and a store write, and the route is public: without this, every caller could
   * make the facilitator spend them. Callers that arrive while a check runs share it. 0 keeps
   * no result (callers still share the check in flight). @default 5_000
   */
  readyCacheMs?: number
}

const HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

/** One readiness report and when it was taken. */
interface ReadinessReport {
  ready: boolean
  checks: unknown[]
  checkedAt: string
}

/**
 * `GET /healthz` (the process answers: always 200) and `GET /readyz` (the store and
 * every adapter's checks: 200 when all pass, else 503), JSON with a line per check and
 * the time they ran (`checkedAt`), for load balancers and orchestrators. Public: they
 * carry no secret; `/readyz` answers from a check at most `readyCacheMs` old, so however
 * often it is called it runs at most one check at a time and one per `readyCacheMs`.
 *
 * @example
 * // partial
 * createHandler(facilitator, { routes: healthRoutes(facilitator) })
 */
export function healthRoutes(facilitator: Pick<Facilitator, 'readiness'>, paths: HealthRoutePaths = {}): ExtraRoute[] {
  const cacheMs = paths.readyCacheMs ?? 5_000
  if (!(Number.isFinite(cacheMs) && cacheMs >= 0)) throw new FacilitatorError('misconfigured', 'healthRoutes: readyCacheMs must be a number of milliseconds, 0 or more')
  let running: Promise<ReadinessReport> | undefined
  let kept: { report: ReadinessReport; until: number } | undefined
  const readiness = (): Promise<ReadinessReport> => {
    if (kept && kept.until > Date.now()) return Promise.resolve(kept.report)
    // Kept from when the check finished, not when it started: a slow check is not run again at once.
    running ??= facilitator
      .readiness(paths.readyTimeoutMs)
      .then((report) => {
        const taken = { ...report, checkedAt: new Date().toISOString() }
        kept = cacheMs > 0 ? { report: taken, until: Date.now() + cacheMs } : undefined
        return taken
      })
      .finally(() => {
        running = undefined
      })
    return running
  }
  return [
    {
      path: paths.healthz ?? '/healthz',
      public: true,
      handle: () => new Response(JSON.stringify({ status: 'ok' }), { status: 200, headers: HEADERS }),
    },
    {
      path: paths.readyz ?? '/readyz',
      public: true,
      async handle() {
        const report = await readiness()
        return new Response(JSON.stringify({ status: report.ready ? 'ready' : 'not_ready', checks: report.checks, checkedAt: report.checkedAt }), { status: report.ready ? 200 : 503, headers: HEADERS })
      },
    },
  ]
}
