/** The page's list of paid resources from the catalog, with each one's price and trust score. */
import type { CatalogResource } from '../../catalog/catalog-schema.js'
import type { AssetTable } from '../../networks/assets.js'
import { toCaip2 } from '../../networks/networks.js'
import { formatTokenUnits } from '../../networks/token-units.js'
import { html, SafeHtml } from './html-template.js'
import { formatCount, formatPercent, formatUtc, networkLabel, shortAddress } from './page-format.js'
import type { ResourcePrice } from './resource-price.js'
import { safeHttpUrl } from './safe-http-url.js'
import type { StatsPageCatalog } from './stats-page.js'

/** Links a resource server gave us: never followed by crawlers as ours, never given our page as referrer. */
const EXTERNAL = 'nofollow noopener noreferrer ugc'

export function catalogSection(catalog: StatsPageCatalog | 'unavailable', assets: AssetTable, maxResources: number): SafeHtml {
  let content: SafeHtml
  if (catalog === 'unavailable') content = html`<p>The catalog is unavailable right now. Try again in a minute.</p>`
  else if (catalog.listing.resources.length === 0) content = html`<p class="muted">No paid resource settled through this facilitator yet.</p>`
  else {
    const { resources } = catalog.listing
    const shown = resources.slice(0, Math.max(0, maxResources))
    content = html`<table id="resources" class="stack" role="table">
<caption>Ordered by calls, as in the listing of ${formatUtc(catalog.listing.cachedAt)}. Success rate: the share of calls that settled on chain, once there are enough calls to mean something. Names, descriptions and addresses come from resource servers and payers: this facilitator does not vouch for them.</caption>
<thead role="rowgroup"><tr role="row"><th role="columnheader" scope="col">Resource</th><th role="columnheader" scope="col">Price</th><th role="columnheader" scope="col">Network</th><th role="columnheader" scope="col" class="num">Success rate</th><th role="columnheader" scope="col" class="num">Calls</th><th role="columnheader" scope="col" class="num">Value processed</th><th role="columnheader" scope="col">Last called</th></tr></thead>
<tbody role="rowgroup">
${shown.map((resource) => resourceRow(resource, catalog.prices.get(resource.url) ?? [], assets))}
</tbody>
</table>
${shown.length < resources.length ? html`<p class="note">The ${formatCount(shown.length)} most called of ${formatCount(resources.length)} resources; the JSON listing has them all.</p>` : null}`
  }
  return html`<section aria-labelledby="resources-heading">
<h2 id="resources-heading">Paid resources</h2>
${content}
</section>`
}

function resourceRow(resource: CatalogResource, prices: readonly ResourcePrice[], assets: AssetTable): SafeHtml {
  const href = safeHttpUrl(resource.url)
  const page = resource.jobsUrl !== resource.url ? safeHttpUrl(resource.jobsUrl) : undefined
  const { trustScore } = resource
  const rate = trustScore.sufficientData && trustScore.successRate !== null ? formatPercent(trustScore.successRate) : 'not enough data'
  const rateClass = !trustScore.sufficientData || trustScore.successRate === null ? 'muted' : trustScore.successRate >= 95 ? 'rate-good' : 'rate-low'
  return html`<tr role="row">
<td role="cell" class="resource"><span class="resource-name"><bdi>${resource.name}</bdi></span><br>${
    href ? html`<a class="resource-url" href="${href}" rel="${EXTERNAL}"><bdi>${resource.url}</bdi></a>` : html`<span class="resource-url"><bdi>${resource.url}</bdi></span>`
  }${page ? html` · <a href="${page}" rel="${EXTERNAL}">catalog page</a>` : null}${resource.description ? html`<p class="description"><bdi>${resource.description}</bdi></p>` : null}</td>
<td role="cell" data-label="Price">${priceText(prices, resource, assets)}</td>
<td role="cell" class="nowrap" data-label="Network"><bdi>${networkLabel(resource.paymentRequirements.network)}</bdi></td>
<td role="cell" class="num ${rateClass}" data-label="Success rate">${rate}</td>
<td role="cell" class="num" data-label="Calls">${formatCount(trustScore.calls)}</td>
<td role="cell" class="num" data-label="Value processed">${trustScore.valueProcessed}</td>
<td role="cell" data-label="Last called">${trustScore.lastCalled}</td>
</tr>`
}

/** `0.01 USDC`, or one line per network (`0.01 USDC on base-sepolia`); a dash when unknown. */
function priceText(prices: readonly ResourcePrice[], resource: CatalogResource, assets: AssetTable): SafeHtml | string {
  if (prices.length === 0) return '—'
  const shown = toCaip2(resource.paymentRequirements.network) ?? resource.paymentRequirements.network
  const texts = prices.map((price) => {
    const network = toCaip2(price.network) ?? price.network
    const asset = assets.find(network, price.asset)
    const amount = asset ? `${formatTokenUnits(BigInt(price.amount), asset.decimals)} ${asset.symbol}` : `${price.amount} base units of ${shortAddress(price.asset)}`
    return prices.length === 1 && network === shown ? amount : `${amount} on ${networkLabel(network)}`
  })
  return html`<span class="lines">${texts.map((text, i) => html`${i > 0 ? html`<br>` : null}<bdi>${text}</bdi>`)}</span>`
}
