import { toCaip2 } from '../networks/networks.js'
import type { CatalogEntry, CatalogSnapshot } from './catalog.js'
import type { DiscoveryItem, DiscoveryResponse, discoveryQuerySchema } from './catalog-schema.js'
import type { z } from 'zod'

type ParsedQuery = z.output<typeof discoveryQuerySchema>

/**
 * The catalog in the x402 bazaar list form (`GET /discovery/resources`):
 * `{x402Version, items[], pagination {limit, offset, total}}`, each item with
 * `resource`, `type: 'http'`, `x402Version`, `accepts[]` (the latest
 * requirements seen per scheme and network: one item lists every network the
 * resource was paid on), `lastUpdated` and `metadata` (our trust data, with
 * `paymentsByNetwork`). Filters: `type`, `network` (v1 name or CAIP-2), `scheme`, `payTo`.
 *
 * @example
 * toDiscoveryResponse(await catalog.snapshot(), { limit: 20, offset: 0 }, 3)
 */
export function toDiscoveryResponse(snapshot: CatalogSnapshot, query: ParsedQuery, minCalls: number): DiscoveryResponse {
  const network = query.network ? (toCaip2(query.network) ?? query.network) : undefined
  const payTo = query.payTo?.toLowerCase()
  const matching = snapshot.entries.filter((entry) => {
    // Only resources learnt from payments carry accepts; configured-only ones have nothing to pay yet.
    if (entry.accepts.length === 0) return false
    if (query.type !== undefined && query.type !== 'http') return false
    return entry.accepts.some(
      (accept) =>
        (network === undefined || toCaip2(String(accept.network)) === network || accept.network === network) &&
        (query.scheme === undefined || accept.scheme === query.scheme) &&
        (payTo === undefined || String(accept.payTo).toLowerCase() === payTo),
    )
  })
  return {
    x402Version: 2,
    items: matching.slice(query.offset, query.offset + query.limit).map((entry) => toItem(entry, snapshot.builtAt, minCalls)),
    pagination: { limit: query.limit, offset: query.offset, total: matching.length },
  }
}

function toItem(entry: CatalogEntry, builtAt: number, minCalls: number): DiscoveryItem {
  const sufficientData = entry.calls >= minCalls && entry.calls > 0
  return {
    resource: entry.id,
    type: 'http',
    x402Version: entry.x402Version,
    accepts: entry.accepts,
    lastUpdated: new Date(entry.lastCalledAt ?? builtAt).toISOString(),
    ...(entry.description ? { description: entry.description } : {}),
    ...(entry.mimeType ? { mimeType: entry.mimeType } : {}),
    ...(entry.serviceName ? { serviceName: entry.serviceName } : {}),
    ...(entry.iconUrl ? { iconUrl: entry.iconUrl } : {}),
    ...(entry.bazaar ? { extensions: { bazaar: entry.bazaar } } : {}),
    metadata: {
      name: entry.name,
      calls: entry.calls,
      successRate: sufficientData ? Math.round((entry.succeeded / entry.calls) * 10_000) / 100 : null,
      valueProcessedUsd: Math.round(entry.usd * 1_000_000) / 1_000_000,
      paymentsByNetwork: entry.paidOn,
      avatarUrl: entry.avatarUrl,
      jobsUrl: entry.jobsUrl,
    },
  }
}
