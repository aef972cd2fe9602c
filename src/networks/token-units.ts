import type { KnownAsset } from './assets.js'

/**
 * An integer amount in the smallest unit, written in whole tokens.
 *
 * @example
 * import { formatTokenUnits } from './token-units.js'
 *
 * formatTokenUnits(12_500_000n, 6) // '12.5'
 * formatTokenUnits(1n, 18)         // '0.000000000000000001'
 */
export function formatTokenUnits(baseUnits: bigint, decimals: number): string {
  if (decimals === 0) return baseUnits.toString()
  const negative = baseUnits < 0n
  const digits = (negative ? -baseUnits : baseUnits).toString().padStart(decimals + 1, '0')
  const whole = digits.slice(0, -decimals)
  const fraction = digits.slice(-decimals).replace(/0+$/, '')
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`
}

/**
 * The USD value of an amount of a known asset, to the micro-dollar, or
 * `undefined` when the asset has no known price.
 *
 * @example
 * // partial
 * usdValue(2_500_000n, usdc) // 2.5
 */
export function usdValue(baseUnits: bigint, asset: KnownAsset | undefined): number | undefined {
  if (!asset || asset.usdPrice === undefined) return undefined
  // Scale to micro-units in bigint first so large sums keep their precision.
  const scale = 10n ** BigInt(asset.decimals)
  const micros = Number((baseUnits * 1_000_000n) / scale)
  return Math.round(micros * asset.usdPrice) / 1_000_000
}
