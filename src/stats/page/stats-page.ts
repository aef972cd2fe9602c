import type { CatalogListing } from '../../catalog/catalog-schema.js'
import { createAssetTable, type AssetTable } from '../../networks/assets.js'
import type { PublicStats, RefusalTotals, UsageTotals, VolumeEntry } from '../stats-schema.js'
import { html, SafeHtml, type HtmlValue } from './html-template.js'
import { latencyChart, type LatencyGroup } from './latency-chart.js'
import { formatCount, formatMs, formatPercent, formatUsd, formatUtc, networkLabel, shortAddress } from './page-format.js'
import { catalogSection } from './catalog-section.js'
import { STATS_PAGE_CSS } from './page-style.js'
import type { ResourcePrice } from './resource-price.js'
import { stackedBarChart, type BarSeries } from './stacked-bar-chart.js'

/** The catalog as the page shows it: the listing and, per resource URL, what it costs. */
export interface StatsPageCatalog {
  listing: CatalogListing
  /** Prices by resource URL (the discovery form's `accepts`); a resource without one shows a dash. */
  prices: ReadonlyMap<string, readonly ResourcePrice[]>
}

/** Everything the page shows; all of it is escaped when written. */
export interface StatsPageInput {
  /** The body of GET /public/stats. */
  stats: PublicStats
  /** The catalog, `'unavailable'` when it could not be read, or absent when there is none. */
  catalog?: StatsPageCatalog | 'unavailable'
  /** @default 'x402 facilitator statistics' */
  title?: string
  /** Tokens the prices are written in. @default createAssetTable() */
  assets?: AssetTable
  /** Where the same numbers are as JSON, linked from the page footer. */
  links?: { stats?: string; catalog?: string }
  /** Most resources listed; the rest are in the JSON listing. @default 100 */
  maxResources?: number
}

const PALETTE_SIZE = 8
const WINDOW_LABELS: Readonly<Record<string, string>> = { '1m': '1 min', '5m': '5 min', '1h': '1 hour', '24h': '24 hours', all: 'all time' }

/**
 * The public statistics and the catalog as one HTML page for people: totals,
 * the 30-day series per network, response times and Solana confirmation
 * times as inline SVG charts, each with a table of its numbers, and the paid
 * resources with their trust scores in the listing's order. No script, no
 * outside resource; every string from a payload is escaped and only
 * http(s) links are written.
 *
 * @example
 * // partial
 * const page = renderStatsPage({ stats: await stats.read(), catalog: { listing: await catalog.list(), prices: new Map() } })
 */
export function renderStatsPage(input: StatsPageInput): string {
  const { stats } = input
  const title = input.title ?? 'x402 facilitator statistics'
  const colors = networkColors(stats)
  const body = html`<header>
<h1>${title}</h1>
<p class="muted">What this x402 payment facilitator verified and settled, how fast, and the paid resources it settled for. Aggregates only: nothing about any single wallet. Figures as of <time datetime="${stats.generatedAt}">${formatUtc(stats.generatedAt)}</time>.</p>
</header>
<main>
${totalsSection(stats)}
${networksSection(stats)}
${dailySection(stats, colors)}
${speedSection(stats)}
${input.catalog === undefined ? null : catalogSection(input.catalog, input.assets ?? createAssetTable(), input.maxResources ?? 100)}
</main>
${footer(stats, input.links)}`
  return document(title, body)
}

/**
 * A page saying the statistics cannot be read right now (the store is down),
 * in the same look as the statistics page.
 *
 * @example
 * import { renderUnavailablePage } from './stats-page.js'
 *
 * new Response(renderUnavailablePage(), { status: 503 })
 */
export function renderUnavailablePage(title = 'x402 facilitator statistics'): string {
  return document(title, html`<header><h1>${title}</h1></header><main><p>The statistics are unavailable right now. Try again in a minute.</p></main>`)
}

