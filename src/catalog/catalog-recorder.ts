import type { PaymentContext } from '../core/adapter.js'
import type { FacilitatorHooks, SettleEvent } from '../core/hooks.js'
import { isPendingSettlement } from '../errors/reasons.js'
import { createAssetTable, type AssetTable } from '../networks/assets.js'
import { requireStoreRole } from '../stores/store-roles.js'
import type { StatsStore } from '../stores/store.js'
import { usdValue } from '../networks/token-units.js'
import { isRecord } from '../schemas/parse-request.js'
import { catalogPayToKey, createPayToBinding, type PayToPin } from './payto-binding.js'
import { resourceId } from './resource-name.js'

/**
 * Where the catalog lives in the store:
 * - `catalog:index`      ranking of resource ids by calls, capped
 * - `catalog:n:<id>`     numeric fields: calls, succeeded, usdMicros, `paid|<caip2>` (successful payments per network)
 * - `catalog:t:<id>`     text fields: url, description, mimeType, serviceName, iconUrl,
 *                        lastCalledAt, x402Version, scheme/network/asset of the latest payment,
 *                        `accepts|<scheme>|<network>` (JSON), bazaar (JSON)
 * - `catalog:payto:<id>` the payTo the entry is bound to (see payto-binding.ts)
 * - `catalog:once:<network>:<tx>` guards against counting a repeated settle twice
 */
export const CATALOG_INDEX_KEY = 'catalog:index'
export const catalogCountsKey = (id: string) => `catalog:n:${id}`
export const catalogTextKey = (id: string) => `catalog:t:${id}`
const onceKey = (network: string, transaction: string) => `catalog:once:${network}:${transaction}`
/** Counts field of the successful payments of a resource on one network (CAIP-2). */
export const paidOnKey = (network: string) => `paid|${network}`

const MAX_DESCRIPTION = 512
const MAX_BAZAAR_JSON = 8192

/** Options of the catalog recorder. */
export interface CatalogRecorderOptions {
  /** Where the catalog lives, a `StatsStore` (a settlement-only store is refused). */
  store: StatsStore
  /** Largest number of resources kept; the least-called are evicted. @default 1000 */
  maxResources?: number
  /** Assets with a USD price, for `valueProcessed`. @default createAssetTable() */
  assets?: AssetTable
  /** How long a transaction is remembered against double counting. @default 7 days */
  dedupeTtlMs?: number
  /** Clock in milliseconds. @default Date.now */
  now?: () => number
  /** Resources whose payTo the operator fixes; the others are bound to the first payTo a payment settled to. */
  resources?: readonly PayToPin[]
}

/**
 * An after-settle hook that files each payment under its resource (v1: the
 * requirements' `resource`, `description`, `mimeType`; v2: the payload's
 * `resource` and its bazaar discovery extension).
 *
 * What counts as a call: a settle whose transaction was sent and reached an
 * outcome, success or failure on chain. Rejections before sending (bad
 * signature, low balance, a duplicate) are not calls: they cost the sender
 * nothing, so counting them would let anyone lower a resource's score for
 * free. For the same reason only a successful payment can create an entry.
 *
 * Only payments to the entry's own payTo count (see `createPayToBinding`), and
 * what they describe (description, name, requirements) is taken from those
 * that settled: a failed payment counts as a call and nothing else.
 *
 * @example
 * // partial
 * const facilitator = createFacilitator({ schemes, store, hooks: [createCatalogRecorder({ store })] })
 */
