import { CATALOG_LISTING_PATH, DISCOVERY_PATH, type CatalogService } from '../../catalog/catalog.js'
import { discoveryResponseSchema, type CatalogListing } from '../../catalog/catalog-schema.js'
import type { ExtraRoute } from '../../http/handler.js'
import type { AssetTable } from '../../networks/assets.js'
import { publicCacheControl } from '../../http/public-response.js'
import { PUBLIC_STATS_PATH, type StatsSource } from '../stats-handler.js'
import type { PublicStats } from '../stats-schema.js'
import { STATS_PAGE_CSS } from './page-style.js'
import { pricesOf, type ResourcePrice } from './resource-price.js'
import { renderStatsPage, renderUnavailablePage, type StatsPageCatalog } from './stats-page.js'

/** Where the page is served by default: the root of the statistics host. */
export const STATS_PAGE_PATH = '/'

/** Options of `statsPageRoute`; `createPublicStats(...).page()` fills in `stats` (and its `assets`, `now`). */
export interface StatsPageRouteOptions {
  /** The statistics, e.g. `createPublicStats(...)`: the page shows what GET /public/stats serves. */
  stats: StatsSource
  /** The catalog, e.g. `createCatalog(...)`: the page lists what GET /public/resources serves. @default no catalog section */
  catalog?: Pick<CatalogService, 'list' | 'routes'>
  /** Path of the page below the handler's base path. @default '/' */
  path?: string
  /** Heading and window title. @default 'x402 facilitator statistics' */
  title?: string
  /** Tokens prices are written in. @default createAssetTable() (USDC on the x402 networks) */
  assets?: AssetTable
  /** Paths of the JSON routes the page links to, below the same base path. @default '/public/stats', '/public/resources' */
  links?: { stats?: string; catalog?: string }
  /** Most resources listed on the page; the JSON listing has them all. @default 100 */
  maxResources?: number
  /** Clock in milliseconds for the listing's remaining lifetime: the one the catalog was given. @default Date.now */
  now?: () => number
}

// Discovery pages hold at most 100 items.
const DISCOVERY_PAGE = 100

/**
 * GET / as an extra route: the public statistics and the catalog as an HTML
 * page for people (see `renderStatsPage`), rendered on the server from the same
 * cached bodies as GET /public/stats and GET /public/resources, with the same
 * `cache-control`. The rendered page is kept until either body changes, so a
 * request for it costs a comparison, not a rendering. The page runs no script
 * and loads nothing: its Content-Security-Policy allows only its own stylesheet.
 *
 * Users reach it as `createPublicStats(...).page({ catalog })`.
 */
export function statsPageRoute(options: StatsPageRouteOptions): ExtraRoute {
  const path = options.path ?? STATS_PAGE_PATH
  const now = options.now ?? Date.now
  const statsLink = options.links?.stats ?? PUBLIC_STATS_PATH
  const catalogLink = options.links?.catalog ?? CATALOG_LISTING_PATH
  // Prices are in the discovery form's `accepts`: read through the catalog's own route, in process.
  const discovery = options.catalog?.routes().find((route) => route.path === DISCOVERY_PATH)
  const maxResources = options.maxResources ?? 100
  // Discovery lists resources in the listing's order: the pages that cover the shown resources are enough.
  const discoveryPages = Math.ceil(maxResources / DISCOVERY_PAGE)
  let policy: Promise<string> | undefined
  let prices: { cachedAt: string; value: Promise<Map<string, ResourcePrice[]>> } | undefined
  let page: { stats: PublicStats; catalog: string; base: string; html: string } | undefined

  async function readCatalog(): Promise<StatsPageCatalog | 'unavailable' | undefined> {
    if (!options.catalog) return undefined
    let listing: CatalogListing
    try {
      listing = await options.catalog.list()
    } catch {
      return 'unavailable'
    }
    if (prices?.cachedAt !== listing.cachedAt) {
      const value = readPrices()
      const entry = { cachedAt: listing.cachedAt, value }
      prices = entry
      // Without prices the page still shows the listing; the next request tries again.
      value.catch(() => {
        if (prices === entry) prices = undefined
      })
    }
    return { listing, prices: await prices.value.catch(() => new Map<string, ResourcePrice[]>()) }
  }

  async function readPrices(): Promise<Map<string, ResourcePrice[]>> {
    const found = new Map<string, ResourcePrice[]>()
    if (!discovery) return found
    for (let page = 0; page < discoveryPages; page++) {
      const response = await discovery.handle(new Request(`http://catalog.invalid${DISCOVERY_PATH}?limit=${DISCOVERY_PAGE}&offset=${page * DISCOVERY_PAGE}`))
      if (!response.ok) throw new Error(`discovery answered ${response.status}`)
      const body = discoveryResponseSchema.parse(await response.json())
      for (const item of body.items) found.set(item.resource, pricesOf(item.accepts))
      if (body.items.length < DISCOVERY_PAGE || (page + 1) * DISCOVERY_PAGE >= body.pagination.total) break
    }
    return found
  }

  return {
    path,
    public: true,
    async handle(request) {
      policy ??= contentSecurityPolicy()
      const headers: Record<string, string> = {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': await policy,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      }
      let stats: PublicStats
      try {
        stats = await options.stats.read()
      } catch {
        return new Response(request.method === 'HEAD' ? null : renderUnavailablePage(options.title), { status: 503, headers: { ...headers, 'cache-control': 'no-store', 'retry-after': '30' } })
      }
      const catalog = await readCatalog()
      const base = basePathOf(request, path)
      const catalogKey = catalog === undefined ? 'none' : catalog === 'unavailable' ? catalog : catalog.listing.cachedAt
      // Rendered again only when a body changed: the stats reader hands out the same object while it is cached.
      if (!page || page.stats !== stats || page.catalog !== catalogKey || page.base !== base) {
        const html = renderStatsPage({
          stats,
          catalog,
          title: options.title,
          assets: options.assets,
          maxResources,
          links: { stats: `${base}${statsLink}`, ...(options.catalog ? { catalog: `${base}${catalogLink}` } : {}) },
        })
        page = { stats, catalog: catalogKey, base, html }
      }
      // A page without its catalog is not worth caching; otherwise it lives as long as the younger of the two bodies.
      let seconds = options.stats.cacheSeconds
      if (catalog === 'unavailable') headers['cache-control'] = 'no-store'
      else {
        if (catalog) seconds = Math.min(seconds, Math.ceil((Date.parse(catalog.listing.cachedAt) + catalog.listing.ttlSeconds * 1000 - now()) / 1000))
        headers['cache-control'] = publicCacheControl(seconds)
      }
      return new Response(request.method === 'HEAD' ? null : page.html, { status: 200, headers })
    },
  }
}

/** The request's path before the page's own, e.g. `/x402` when the handler is mounted there. */
function basePathOf(request: Request, path: string): string {
  let pathname: string
  try {
    pathname = new URL(request.url).pathname.replace(/\/+$/, '')
  } catch {
    return ''
  }
  if (path === '/') return pathname
  return pathname.endsWith(path) ? pathname.slice(0, -path.length) : ''
}

/** Nothing but the page's own stylesheet, by its hash: no script, no image, no frame, no form. */
async function contentSecurityPolicy(): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(STATS_PAGE_CSS)))
  let binary = ''
  for (const byte of digest) binary += String.fromCharCode(byte)
  return `default-src 'none'; style-src 'sha256-${btoa(binary)}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
}
