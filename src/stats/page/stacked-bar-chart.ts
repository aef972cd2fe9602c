import { coord, linearTicks } from './chart-scale.js'
import { html, type SafeHtml } from './html-template.js'

/** One stacked series: a value per category, drawn in palette colour `color`. */
export interface BarSeries {
  label: string
  /** Index into the page palette (`c0`…`c7`). */
  color: number
  values: readonly number[]
}

export interface StackedBarChartInput {
  /** What the chart shows, read out by screen readers (the table beside it has the numbers). */
  label: string
  /** Category names along the x axis, e.g. UTC dates. */
  categories: readonly string[]
  /** Short label of a category under its bar. @default the category */
  tick?: (category: string) => string
  series: readonly BarSeries[]
  /** A value in a tooltip, e.g. `$0.02` or `3`. */
  format: (value: number) => string
  /** A value on the y axis, shorter than `format`. @default format */
  axisFormat?: (value: number) => string
  /** Whole numbers only on the y axis (counts). */
  integers?: boolean
  /** Written in the plot when every value is 0. */
  emptyText: string
}

const WIDTH = 640
const HEIGHT = 250
const PLOT = { left: 66, right: WIDTH - 10, top: 14, bottom: HEIGHT - 34 }

/**
 * Bars per category with one segment per series, as inline SVG: no script, no
 * fonts, colours from the page's stylesheet (light and dark). Every segment
 * has a tooltip; a table with the same numbers belongs next to it.
 *
 * @example
 * stackedBarChart({ label: 'Settlements per day', categories: dates, series, format: String, integers: true, emptyText: 'No settlements' })
 */
export function stackedBarChart(input: StackedBarChartInput): SafeHtml {
  const { categories, series } = input
  const totals = categories.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0))
  const max = Math.max(0, ...totals)
  const ticks = linearTicks(max, 4, input.integers)
  const top = ticks.at(-1)!
  const plotHeight = PLOT.bottom - PLOT.top
  const y = (value: number) => PLOT.bottom - (value / top) * plotHeight
  const slot = (PLOT.right - PLOT.left) / Math.max(1, categories.length)
  const barWidth = slot * 0.72
  const axisFormat = input.axisFormat ?? input.format
  const tick = input.tick ?? ((category: string) => category)

  const grid = ticks.map(
    (value) =>
      html`<line class="grid" x1="${coord(PLOT.left)}" x2="${coord(PLOT.right)}" y1="${coord(y(value))}" y2="${coord(y(value))}"/><text class="axis" x="${coord(PLOT.left - 8)}" y="${coord(y(value) + 5)}" text-anchor="end">${axisFormat(value)}</text>`,
  )
  const bars = categories.map((category, i) => {
    let stacked = 0
    const x = PLOT.left + i * slot + (slot - barWidth) / 2
    const segments = series.map((s) => {
      const value = s.values[i] ?? 0
      if (value <= 0) return null
      // A lone small value still shows as a sliver rather than vanish next to a tall bar.
      const height = Math.max(1.5, (value / top) * plotHeight)
      const segment = html`<rect class="c${s.color}" x="${coord(x)}" y="${coord(PLOT.bottom - stacked - height)}" width="${coord(barWidth)}" height="${coord(height)}"><title>${category}, ${s.label}: ${input.format(value)}</title></rect>`
      stacked += height
      return segment
    })
    // Label every 7th category counted from the last, so the latest always has one.
    const label = (categories.length - 1 - i) % 7 === 0 ? html`<text class="axis" x="${coord(x + barWidth / 2)}" y="${coord(PLOT.bottom + 22)}" text-anchor="middle">${tick(category)}</text>` : null
    return html`${segments}${label}`
  })
  const empty = max === 0 ? html`<text class="empty" x="${coord((PLOT.left + PLOT.right) / 2)}" y="${coord((PLOT.top + PLOT.bottom) / 2)}" text-anchor="middle">${input.emptyText}</text>` : null
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${input.label}">${grid}<line class="baseline" x1="${coord(PLOT.left)}" x2="${coord(PLOT.right)}" y1="${coord(PLOT.bottom)}" y2="${coord(PLOT.bottom)}"/>${bars}${empty}</svg>`
}