export function createCatalogRecorder(options: CatalogRecorderOptions): FacilitatorHooks {
  requireStoreRole(options.store, 'statistics', 'createCatalogRecorder')
  const { store } = options
  const cap = options.maxResources ?? 1000
  const assets = options.assets ?? createAssetTable()
  const now = options.now ?? Date.now
  const dedupeTtlMs = options.dedupeTtlMs ?? 7 * 86_400_000
  const binding = createPayToBinding(store, options.resources)

  return {
    // The bazaar discovery extension: resources are listed from their payments (GET /discovery/resources).
    extensions: ['bazaar'],
    async afterSettle(event: SettleEvent) {
      const { context, result } = event
      if (!context || event.fault || !result.transaction) return
      if (!result.success && isPendingSettlement(result.errorReason)) return
      // A repeat answered from another call's record: that call counts it (its hook may run later).
      if (event.origin === 'recorded') return
      const found = describeResource(context)
      if (!found) return
      if (!(await store.set(onceKey(context.network, result.transaction), '1', { ifAbsent: true, ttlMs: dedupeTtlMs }))) return
      const claim = await binding.claim(found.id, context.payTo, result.success)
      if (claim === 'ignored') return
      // Payments racing a takeover on other instances may lose their count: it happens once per pin.
      if (claim === 'takeover') await Promise.all([store.delete(catalogCountsKey(found.id)), store.delete(catalogTextKey(found.id))])
      else if (!result.success && (await store.readTextFields(catalogTextKey(found.id))).url === undefined) return

      const { score, evicted } = await store.incrementRanked(CATALOG_INDEX_KEY, found.id, 1, { cap })
      await Promise.all(evicted.flatMap((id) => [store.delete(catalogCountsKey(id)), store.delete(catalogTextKey(id)), store.delete(catalogPayToKey(id))]))
      if (evicted.includes(found.id)) return
      // The pinned payTo starts from one call: the rank the other payTo earned is not its own.
      if (claim === 'takeover' && score !== 1) await store.incrementRanked(CATALOG_INDEX_KEY, found.id, 1 - score)

      const usd = result.success ? usdValue(context.amount, assets.find(context.network, context.asset)) : undefined
      const { requirements } = context
      await Promise.all([
        store.incrementFields(catalogCountsKey(found.id), {
          calls: 1,
          succeeded: result.success ? 1 : 0,
          usdMicros: usd === undefined ? 0 : Math.round(usd * 1_000_000),
          // Which network the listing shows: the one the resource is paid on most.
          ...(result.success ? { [paidOnKey(context.network)]: 1 } : {}),
        }),
        store.setTextFields(
          catalogTextKey(found.id),
          // What the payment describes comes from payers and resource servers: only a settled payment may say it.
          result.success
            ? {
                ...found.text,
                lastCalledAt: String(now()),
                x402Version: String(context.x402Version),
                scheme: context.scheme,
                network: context.network,
                asset: context.asset,
                // The latest requirements per (scheme, network): what a client would pay today.
                [`accepts|${context.scheme}|${context.wireNetwork}`]: JSON.stringify({ ...requirements }),
              }
            : { lastCalledAt: String(now()) },
        ),
      ])
    },
  }
}

interface DescribedResource {
  id: string
  text: Record<string, string>
}

/** The resource a payment was for, from untrusted payload fields: checked, trimmed, bounded. */
function describeResource(context: PaymentContext): DescribedResource | undefined {
  const resource = context.resource
  if (!resource?.url) return undefined
  const payload = context.payload
  const extensions = payload.x402Version === 2 ? payload.extensions : undefined
  const bazaar = isRecord(extensions?.bazaar) ? extensions.bazaar : undefined
  const routeTemplate = typeof bazaar?.routeTemplate === 'string' ? bazaar.routeTemplate : undefined
  const id = resourceId(resource.url, routeTemplate)
  if (!id) return undefined

  const text: Record<string, string> = { url: id }
  if (typeof resource.description === 'string') text.description = resource.description.slice(0, MAX_DESCRIPTION)
  if (typeof resource.mimeType === 'string') text.mimeType = resource.mimeType.slice(0, 128)
  const serviceName = (resource as { serviceName?: unknown }).serviceName
  if (typeof serviceName === 'string' && /^[\x20-\x7e]{1,32}$/.test(serviceName)) text.serviceName = serviceName
  const iconUrl = (resource as { iconUrl?: unknown }).iconUrl
  if (typeof iconUrl === 'string' && isPublicHttpsUrl(iconUrl)) text.iconUrl = iconUrl
  if (bazaar) {
    const json = JSON.stringify(bazaar)
    if (json.length <= MAX_BAZAAR_JSON) text.bazaar = json
  }
  return { id, text }
}

/** An icon must be a public https URL: no credentials, no IP literal, no loopback name. */
function isPublicHttpsUrl(value: string): boolean {
  if (value.length > 2048) return false
  try {
    const url = new URL(value)
    const host = url.hostname.toLowerCase()
    return url.protocol === 'https:' && !url.username && !url.password && !/^[\d.]+$|:|^\[/.test(host) && !host.startsWith('localhost') && host.includes('.')
  } catch {
    return false
  }
}
