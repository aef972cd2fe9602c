import type { FacilitatorHooks } from '../core/hooks.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import type { ExtraRoute } from '../http/handler.js'
import { describeNetwork, toCaip2 } from '../networks/networks.js'
import { requireStoreRole } from '../stores/store-roles.js'
import type { StatsStore } from '../stores/store.js'
import { publicError, publicJson } from '../http/public-response.js'
import { isRecord } from '../schemas/parse-request.js'
import { formatLastCalled, formatUsdCompact } from './catalog-format.js'
import { CATALOG_INDEX_KEY, catalogCountsKey, catalogTextKey, createCatalogRecorder, paidOnKey, type CatalogRecorderOptions } from './catalog-recorder.js'
import { createPayToBinding } from './payto-binding.js'
import { discoveryQuerySchema, type CatalogListing, type CatalogResource, type DiscoveryQuery, type DiscoveryResponse } from './catalog-schema.js'
import { toDiscoveryResponse } from './discovery.js'
import { resourceId, resourceName } from './resource-name.js'

/** What an operator may say about one of its resources; it wins over what payments carry. */
export interface CatalogResourceConfig {
  url: string
  /** `<owner>/<resource-slug>`. @default derived from the URL */
  name?: string
  description?: string
  avatarUrl?: string | null
  /** The resource's catalog page. @default CatalogOptions.pageUrl, else the URL */
  jobsUrl?: string
  /** Lets a resource be listed before its first payment. */
  paymentRequirements?: { scheme: string; network: string; asset: string }
  /**
   * The resource's payTo, or one per network when they differ (an EVM and a Solana address):
   * only payments to these count. Without it, the first payTo a payment settled to is kept.
   * @default bound by the first settled payment
   */
  payTo?: string | readonly string[]
}

/** Options of `createCatalog`. */
export interface CatalogOptions extends Omit<CatalogRecorderOptions, 'store'> {
  /**
   * The facilitator's store when it is a full `Store`, else one of its own (a settlement-only store
   * is refused). Share it between instances so their catalogs are one.
   */
  store: StatsStore
  /** Operator metadata per resource URL (compared after normalisation). */
  resources?: readonly CatalogResourceConfig[]
  /** Address of a resource's catalog page, for `jobsUrl`. @default the resource URL */
  pageUrl?: (resource: { url: string; name: string }) => string
  /**
   * Lifetime of a built listing, here and in HTTP caches. An empty listing lives at most
   * `EMPTY_LISTING_SECONDS` (5), and a payment this instance records drops it at once, so a
   * catalog opened before its first payment shows that payment on the next read. @default 300
   */
  ttlSeconds?: number
  /** Fewer calls than this show `successRate: null, sufficientData: false`. @default 3 */
  minCallsForRate?: number
}

const PAID_ON_PREFIX = paidOnKey('')

/**
 * Most seconds an empty listing is kept (here and by HTTP caches): a catalog opened before its
 * first payment must not hide that payment for `ttlSeconds`. A payment recorded by this instance
 * drops an empty listing at once; one recorded by another instance shows within this.
 */
export const EMPTY_LISTING_SECONDS = 5

/** One resource as the catalog knows it, before formatting. */
export interface CatalogEntry {
  id: string
  name: string
  description: string
  mimeType?: string
  serviceName?: string
  iconUrl?: string
  avatarUrl: string | null
  jobsUrl: string
  calls: number
  succeeded: number
  usd: number
  lastCalledAt: number | undefined
  x402Version: number
  scheme: string
  /**
   * The network the listing shows: the one with the most successful payments
   * (ties: the latest payment's), as a CAIP-2 id, or what the operator configured.
   */
  network: string
  /** The asset paid on `network`. */
  asset: string
  /** Successful payments per network (CAIP-2), most first. */
  paidOn: { network: string; payments: number }[]
  /** The latest requirements seen per scheme and network: every way the resource was paid. */
  accepts: Record<string, unknown>[]
  bazaar: Record<string, unknown> | undefined
}

/** A listing built at one time, reused for `ttlSeconds`. */
export interface CatalogSnapshot {
  builtAt: number
  entries: CatalogEntry[]
}

/** The catalog wired together: a hook to record, cached reads and their HTTP routes. */
export interface CatalogService {
  readonly hooks: FacilitatorHooks
  readonly ttlSeconds: number
  /** Entries ordered by calls, built at most once per `ttlSeconds`. */
  snapshot(): Promise<CatalogSnapshot>
  /** The listing of SPEC.md: `{success, resources, cachedAt, ttlSeconds}`. */
  list(): Promise<CatalogListing>
  /** The x402 bazaar form, filtered and paginated. Throws `invalid_request` on a bad query. */
  discover(query?: DiscoveryQuery): Promise<DiscoveryResponse>
  /** GET routes for `createHandler({ routes })` or the stats host. */
  routes(paths?: { listing?: string; discovery?: string }): ExtraRoute[]
}

