import { coord, logDecades } from './chart-scale.js'
import { html, type SafeHtml } from './html-template.js'
import { formatMs } from './page-format.js'

/** Response-time quantiles of one row (e.g. one window of `settle` on one network). */
export interface LatencyRow {
  label: string
  p50Ms: number
  p95Ms: number
  p99Ms: number
  count: number
}

/** Rows under a heading, e.g. the windows of `settle · base`. */
export interface LatencyGroup {
  heading: string
  rows: readonly LatencyRow[]
}

export interface LatencyChartInput {
  /** What the chart shows, read out by screen readers (the table beside it has the numbers). */
  label: string
  groups: readonly LatencyGroup[]
}

const WIDTH = 640
const LEFT = 96
const RIGHT = WIDTH - 14
const HEADING_HEIGHT = 26
const ROW_HEIGHT = 24
const BAR_HEIGHT = 14
const AXIS_HEIGHT = 30

/**
 * p50, p95 and p99 as three overlaid bars per row on a log axis (response
 * times run from a millisecond to seconds), grouped under headings, as inline
 * SVG. Each bar has a tooltip; a table with the same numbers belongs next to it.
 *
 * @example
 * latencyChart({ label: 'Response times', groups: [{ heading: 'verify · base', rows: [{ label: '24 h', p50Ms: 2.1, p95Ms: 3.4, p99Ms: 5, count: 40 }] }] })
 */
export function latencyChart(input: LatencyChartInput): SafeHtml {
  const rows = input.groups.flatMap((group) => group.rows)
  const decades = logDecades(Math.min(...rows.map((row) => row.p50Ms)), Math.max(...rows.map((row) => row.p99Ms)))
  const low = Math.log10(decades[0]!)
  const span = Math.log10(decades.at(-1)!) - low
  const x = (ms: number) => LEFT + ((Math.log10(Math.max(ms, decades[0]!)) - low) / span) * (RIGHT - LEFT)
  const height = input.groups.length * HEADING_HEIGHT + rows.length * ROW_HEIGHT + AXIS_HEIGHT

  let top = 0
  const body: SafeHtml[] = []
  for (const group of input.groups) {
    body.push(html`<text class="heading" x="0" y="${coord(top + 19)}">${group.heading}</text>`)
    top += HEADING_HEIGHT
    for (const row of group.rows) {
      const barTop = top + (ROW_HEIGHT - BAR_HEIGHT) / 2
      const bar = (quantile: 'p99' | 'p95' | 'p50', ms: number) =>
        html`<rect class="q${quantile.slice(1)}" x="${coord(LEFT)}" y="${coord(barTop)}" width="${coord(Math.max(1, x(ms) - LEFT))}" height="${BAR_HEIGHT}"><title>${group.heading}, ${row.label}: ${quantile} ${formatMs(ms)} (${row.count} calls)</title></rect>`
      body.push(html`<text class="axis" x="${LEFT - 8}" y="${coord(top + 17)}" text-anchor="end">${row.label}</text>${bar('p99', row.p99Ms)}${bar('p95', row.p95Ms)}${bar('p50', row.p50Ms)}`)
      top += ROW_HEIGHT
    }
  }
  const axis = decades.map(
    (ms) =>
      html`<line class="grid" x1="${coord(x(ms))}" x2="${coord(x(ms))}" y1="0" y2="${coord(top)}"/><text class="axis" x="${coord(x(ms))}" y="${coord(top + 22)}" text-anchor="middle">${formatAxisMs(ms)}</text>`,
  )
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${coord(height)}" role="img" aria-label="${input.label}">${axis}${body}</svg>`
}

/** `10 ms`, `1 s`: a decade on the axis. */
function formatAxisMs(ms: number): string {
  return ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`
}
