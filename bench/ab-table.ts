/**
 * The figures of an A/B comparison (bench/ab.ts): each row's rounds of both builds summed up as
 * medians, the ratio B / A, and the table printed and saved. Pure functions, unit-tested in
 * test/bench/ab-table.test.ts.
 */

/** What one round of one build measured on one row. */
export interface AbRound {
  /** Accepted answers per second over the round's wall time. */
  readonly okPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** HTTP requests the facilitator sent to its RPC per operation (a JSON-RPC batch counts once). */
  readonly rpcPerOp: number
  /** CPU of the facilitator's server process per operation, ms. */
  readonly serverCpuMsPerOp: number
  /** CPU of the chain's process per operation, ms (10 ms ticks: only meaningful over long rounds). */
  readonly chainCpuMsPerOp: number
}

/** One row's rounds, A's and B's in the order they ran. */
export interface AbRowRounds {
  readonly name: string
  readonly a: readonly AbRound[]
  readonly b: readonly AbRound[]
}

/** A row's medians over its rounds, for each build. */
export type AbMedians = { readonly [K in keyof AbRound]: number }

export interface AbRowSummary {
  readonly name: string
  readonly a: AbMedians
  readonly b: AbMedians
  /**
   * The median of `roundRatios`: each pair of rounds ran back to back, so a neighbour's load that
   * comes and goes weighs on both of a pair alike; the median drops the pairs it split.
   */
  readonly ratio: number
  /** Median ok/s of B over median ok/s of A (more exposed to load that changed between rounds). */
  readonly ratioOfMedians: number
  /** B / A of each pair of rounds (round i of B over round i of A): the spread says how noisy the row was. */
  readonly roundRatios: readonly number[]
}

/** The median (the mean of the middle two for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((x, y) => x - y)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

function medians(rounds: readonly AbRound[]): AbMedians {
  const of = (key: keyof AbRound) => median(rounds.map((r) => r[key]))
  return {
    okPerSecond: of('okPerSecond'),
    p50Ms: of('p50Ms'),
    p99Ms: of('p99Ms'),
    rpcPerOp: of('rpcPerOp'),
    serverCpuMsPerOp: of('serverCpuMsPerOp'),
    chainCpuMsPerOp: of('chainCpuMsPerOp'),
  }
}

export function summarize(row: AbRowRounds): AbRowSummary {
  const a = medians(row.a)
  const b = medians(row.b)
  const pairs = Math.min(row.a.length, row.b.length)
  const roundRatios = Array.from({ length: pairs }, (_, i) => row.b[i]!.okPerSecond / row.a[i]!.okPerSecond)
  return { name: row.name, a, b, ratio: median(roundRatios), ratioOfMedians: b.okPerSecond / a.okPerSecond, roundRatios }
}

/** Figures to three significant digits or so, as the bench's other tables print them. */
export function formatFigure(value: number): string {
  if (!Number.isFinite(value)) return 'n/a'
  const abs = Math.abs(value)
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US')
  if (abs >= 100) return value.toFixed(0)
  if (abs >= 10) return value.toFixed(1)
  if (abs >= 1) return value.toFixed(2)
  if (abs === 0) return '0'
  return value.toPrecision(2)
}

const ratioText = (ratio: number) => (Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : 'n/a')
const arrow = (a: number, b: number) => `${formatFigure(a)} → ${formatFigure(b)}`

/** The Markdown table: one line per row, A and B named by their labels. */
export function formatAbTable(rows: readonly AbRowSummary[], labels: { a: string; b: string }): string {
  const header = [
    'row',
    `A ok/s`,
    `B ok/s`,
    'B / A',
    'B / A by round',
    'p50 ms (A → B)',
    'RPC requests/op (A → B)',
    'server CPU ms/op (A → B)',
    'chain CPU ms/op (A → B)',
  ]
  const lines = rows.map((r) => [
    r.name,
    formatFigure(r.a.okPerSecond),
    formatFigure(r.b.okPerSecond),
    ratioText(r.ratio),
    r.roundRatios.map((x) => x.toFixed(2)).join(', '),
    arrow(r.a.p50Ms, r.b.p50Ms),
    arrow(r.a.rpcPerOp, r.b.rpcPerOp),
    arrow(r.a.serverCpuMsPerOp, r.b.serverCpuMsPerOp),
    arrow(r.a.chainCpuMsPerOp, r.b.chainCpuMsPerOp),
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const render = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  return [
    `A = ${labels.a}, B = ${labels.b}; ok/s, p50 and per-op figures are medians of the rounds; B / A is the median of the rounds' B / A (above 1: B is faster).`,
    '',
    render(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...lines.map(render),
  ].join('\n')
}

/** The lowest and highest B / A of any round of any row: the band a noise check (A = B) should stay in. */
export function ratioBand(rows: readonly AbRowSummary[]): { low: number; high: number } {
  const all = rows.flatMap((r) => r.roundRatios)
  return { low: Math.min(...all), high: Math.max(...all) }
}
