import type { Facilitator } from '../core/facilitator.js'
import type { ExtraRoute } from './handler.js'

/** Paths of the health routes. */
export interface HealthRoutePaths {
  /** @default '/healthz' */
  healthz?: string
  /** @default '/readyz' */
  readyz?: string
  /** Budget of the readiness checks. @default 5_000 */
  readyTimeoutMs?: number
}

const HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

/**
 * `GET /healthz` (the process answers: always 200) and `GET /readyz` (the store and
 * every adapter's checks: 200 when all pass, else 503), JSON with a line per check, for
 * load balancers and orchestrators. Public: they carry no secret.
 *
 * @example
 * // partial
 * createHandler(facilitator, { routes: healthRoutes(facilitator) })
 */
export function healthRoutes(facilitator: Pick<Facilitator, 'readiness'>, paths: HealthRoutePaths = {}): ExtraRoute[] {
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
        const report = await facilitator.readiness(paths.readyTimeoutMs)
        return new Response(JSON.stringify({ status: report.ready ? 'ready' : 'not_ready', checks: report.checks }), { status: report.ready ? 200 : 503, headers: HEADERS })
      },
    },
  ]
}
