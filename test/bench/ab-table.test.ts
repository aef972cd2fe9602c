/**
 * The A/B table of `npm run bench -- --against <ref>` (bench/ab-table.ts): medians of the rounds,
 * B / A of the medians and of each pair of rounds, the noise band, and the printed table.
 */
import { describe, expect, it } from 'vitest'
import { formatAbTable, formatFigure, median, ratioBand, summarize, type AbRound } from '../../bench/ab-table.js'

const round = (okPerSecond: number, p50Ms: number, rpcPerOp = 1): AbRound => ({
  okPerSecond,
  p50Ms,
  p99Ms: p50Ms * 2,
  rpcPerOp,
  serverCpuMsPerOp: 1000 / okPerSecond / 2,
  chainCpuMsPerOp: 0.5,
})

describe('median', () => {
  it('is the middle value of an odd count, the mean of the middle two of an even one, whatever the order', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([10, 1, 4, 3])).toBe(3.5)
    expect(median([7])).toBe(7)
    expect(median([])).toBeNaN()
  })
})

describe('summarize', () => {
  const row = {
    name: 'EVM verify, concurrency 1',
    a: [round(260, 3.5), round(250, 3.6), round(100, 9)],
    b: [round(210, 4.3, 1), round(200, 4.4, 2), round(220, 4.2, 1)],
  }

  it('gives each build the medians of its rounds, so one disturbed round does not move them', () => {
    const summary = summarize(row)
    expect(summary.a.okPerSecond).toBe(250)
    expect(summary.a.p50Ms).toBe(3.6)
    expect(summary.b.okPerSecond).toBe(210)
    expect(summary.b.p50Ms).toBe(4.3)
    expect(summary.b.rpcPerOp).toBe(1)
  })

  it('gives B / A of each pair of rounds, their median as the ratio, and the ratio of the medians', () => {
    const summary = summarize(row)
    expect(summary.roundRatios).toEqual([210 / 260, 200 / 250, 220 / 100])
    // The pair of round 3 (A disturbed) is dropped by the median.
    expect(summary.ratio).toBeCloseTo(210 / 260, 10)
    expect(summary.ratioOfMedians).toBeCloseTo(210 / 250, 10)
  })

  it('gives the band of the single rounds over every row', () => {
    const band = ratioBand([summarize(row), summarize({ name: 'x', a: [round(100, 1)], b: [round(95, 1)] })])
    expect(band.low).toBeCloseTo(200 / 250, 10)
    expect(band.high).toBeCloseTo(2.2, 10)
  })
})

describe('formatAbTable', () => {
  it('prints one line per row with both figures, the ratio, the rounds and the per-op figures as A → B', () => {
    const table = formatAbTable([summarize({ name: 'EVM settle, concurrency 1', a: [round(116, 8.6, 3.15)], b: [round(81.2, 12.3, 4.15)] })], { a: '0ab9a2c', b: 'working tree (bc3e4b2)' })
    const lines = table.split('\n')
    expect(lines[0]).toBe("A = 0ab9a2c, B = working tree (bc3e4b2); ok/s, p50 and per-op figures are medians of the rounds; B / A is the median of the rounds' B / A (above 1: B is faster).")
    expect(lines).toHaveLength(5)
    const cells = lines[4]!.split('|').map((cell) => cell.trim())
    expect(cells.slice(1, -1)).toEqual(['EVM settle, concurrency 1', '116', '81.2', '0.70x', '0.70', '8.60 → 12.3', '3.15 → 4.15', '4.31 → 6.16', '0.50 → 0.50'])
  })

  it('formats figures as the bench does, and n/a for what could not be measured', () => {
    expect(formatFigure(1_010.4)).toBe('1,010')
    expect(formatFigure(259.7)).toBe('260')
    expect(formatFigure(0.034)).toBe('0.034')
    expect(formatFigure(0)).toBe('0')
    expect(formatFigure(Number.NaN)).toBe('n/a')
  })
})
