/**
 * How the statistics page writes numbers, times and networks. Fixed to en-US
 * and UTC: the page is rendered once on the server and cached for every reader,
 * so it cannot follow each reader's locale, and it must read the same in tests.
 */
import { describeNetwork } from '../../networks/networks.js'

const COUNT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const DECIMAL = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 })
// Micro-payments are the norm in x402: keep the digits of $0.0025 rather than round it to $0.00.
const USD = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 6 })

/** `1,234` */
export const formatCount = (n: number): string => COUNT.format(n)

/** `1,234.57` (at most two decimals, as the statistics give them) */
export const formatDecimal = (n: number): string => DECIMAL.format(n)

/** `85.71%`, or `empty` when there is nothing to rate (never 0% for "no data"). */
export const formatPercent = (n: number | null, empty = 'no data'): string => (n === null ? empty : `${DECIMAL.format(n)}%`)

/** `$12.50`, `$0.0025`, `$1,234.56` */
export const formatUsd = (n: number): string => USD.format(n)

/** `412.5 ms`, `1,520 ms`: the statistics' own milliseconds, so the page and the JSON agree digit for digit. */
export const formatMs = (n: number): string => `${DECIMAL.format(n)} ms`

/** `2026-11-02 12:00 UTC` */
export function formatUtc(iso: string): string {
  const time = Date.parse(iso)
  if (!Number.isFinite(time)) return iso
  return `${new Date(time).toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

/** A network as people name it: the x402 v1 name when it has one (`base`, `solana-devnet`), else its CAIP-2 id. */
export function networkLabel(network: string): string {
  return describeNetwork(network)?.v1Name ?? network
}

/** `0x1234…abcd` for a long address or id; a short one as it is. */
export const shortAddress = (address: string): string => (address.length > 14 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address)
