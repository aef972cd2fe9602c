import * as z from 'zod'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { json, type ExtraRoute } from '../http/handler.js'
import { firstIssue } from '../schemas/parse-request.js'
import { ledgerCsv } from './ledger-csv.js'
import { ledgerStatusSchema, type SettlementLedger } from './settlement-ledger.js'

/** Where `ledgerRoute` serves by default. */
export const LEDGER_PATH = '/ledger'

/** Options of the ledger route. */
export interface LedgerRouteOptions {
  /** Path below the handler's base path. @default '/ledger' */
  path?: string
}

/** The route's query string. Unknown parameters are refused: a typo would otherwise widen a filter. */
export const ledgerRouteQuerySchema = z.strictObject({
  from: z.string().optional(),
  to: z.string().optional(),
  payer: z.string().optional(),
  payTo: z.string().optional(),
  network: z.string().optional(),
  status: ledgerStatusSchema.optional(),
  order: z.enum(['asc', 'desc']).optional(),
  limit: z.string().regex(/^\d{1,7}$/, 'must be a whole number').transform(Number).optional(),
  cursor: z.string().optional(),
  format: z.enum(['json', 'csv']).default('json'),
})

/**
 * `GET /ledger`: the settlement ledger over HTTP, for reconciliation and support, as
 * JSON (`{entries, nextCursor?}`) or CSV (`?format=csv`, the next page's cursor in
 * `x-next-cursor`). Query: `from`, `to` (ISO 8601 or epoch ms), `payer`, `payTo`,
 * `network`, `status` (`settled` | `failed` | `pending`), `order` (`desc` | `asc`),
 * `limit` (1 to 1,000, default 100), `cursor`.
 *
 * The route is private (`public: false`): the handler asks its `authorizeAdmin` hook
 * (without one, its `authenticate` hook with the route name `'private'`) and answers 401
 * when it has neither, so it is never served to everyone by default. Its rows name every
 * client's payers, payees and resources: give it operators' credentials, never the
 * tokens of payment clients (their `/verify` and `/settle` credentials).
 *
 * @example
 * // partial
 * const handler = createHandler(facilitator, {
 *   authorizeAdmin: (request) => request.headers.get('authorization') === `Bearer ${process.env.ADMIN_TOKEN}`,
 *   routes: [ledgerRoute(store.ledger)],
 * })
 * // curl -H "authorization: Bearer $ADMIN_TOKEN" 'http://localhost:4020/ledger?status=failed&format=csv'
 */
export function ledgerRoute(ledger: SettlementLedger, options: LedgerRouteOptions = {}): ExtraRoute {
  return {
    path: options.path ?? LEDGER_PATH,
    public: false,
    async handle(request) {
      const parsed = ledgerRouteQuerySchema.safeParse(Object.fromEntries(new URL(request.url).searchParams))
      if (!parsed.success) {
        const issue = parsed.error.issues[0]
        const unknown = issue?.code === 'unrecognized_keys' ? issue.keys[0] : undefined
        const { path, message } = unknown === undefined ? firstIssue(parsed.error) : { path: unknown, message: 'unknown query parameter' }
        throw new FacilitatorError('invalid_request', `${path}: ${message}`, { details: { field: path } })
      }
      const { format, ...query } = parsed.data
      const page = await ledger.read(query)
      if (format === 'json') return json(200, page)
      const headers: Record<string, string> = {
        'content-type': 'text/csv; charset=utf-8',
        'cache-control': 'no-store',
        'content-disposition': 'attachment; filename="settlement-ledger.csv"',
        'x-content-type-options': 'nosniff',
      }
      if (page.nextCursor) headers['x-next-cursor'] = page.nextCursor
      return new Response(ledgerCsv(page.entries), { status: 200, headers })
    },
  }
}