/** Default path of the listing. SPEC.md leaves it open; it sits beside /public/stats. */
export const CATALOG_LISTING_PATH = '/public/resources'
/** Path of the x402 bazaar discovery list, where x402 clients (`withBazaar`) look. */
export const DISCOVERY_PATH = '/discovery/resources'

/**
 * A catalog of the paid resources this facilitator settles payments for.
 *
 * @example
 * // partial
 * const catalog = createCatalog({ store, resources: [{ url: 'https://api.example.com/weather', avatarUrl: 'https://example.com/a.png' }] })
 * const facilitator = createFacilitator({ schemes, store, hooks: [catalog.hooks] })
 * createHandler(facilitator, { routes: catalog.routes() }) // GET /public/resources, GET /discovery/resources
 */
export function createCatalog(options: CatalogOptions): CatalogService {
  requireStoreRole(options.store, 'statistics', 'createCatalog')
  const { store } = options
  const now = options.now ?? Date.now
  const ttlSeconds = options.ttlSeconds ?? 300
  const cap = options.maxResources ?? 1000
  const minCalls = options.minCallsForRate ?? 3
  const hooks = createCatalogRecorder({ ...options, now })
  const binding = createPayToBinding(store, options.resources)
  const configured = new Map<string, CatalogResourceConfig>()
  for (const config of options.resources ?? []) {
    const id = resourceId(config.url)
    if (id) configured.set(id, config)
  }

  async function build(): Promise<CatalogSnapshot> {
    const builtAt = now()
    const ranked = await store.readRanked(CATALOG_INDEX_KEY, { limit: cap })
    const rows = await Promise.all(
      ranked.map(async ({ member }) => ({
        id: member,
        pinnedOwner: await binding.holdsPinnedOwner(member),
        counts: await store.readFields(catalogCountsKey(member)),
        text: await store.readTextFields(catalogTextKey(member)),
      })),
    )
    const entries: CatalogEntry[] = []
    for (const { id, pinnedOwner, counts, text } of rows) {
      // An entry evicted or half-written by another instance has no text yet: skip it rather than guess.
      // One the operator pinned to another payTo than it was bound to is not the pinned payTo's.
      if (!text.url || !pinnedOwner) continue
      entries.push(entry(id, counts, text))
    }
    const listed = new Set(entries.map((e) => e.id))
    for (const [id, config] of configured) {
      if (listed.has(id) || !config.paymentRequirements || entries.length >= cap) continue
      entries.push(entry(id, {}, { url: id, ...config.paymentRequirements }))
    }
    // Ranking order already holds; configured, never-called resources come last.
    return { builtAt, entries }
  }

  function entry(id: string, counts: Record<string, number>, text: Record<string, string>): CatalogEntry {
    const config = configured.get(id)
    const name = config?.name ?? resourceName(id, text.serviceName)
    const accepts = Object.keys(text)
      .filter((field) => field.startsWith('accepts|'))
      .sort()
      .map((field) => parseObject(text[field]!))
      .filter((value): value is Record<string, unknown> => value !== undefined)
    const latest = text.network ?? ''
    const paidOn = Object.keys(counts)
      .filter((field) => field.startsWith(PAID_ON_PREFIX) && counts[field]! > 0)
      .map((field) => ({ network: field.slice(PAID_ON_PREFIX.length), payments: counts[field]! }))
      // Most paid first; a tie goes to the latest payment's network, then by name so the order is stable.
      .sort((a, b) => b.payments - a.payments || Number(b.network === latest) - Number(a.network === latest) || (a.network < b.network ? -1 : 1))
    const network = paidOn[0]?.network ?? latest
    // The shown network's own requirements, so scheme and asset match it (the latest payment may be elsewhere).
    const shown = network === latest ? undefined : accepts.find((accept) => toCaip2(String(accept.network)) === network)
    return {
      id,
      name,
      description: config?.description ?? text.description ?? '',
      ...(text.mimeType ? { mimeType: text.mimeType } : {}),
      ...(text.serviceName ? { serviceName: text.serviceName } : {}),
      ...(text.iconUrl ? { iconUrl: text.iconUrl } : {}),
      avatarUrl: config?.avatarUrl !== undefined ? config.avatarUrl : (text.iconUrl ?? null),
      jobsUrl: config?.jobsUrl ?? options.pageUrl?.({ url: id, name }) ?? id,
      calls: counts.calls ?? 0,
      succeeded: counts.succeeded ?? 0,
      usd: (counts.usdMicros ?? 0) / 1_000_000,
      lastCalledAt: text.lastCalledAt ? Number(text.lastCalledAt) : undefined,
      x402Version: Number(text.x402Version ?? 2),
      scheme: typeof shown?.scheme === 'string' ? shown.scheme : (text.scheme ?? 'exact'),
      network,
      asset: typeof shown?.asset === 'string' ? shown.asset : (text.asset ?? ''),
      paidOn,
      accepts,
      bazaar: text.bazaar ? parseObject(text.bazaar) : undefined,
    }
  }

  /** How long a snapshot stays fresh: an empty one briefly. */
  const lifetimeSeconds = (snapshot: CatalogSnapshot) => (snapshot.entries.length === 0 ? Math.min(ttlSeconds, EMPTY_LISTING_SECONDS) : ttlSeconds)
  // The built snapshot shared by every caller while fresh (concurrent callers share one build; a failed build is not kept).
  let cached: { value: Promise<CatalogSnapshot>; until: number; empty: boolean } | undefined
  const snapshot = (): Promise<CatalogSnapshot> => {
    const time = now()
    if (cached && cached.until > time) return cached.value
    const entry = { value: build(), until: time + ttlSeconds * 1000, empty: false }
    cached = entry
    entry.value.then(
      (built) => {
        entry.empty = built.entries.length === 0
        entry.until = Math.min(entry.until, built.builtAt + lifetimeSeconds(built) * 1000)
      },
      () => {
        if (cached === entry) cached = undefined
      },
    )
    return entry.value
  }
  const recordSettle = hooks.afterSettle!.bind(hooks)
  const recording: FacilitatorHooks = {
    ...hooks,
    async afterSettle(event) {
      await recordSettle(event)
      // The first resource recorded here: an empty listing kept from before it would hide it.
      if (cached?.empty && event.result.success) cached = undefined
    },
  }

  const service: CatalogService = {
    hooks: recording,
    ttlSeconds,
    snapshot,
    async list() {
      return listingOf(await service.snapshot())
    },
    async discover(query = {}) {
      const parsed = parseDiscoveryQuery(query)
      return toDiscoveryResponse(await service.snapshot(), parsed, minCalls)
    },
    routes(paths = {}) {
      // The seconds a snapshot stays fresh: the max-age of an answer built from it.
      const remaining = (built: CatalogSnapshot) => Math.max(0, Math.ceil((built.builtAt + lifetimeSeconds(built) * 1000 - now()) / 1000))
      return [
        {
          path: paths.listing ?? CATALOG_LISTING_PATH,
          public: true,
          async handle(request) {
            try {
              const snapshot = await service.snapshot()
              return publicJson(request, listingOf(snapshot), remaining(snapshot))
            } catch (error) {
              return publicError(new FacilitatorError('store_unavailable', 'the catalog is unavailable right now', { cause: error }))
            }
          },
        },
        {
          path: paths.discovery ?? DISCOVERY_PATH,
          public: true,
          async handle(request) {
            try {
              const query = parseDiscoveryQuery(Object.fromEntries(new URL(request.url).searchParams))
              const snapshot = await service.snapshot()
              return publicJson(request, toDiscoveryResponse(snapshot, query, minCalls), remaining(snapshot))
            } catch (error) {
              if (error instanceof FacilitatorError && error.status < 500) return publicError(error)
              return publicError(new FacilitatorError('store_unavailable', 'the catalog is unavailable right now', { cause: error }))
            }
          },
        },
      ]
    },
  }
  return service

  function listingOf(built: CatalogSnapshot): CatalogListing {
    return {
      success: true,
      resources: built.entries.map((e) => toListingResource(e, built.builtAt, minCalls)),
      cachedAt: new Date(built.builtAt).toISOString(),
      ttlSeconds: lifetimeSeconds(built),
    }
  }
}

/** The discovery query, or `invalid_request` naming the bad field. */
function parseDiscoveryQuery(query: Record<string, unknown>) {
  const parsed = discoveryQuerySchema.safeParse(query)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = String(issue?.path[0] ?? 'query')
    throw new FacilitatorError('invalid_request', `${field}: ${issue?.message ?? 'invalid'}`, { details: { field } })
  }
  return parsed.data
}

function toListingResource(e: CatalogEntry, at: number, minCalls: number): CatalogResource {
  const sufficientData = e.calls >= minCalls && e.calls > 0
  return {
    url: e.id,
    name: e.name,
    description: e.description,
    paymentRequirements: {
      scheme: e.scheme,
      network: describeNetwork(e.network)?.v1Name ?? e.network,
      asset: e.asset,
      amount: '0',
    },
    trustScore: {
      successRate: sufficientData ? Math.round((e.succeeded / e.calls) * 10_000) / 100 : null,
      sufficientData,
      calls: e.calls,
      valueProcessed: formatUsdCompact(e.usd),
      lastCalled: formatLastCalled(e.lastCalledAt, at),
    },
    jobsUrl: e.jobsUrl,
    avatarUrl: e.avatarUrl,
  }
}

function parseObject(json: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(json)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}
