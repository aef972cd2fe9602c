/**
 * Round axis ticks from 0 to at least `max`: about `count` steps of 1, 2 or 5
 * times a power of ten (whole steps for `integers`), so labels read 0, 5, 10, 15.
 *
 * @example
 * linearTicks(13, 4)       // [0, 5, 10, 15]
 * linearTicks(0.03, 3)     // [0, 0.01, 0.02, 0.03]
 * linearTicks(3, 4, true)  // [0, 1, 2, 3]
 */
export function linearTicks(max: number, count: number, integers = false): number[] {
  if (!(max > 0)) return [0, 1]
  const raw = max / count
  const power = 10 ** Math.floor(Math.log10(raw))
  let step = ([1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power)
  if (integers) step = Math.max(1, Math.ceil(step))
  const ticks: number[] = []
  // Rounded to the step's own digits: 3 * 0.1 must read 0.3, not 0.30000000000000004.
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 1)
  for (let i = 0; ; i++) {
    const tick = Number((i * step).toFixed(digits))
    ticks.push(tick)
    if (tick >= max) break
  }
  return ticks
}

/**
 * Powers of ten that bracket `[min, max]` (both > 0), for a log axis of
 * response times that span 1 ms to seconds.
 *
 * @example
 * logDecades(2.1, 640) // [1, 10, 100, 1000]
 */
export function logDecades(min: number, max: number): number[] {
  const low = Math.floor(Math.log10(Math.max(min, 1e-3)))
  const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(max, 1e-3))))
  const decades: number[] = []
  for (let e = low; e <= high; e++) decades.push(Number((10 ** e).toPrecision(1)))
  return decades
}

/** Coordinates in SVG text: two decimals are finer than a pixel and keep the markup short. */
export const coord = (n: number): string => String(Math.round(n * 100) / 100)