function document(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${STATS_PAGE_CSS_HTML}</style>
</head>
<body>
${body}
</body>
</html>
`.text
}

// The stylesheet is this library's constant, not a payload's: written as is (escaping would change its quotes and its CSP hash).
const STATS_PAGE_CSS_HTML = new SafeHtml(STATS_PAGE_CSS)

// ---- totals -----------------------------------------------------------------

function totalsSection(stats: PublicStats): SafeHtml {
  const all = stats.usage.allTime
  const day = stats.usage.last24h
  const card = (label: string, value: string, sub: string) => html`<li><span class="label">${label}</span><span class="value">${value}</span><span class="sub">${sub}</span></li>`
  const rows: [string, (u: UsageTotals) => string][] = [
    ['Verifications', (u) => formatCount(u.verifications.total)],
    ['Valid', (u) => formatCount(u.verifications.valid)],
    ['Invalid', (u) => formatCount(u.verifications.invalid)],
    ['Verification errors', (u) => formatCount(u.verifications.errors)],
    ['Verification success rate', (u) => formatPercent(u.verifications.successRate)],
    ['Settlements', (u) => formatCount(u.settlements.total)],
    ['Succeeded', (u) => formatCount(u.settlements.succeeded)],
    ['Failed', (u) => formatCount(u.settlements.failed)],
    ['Settlement errors', (u) => formatCount(u.settlements.errors)],
    ['Pending (sent, not confirmed yet)', (u) => formatCount(u.settlements.pending)],
    ['Settlement success rate', (u) => formatPercent(u.settlements.successRate)],
    ['Volume (USD)', (u) => formatUsd(u.volumeUsd)],
    ['Distinct payers', (u) => formatCount(u.payers)],
    ['Refused before the payment checks', (u) => formatCount(u.refused.total)],
  ]
  return html`<section aria-labelledby="totals-heading">
<h2 id="totals-heading">Totals</h2>
<ul class="cards">
${card('Settlements', formatCount(all.settlements.total), withRate(all.settlements.successRate, 'succeeded', formatCount(day.settlements.total)))}
${card('Volume', formatUsd(all.volumeUsd), `24 h: ${formatUsd(day.volumeUsd)}`)}
${card('Distinct payers', formatCount(all.payers), `24 h: ${formatCount(day.payers)}`)}
${card('Verifications', formatCount(all.verifications.total), withRate(all.verifications.successRate, 'valid', formatCount(day.verifications.total)))}
</ul>
<div class="scroll"><table id="totals">
<caption>All time and the last 24 hours. Success rates are shares of answers to payments that reached the payment checks; “no data” when there was nothing to rate. Requests refused before those checks are counted apart.</caption>
<thead><tr><th scope="col"></th><th scope="col" class="num">All time</th><th scope="col" class="num">Last 24 h</th></tr></thead>
<tbody>
${rows.map(([label, value]) => html`<tr><th scope="row">${label}</th><td class="num">${value(all)}</td><td class="num">${value(day)}</td></tr>`)}
</tbody>
</table></div>
${refusalNote(all.refused)}
</section>`
}

/** Why requests were refused before the payment checks (all time), when some were. */
function refusalNote(refused: RefusalTotals): SafeHtml | null {
  if (refused.total === 0) return null
  const parts = [
    [refused.unsupportedKind, 'for a network or scheme this facilitator does not serve'],
    [refused.unsupportedVersion, 'for an unsupported x402 version'],
    [refused.mismatch, 'with a payload for other requirements'],
    [refused.malformed, 'malformed'],
  ] as const
  const reasons = parts.filter(([n]) => n > 0).map(([n, what]) => `${formatCount(n)} ${what}`)
  const requests = `${formatCount(refused.total)} ${refused.total === 1 ? 'request' : 'requests'}`
  return html`<p class="note" id="refused">Refused before the payment checks, all time: ${requests} (${reasons.join('; ')}). They are in no other count here and in no success rate.</p>`
}

/** `98.5% succeeded · 24 h: 12`, without the rate while there is nothing to rate. */
const withRate = (rate: number | null, what: string, last24h: string) => `${rate === null ? '' : `${formatPercent(rate)} ${what} · `}24 h: ${last24h}`

// ---- networks ---------------------------------------------------------------

function networksSection(stats: PublicStats): SafeHtml {
  const networks = stats.networks
  const content =
    networks.length === 0
      ? html`<p class="muted">Nothing recorded yet.</p>`
      : html`<table id="networks" class="stack" role="table">
<caption>Per network. Volume in US dollars where the token has a known price, and in the token itself.</caption>
<thead role="rowgroup"><tr role="row"><th role="columnheader" scope="col">Network</th><th role="columnheader" scope="col" class="num">Settlements</th><th role="columnheader" scope="col" class="num">Success rate</th><th role="columnheader" scope="col" class="num">Volume</th><th role="columnheader" scope="col" class="num">Payers</th><th role="columnheader" scope="col" class="num">Settlements, 24 h</th><th role="columnheader" scope="col" class="num">Volume, 24 h</th></tr></thead>
<tbody role="rowgroup">
${networks.map(
  (n) => html`<tr role="row"><th role="rowheader" scope="row"><bdi>${networkLabel(n.network)}</bdi></th><td role="cell" class="num" data-label="Settlements">${formatCount(n.allTime.settlements.total)}</td><td role="cell" class="num" data-label="Success rate">${formatPercent(n.allTime.settlements.successRate)}</td><td role="cell" class="num" data-label="Volume">${volumeText(n.allTime)}</td><td role="cell" class="num" data-label="Payers">${formatCount(n.allTime.payers)}</td><td role="cell" class="num" data-label="Settlements, 24 h">${formatCount(n.last24h.settlements.total)}</td><td role="cell" class="num" data-label="Volume, 24 h">${volumeText(n.last24h)}</td></tr>`,
)}
</tbody>
</table>`
  return html`<section aria-labelledby="networks-heading">
<h2 id="networks-heading">Networks</h2>
${content}
</section>`
}

// Tables of class "stack" become one card per row on a phone; their explicit roles keep them tables for screen readers
// (some browsers drop table semantics once CSS changes a table's display).

/** `$0.02 (0.02 USDC)`: the dollar sum, then each token in its own units. */
function volumeText(usage: UsageTotals): string {
  const tokens = usage.volume.map(tokenAmount)
  return tokens.length === 0 ? formatUsd(usage.volumeUsd) : `${formatUsd(usage.volumeUsd)} (${tokens.join(', ')})`
}

function tokenAmount(entry: VolumeEntry): string {
  return entry.symbol ? `${entry.amount} ${entry.symbol}` : `${entry.amount} base units of ${shortAddress(entry.asset)}`
}


// ---- daily series -----------------------------------------------------------

/** A colour per network, the busiest first, kept the same in both daily charts. */
function networkColors(stats: PublicStats): Map<string, number> {
  const order = [...stats.networks].sort((a, b) => b.allTime.settlements.total - a.allTime.settlements.total || a.network.localeCompare(b.network)).map((n) => n.network)
  for (const day of stats.daily) for (const n of day.networks) if (!order.includes(n.network)) order.push(n.network)
  return new Map(order.map((network, i) => [network, i % PALETTE_SIZE]))
}

function dailySection(stats: PublicStats, colors: Map<string, number>): SafeHtml {
  const days = stats.daily
  const dates = days.map((d) => d.date)
  // Only networks that had something on one of these days get a series, a legend entry and a column.
  const active = [...colors.keys()].filter((network) => days.some((d) => d.networks.some((n) => n.network === network && (n.settlements > 0 || n.volumeUsd > 0))))
  const valueOf = (network: string, field: 'settlements' | 'volumeUsd') => days.map((d) => d.networks.find((n) => n.network === network)?.[field] ?? 0)
  const seriesOf = (field: 'settlements' | 'volumeUsd'): BarSeries[] => active.map((network) => ({ label: networkLabel(network), color: colors.get(network)!, values: valueOf(network, field) }))
  const legend = html`<ul class="legend" aria-hidden="true">${active.map((network) => html`<li><span class="swatch c${colors.get(network)!}"></span><bdi>${networkLabel(network)}</bdi></li>`)}</ul>`
  const tick = (date: string) => date.slice(5)
  const networkHeads = active.map((network) => html`<th scope="col" class="num"><bdi>${networkLabel(network)}</bdi></th>`)
  const unpriced = stats.usage.allTime.volume.some((v) => v.usd === null)

  const settlements = figure(
    'daily-settlements',
    'Settlements per day, by network',
    stackedBarChart({
      label: `Settlements per day over the last ${days.length} days, by network: ${formatCount(days.reduce((sum, d) => sum + d.settlements, 0))} in all.`,
      categories: dates,
      tick,
      series: seriesOf('settlements'),
      format: formatCount,
      integers: true,
      emptyText: 'No settlements in the last 30 days',
    }),
    legend,
    html`<table id="daily-settlements-table">
<caption>Settlements per UTC day and network; succeeded of all networks.</caption>
<thead><tr><th scope="col">Date</th>${networkHeads}<th scope="col" class="num">All networks</th><th scope="col" class="num">Succeeded</th></tr></thead>
<tbody>${days.map(
      (d) =>
        html`<tr><th scope="row">${d.date}</th>${active.map((network) => html`<td class="num">${formatCount(d.networks.find((n) => n.network === network)?.settlements ?? 0)}</td>`)}<td class="num">${formatCount(d.settlements)}</td><td class="num">${formatCount(d.successfulSettlements)}</td></tr>`,
    )}</tbody>
</table>`,
  )
  const volume = figure(
    'daily-volume',
    'Volume per day (USD), by network',
    stackedBarChart({
      label: `Volume in US dollars per day over the last ${days.length} days, by network: ${formatUsd(days.reduce((sum, d) => sum + d.volumeUsd, 0))} in all.`,
      categories: dates,
      tick,
      series: seriesOf('volumeUsd'),
      format: formatUsd,
      axisFormat: compactUsd,
      emptyText: 'No volume in the last 30 days',
    }),
    legend,
    html`<table id="daily-volume-table">
<caption>Volume in US dollars per UTC day and network.</caption>
<thead><tr><th scope="col">Date</th>${networkHeads}<th scope="col" class="num">All networks</th></tr></thead>
<tbody>${days.map(
      (d) =>
        html`<tr><th scope="row">${d.date}</th>${active.map((network) => html`<td class="num">${formatUsd(d.networks.find((n) => n.network === network)?.volumeUsd ?? 0)}</td>`)}<td class="num">${formatUsd(d.volumeUsd)}</td></tr>`,
    )}</tbody>
</table>`,
  )
  return html`<section aria-labelledby="daily-heading">
<h2 id="daily-heading">Last 30 days</h2>
<div class="figures">${settlements}${volume}</div>
<p class="note">Days in UTC, today last.${unpriced ? ' Tokens without a known US dollar price are left out of the volume chart; the networks table shows them in their own units.' : ''}</p>
</section>`
}

/** `$1.2k` on an axis, where `$1,234.56` would not fit. */
function compactUsd(value: number): string {
  if (value >= 1_000_000) return `$${Number((value / 1_000_000).toFixed(1))}M`
  if (value >= 1000) return `$${Number((value / 1000).toFixed(1))}k`
  return `$${Number(value.toPrecision(3))}`
}

/** A chart with its legend and, one click away, the table of its numbers (for screen readers too). */
function figure(id: string, caption: string, chart: SafeHtml, legend: HtmlValue, table: SafeHtml): SafeHtml {
  return html`<figure id="${id}" aria-labelledby="${id}-caption">
<figcaption id="${id}-caption">${caption}</figcaption>
${legend}
${chart}
<details><summary>Table of these numbers</summary><div class="scroll">${table}</div></details>
</figure>`
}

// ---- response times ---------------------------------------------------------

function latencyFigure(stats: PublicStats): SafeHtml {
  const rows = stats.performance.flatMap((w) => w.operations.map((op) => ({ ...op, window: w.window })))
  const keys = [...new Set(rows.map((r) => `${r.operation}|${r.network}`))].sort()
  const groups: LatencyGroup[] = keys.map((key) => {
    const [operation = '', network = ''] = key.split('|')
    return {
      heading: `${operation} · ${networkLabel(network)}`,
      rows: rows.filter((r) => r.operation === operation && r.network === network).map((r) => ({ ...r, label: WINDOW_LABELS[r.window] ?? r.window })),
    }
  })
  const content =
    rows.length === 0
      ? html`<div><h3>Response times</h3><p class="muted">No verify or settle answered yet.</p></div>`
      : figure(
          'latency',
          'Response times of verify and settle: p50, p95, p99',
          latencyChart({ label: `Response times of verify and settle, per network, over the windows ${stats.performance.map((w) => WINDOW_LABELS[w.window] ?? w.window).join(', ')}.`, groups }),
          quantileLegend,
          html`<table id="latency-table">
<caption>Milliseconds from receiving a request to answering it.</caption>
<thead><tr><th scope="col">Operation</th><th scope="col">Network</th><th scope="col">Window</th><th scope="col" class="num">Calls</th><th scope="col" class="num">p50</th><th scope="col" class="num">p95</th><th scope="col" class="num">p99</th></tr></thead>
<tbody>${groups.flatMap((g, i) => {
            const [operation = '', network = ''] = keys[i]!.split('|')
            return g.rows.map((r) => html`<tr><td>${operation}</td><td><bdi>${networkLabel(network)}</bdi></td><td>${r.label}</td><td class="num">${formatCount(r.count)}</td><td class="num">${formatMs(r.p50Ms)}</td><td class="num">${formatMs(r.p95Ms)}</td><td class="num">${formatMs(r.p99Ms)}</td></tr>`)
          })}</tbody>
</table>`,
        )
  return content
}

const quantileLegend = html`<ul class="legend" aria-hidden="true"><li><span class="swatch q50"></span>p50 (median)</li><li><span class="swatch q95"></span>p95</li><li><span class="swatch q99"></span>p99</li></ul>`

function confirmationFigure(stats: PublicStats): SafeHtml {
  const rows = stats.solanaConfirmation.flatMap((w) => w.networks.map((n) => ({ ...n, window: w.window })))
  const networks = [...new Set(rows.map((r) => r.network))].sort()
  const groups: LatencyGroup[] = networks.map((network) => ({
    heading: networkLabel(network),
    rows: rows.filter((r) => r.network === network).map((r) => ({ ...r, label: WINDOW_LABELS[r.window] ?? r.window })),
  }))
  const content =
    rows.length === 0
      ? html`<div><h3>Solana: from sending a transaction to its confirmation</h3><p class="muted">No Solana settlement confirmed yet.</p></div>`
      : figure(
          'solana-confirmation',
          'Solana: from sending a transaction to its confirmation',
          latencyChart({ label: 'Time from sending a Solana settlement to its confirmation, per network and window.', groups }),
          quantileLegend,
          html`<table id="solana-confirmation-table">
<caption>Milliseconds from sending a Solana transaction to its confirmation, successful settlements only.</caption>
<thead><tr><th scope="col">Network</th><th scope="col">Window</th><th scope="col" class="num">Settlements</th><th scope="col" class="num">p50</th><th scope="col" class="num">p95</th><th scope="col" class="num">p99</th></tr></thead>
<tbody>${groups.flatMap((g) => g.rows.map((r) => html`<tr><td><bdi>${g.heading}</bdi></td><td>${r.label}</td><td class="num">${formatCount(r.count)}</td><td class="num">${formatMs(r.p50Ms)}</td><td class="num">${formatMs(r.p95Ms)}</td><td class="num">${formatMs(r.p99Ms)}</td></tr>`))}</tbody>
</table>`,
        )
  return content
}

function speedSection(stats: PublicStats): SafeHtml {
  return html`<section aria-labelledby="speed-heading">
<h2 id="speed-heading">How fast</h2>
<div class="figures">${latencyFigure(stats)}${confirmationFigure(stats)}</div>
<p class="note">Windows are clock-aligned: “1 min” is the current and the previous minute, “1 hour” the current and the previous 60 minutes, “24 hours” the current and the previous 24 hours. Quantiles are within ±4%.</p>
</section>`
}

// ---- footer -----------------------------------------------------------------

function footer(stats: PublicStats, links: StatsPageInput['links']): SafeHtml {
  const link = (href: string | undefined, text: string) => (href ? html`<a href="${href}">${text}</a>` : null)
  const json = [link(links?.stats, 'statistics (JSON)'), link(links?.catalog, 'paid resources (JSON)')].filter((item) => item !== null)
  return html`<footer>
<p>${json.length > 0 ? html`The same numbers for programs: ${json.map((item, i) => html`${i > 0 ? ' · ' : ''}${item}`)}. ` : null}Computed at ${formatUtc(stats.generatedAt)} from this facilitator's own records. Served by x402-facilitator.</p>
</footer>`
}
