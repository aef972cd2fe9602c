/**
 * Formats of the catalog's trust score, as SPEC.md shows them: a `$` amount
 * with `k`/`M` suffixes, and a last-call text that is relative when recent and
 * a month/day/year date otherwise.
 */

const DAY_MS = 86_400_000

/**
 * A USD amount for `trustScore.valueProcessed`.
 *
 * @example
 * import { formatUsdCompact } from './catalog-format.js'
 *
 * formatUsdCompact(0)         // '$0'
 * formatUsdCompact(0.005)     // '$0.005'
 * formatUsdCompact(0.5)       // '$0.50'
 * formatUsdCompact(12.5)      // '$12.50'
 * formatUsdCompact(1234)      // '$1.2k'
 * formatUsdCompact(3_456_789) // '$3.5M'
 */
export function formatUsdCompact(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return '$0'
  // Micro-payments are the norm in x402: keep up to 4 decimals below a dollar rather than show $0.
  if (usd < 1) {
    const text = trimZeros(usd.toFixed(4))
    if (text === '0') return '$0'
    return `$${text.length < 4 ? usd.toFixed(2) : text}`
  }
  if (usd < 1000) {
    const cents = usd.toFixed(2)
    if (Number(cents) < 1000) return `$${cents.endsWith('.00') ? cents.slice(0, -3) : cents}`
  }
  for (const [suffix, scale] of [['k', 1e3], ['M', 1e6], ['B', 1e9]] as const) {
    const scaled = Number((usd / scale).toFixed(1))
    if (scaled < 1000 || suffix === 'B') return `$${trimZeros(scaled.toFixed(1))}${suffix}`
  }
  return '$0'
}

const trimZeros = (text: string) => (text.includes('.') ? text.replace(/\.?0+$/, '') : text)

/**
 * When a resource was last called: `never`, `<n>m ago`, `<n>h ago`, `<n>d ago`
 * up to 30 days, then the UTC date as `MM/DD/YYYY`. Every relative text keeps
 * SPEC.md's `<n><unit> ago` shape, with `n >= 1`: a call under a minute old
 * reads `1m ago`, never `0m ago` (the listing is a snapshot cached for
 * minutes, so "seconds ago" would claim a precision it does not have).
 *
 * @example
 * import { formatLastCalled } from './catalog-format.js'
 *
 * const now = Date.now()
 * formatLastCalled(undefined, now)        // 'never'
 * formatLastCalled(now - 20_000, now)     // '1m ago'
 * formatLastCalled(now - 3 * 86_400_000, now) // '3d ago'
 * formatLastCalled(Date.UTC(2026, 1, 11), now) // '02/11/2026'
 */
export function formatLastCalled(lastCalledMs: number | undefined, nowMs: number): string {
  if (lastCalledMs === undefined || !Number.isFinite(lastCalledMs)) return 'never'
  // A timestamp slightly ahead (another instance's clock) counts as just now.
  const age = Math.max(0, nowMs - lastCalledMs)
  if (age < 3_600_000) return `${Math.max(1, Math.floor(age / 60_000))}m ago`
  if (age < DAY_MS) return `${Math.floor(age / 3_600_000)}h ago`
  if (age < 30 * DAY_MS) return `${Math.floor(age / DAY_MS)}d ago`
  const date = new Date(lastCalledMs)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${pad(date.getUTCMonth() + 1)}/${pad(date.getUTCDate())}/${date.getUTCFullYear()}`
}
