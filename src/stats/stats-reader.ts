import { createAssetTable, type AssetTable } from '../networks/assets.js'
import { describeNetwork } from '../networks/networks.js'
import type { StatsStore } from '../stores/store.js'
import { createLatencyHistogram, type LatencyHistogram } from './latency-histogram.js'
import { REFUSAL_KINDS, type RefusalKind } from './refusals.js'
import { DAY_MS, dayKey, HOUR_MS, hourKey, joinAmount, MINUTE_MS, minuteKey, payersKey, STATS_ALL_KEY, UNSUPPORTED_NETWORK, utcDay } from './stats-keys.js'
import type { LatencyEntry, PublicStats, RefusalTotals, UsageTotals, VolumeEntry } from './stats-schema.js'
import { formatTokenUnits, usdValue } from '../networks/token-units.js'

/** Options of `readPublicStats`. */
export interface ReadStatsOptions {
  /** Assets priced in USD and shown in token units. @default createAssetTable() (USDC on the x402 networks) */
  assets?: AssetTable
  /** Clock in milliseconds. @default Date.now */
  now?: () => number
}

interface VerifyCounts { valid: number; invalid: number; error: number }
interface SettleCounts { ok: number; fail: number; error: number; pending: number }
interface VolumeCounts { network: string; asset: string; hi: number; lo: number; n: number }
type RefusalCounts = Record<'verify' | 'settle', number> & Record<RefusalKind, number>

/** Counters of one or more buckets, parsed from their field names and summed. */
interface Tally {
  verify: Map<string, VerifyCounts>
  settle: Map<string, SettleCounts>
  volume: Map<string, VolumeCounts>
  latency: Map<string, LatencyHistogram>
  /** Refusals before the payment checks, by network (`unsupported` for those no adapter served). */
  refused: Map<string, RefusalCounts>
}

const DAILY_DAYS = 30

/**
 * Computes the public statistics from the counters the stats recorder wrote,
 * reading about 120 small hashes. Use `createPublicStats` for a cached reader.
 *
 * @example
 * // partial
 * const body = await readPublicStats(store)
 * body.usage.last24h.settlements.successRate // e.g. 98.5
 */
export async function readPublicStats(store: StatsStore, options: ReadStatsOptions = {}): Promise<PublicStats> {
  const assets = options.assets ?? createAssetTable()
  const time = (options.now ?? Date.now)()
  const minute = Math.floor(time / MINUTE_MS)
  const hour = Math.floor(time / HOUR_MS)
  const today = Math.floor(time / DAY_MS)

  const minutes = range(minute - 60, minute)
  const hours = range(hour - 24, hour)
  const days = range(today - DAILY_DAYS + 1, today).map((d) => utcDay(d * DAY_MS))
  const [all, minuteFields, hourFields, dayFields] = await Promise.all([
    store.readFields(STATS_ALL_KEY),
    Promise.all(minutes.map((m) => store.readFields(minuteKey(m)))),
    Promise.all(hours.map((h) => store.readFields(hourKey(h)))),
    Promise.all(days.map((d) => store.readFields(dayKey(d)))),
  ])
  const allTally = tally([all])
  const dayTallies = dayFields.map((fields) => tally([fields]))
  const last24h = tally(hourFields)

  // Served networks only: requests no adapter served are in `refused`, never a network of their own.
  const networks = [...new Set([...allTally.verify.keys(), ...allTally.settle.keys(), ...allTally.refused.keys(), ...[...allTally.volume.values()].map((v) => v.network)])]
    .filter((network) => network !== UNSUPPORTED_NETWORK)
    .sort()
  const payerScopes = {
    all: networks.map((n) => [payersKey('all', n)]),
    last24h: networks.map((n) => hours.map((h) => payersKey(`h:${h}`, n))),
  }
  const [payersAll, payers24h, payersAllByNetwork, payers24hByNetwork, payersDaily] = await Promise.all([
    store.countDistinct(payerScopes.all.flat()),
    store.countDistinct(payerScopes.last24h.flat()),
    Promise.all(payerScopes.all.map((keys) => store.countDistinct(keys))),
    Promise.all(payerScopes.last24h.map((keys) => store.countDistinct(keys))),
    Promise.all(days.map((d) => store.countDistinct(networks.map((n) => payersKey(`d:${d}`, n))))),
  ])

  const iso = (ms: number) => new Date(ms).toISOString()
  const windows = [
    { window: '1m' as const, from: iso((minute - 1) * MINUTE_MS), tally: tally(minuteFields.slice(-2)) },
    { window: '5m' as const, from: iso((minute - 5) * MINUTE_MS), tally: tally(minuteFields.slice(-6)) },
    { window: '1h' as const, from: iso((minute - 60) * MINUTE_MS), tally: tally(minuteFields) },
    { window: '24h' as const, from: iso((hour - 24) * HOUR_MS), tally: last24h },
    { window: 'all' as const, from: null, tally: allTally },
  ]

  return {
    schemaVersion: 1,
    generatedAt: iso(time),
    usage: {
      allTime: usage(allTally, assets, payersAll),
      last24h: usage(last24h, assets, payers24h),
    },
    networks: networks.map((network, i) => ({
      network,
      name: describeNetwork(network)?.v1Name ?? null,
      allTime: usage(allTally, assets, payersAllByNetwork[i]!, network),
      last24h: usage(last24h, assets, payers24hByNetwork[i]!, network),
    })),
    daily: days.map((date, i) => {
      const day = dayTallies[i]!
      const totals = usage(day, assets, payersDaily[i]!)
      // Distinct payers per network and day would cost one sketch read each: the day's total has them.
      const dayNetworks = [...new Set([...day.verify.keys(), ...day.settle.keys()])].filter((network) => network !== UNSUPPORTED_NETWORK).sort()
      return {
        date,
        verifications: totals.verifications.total,
        validVerifications: totals.verifications.valid,
        settlements: totals.settlements.total,
        successfulSettlements: totals.settlements.succeeded,
        volumeUsd: totals.volumeUsd,
        payers: totals.payers,
        refused: totals.refused.total,
        networks: dayNetworks.map((network) => {
          const share = usage(day, assets, 0, network)
          return {
            network,
            verifications: share.verifications.total,
            settlements: share.settlements.total,
            successfulSettlements: share.settlements.succeeded,
            volumeUsd: share.volumeUsd,
          }
        }),
      }
    }),
    performance: windows.map(({ window, from, tally: t }) => ({ window, from, operations: latencyEntries(t, ['verify', 'settle']) })),
    solanaConfirmation: windows.map(({ window, from, tally: t }) => ({
      window,
      from,
      networks: latencyEntries(t, ['confirm'])
        .filter((entry) => entry.network.startsWith('solana:'))
        .map(({ operation: _operation, ...rest }) => rest),
    })),
  }
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i)
}

/** Sums the counters of several buckets, keyed by what their field names say. */
function tally(buckets: readonly Record<string, number>[]): Tally {
  const t: Tally = { verify: new Map(), settle: new Map(), volume: new Map(), latency: new Map(), refused: new Map() }
  const refusalsOf = (network: string) => {
    let counts = t.refused.get(network)
    if (!counts) t.refused.set(network, (counts = { verify: 0, settle: 0, unsupportedKind: 0, unsupportedVersion: 0, mismatch: 0, malformed: 0 }))
    return counts
  }
  for (const fields of buckets) {
    for (const field in fields) {
      const by = fields[field]!
      const parts = field.split('|')
      switch (parts[0]) {
        case 'r': {
          const [, operation, network = '', kind] = parts
          if ((operation !== 'verify' && operation !== 'settle') || !REFUSAL_KINDS.includes(kind as RefusalKind)) break
          const counts = refusalsOf(network)
          counts[operation] += by
          counts[kind as RefusalKind] += by
          break
        }
        case 'v': {
          const [, network, outcome] = parts as [string, string, keyof VerifyCounts]
          if (network === UNSUPPORTED_NETWORK) {
            // Written before refusals had fields of their own: a request no adapter served.
            const counts = refusalsOf(network)
            counts.verify += by
            counts.unsupportedKind += by
            break
          }
          const counts = t.verify.get(network) ?? { valid: 0, invalid: 0, error: 0 }
          if (outcome in counts) counts[outcome] += by
          t.verify.set(network, counts)
          break
        }
        case 's': {
          const [, network, outcome] = parts as [string, string, keyof SettleCounts]
          if (network === UNSUPPORTED_NETWORK) {
            // As above (a pending or deduplicated outcome never had one).
            const counts = refusalsOf(network)
            counts.settle += by
            counts.unsupportedKind += by
            break
          }
          const counts = t.settle.get(network) ?? { ok: 0, fail: 0, error: 0, pending: 0 }
          if (outcome in counts) counts[outcome] += by
          t.settle.set(network, counts)
          break
        }
        case 'vol': {
          const [, network = '', asset = '', part] = parts
          const key = `${network}|${asset}`
          const counts = t.volume.get(key) ?? { network, asset, hi: 0, lo: 0, n: 0 }
          if (part === 'hi' || part === 'lo' || part === 'n') counts[part] += by
          t.volume.set(key, counts)
          break
        }
        case 'lat': {
          const [, operation, network, bucket] = parts
          // Response times of requests no adapter served, written by earlier versions: not a network's.
          if (network === UNSUPPORTED_NETWORK) break
          const key = `${operation}|${network}`
          let histogram = t.latency.get(key)
          if (!histogram) t.latency.set(key, (histogram = createLatencyHistogram()))
          histogram.addBucket(Number(bucket), by)
          break
        }
      }
    }
  }
  return t
}

function usage(t: Tally, assets: AssetTable, payers: number, network?: string): UsageTotals {
  const verify = { valid: 0, invalid: 0, error: 0 }
  const settle = { ok: 0, fail: 0, error: 0, pending: 0 }
  for (const [net, counts] of t.verify) if (!network || net === network) for (const k in verify) verify[k as keyof VerifyCounts] += counts[k as keyof VerifyCounts]
  for (const [net, counts] of t.settle) if (!network || net === network) for (const k in settle) settle[k as keyof SettleCounts] += counts[k as keyof SettleCounts]
  const volume: VolumeEntry[] = []
  let volumeUsd = 0
  for (const v of t.volume.values()) {
    if (network && v.network !== network) continue
    const base = joinAmount(v.hi, v.lo)
    const known = assets.find(v.network, v.asset)
    const usd = usdValue(base, known)
    if (usd !== undefined) volumeUsd += usd
    volume.push({
      network: v.network,
      asset: v.asset,
      symbol: known?.symbol ?? null,
      decimals: known?.decimals ?? null,
      amount: known ? formatTokenUnits(base, known.decimals) : base.toString(),
      baseUnits: base.toString(),
      settlements: v.n,
      usd: usd ?? null,
    })
  }
  volume.sort((a, b) => (b.usd ?? -1) - (a.usd ?? -1) || a.network.localeCompare(b.network) || a.asset.localeCompare(b.asset))
  const refused: RefusalTotals = { total: 0, verifications: 0, settlements: 0, unsupportedKind: 0, unsupportedVersion: 0, mismatch: 0, malformed: 0 }
  for (const [net, counts] of t.refused) {
    if (network && net !== network) continue
    refused.verifications += counts.verify
    refused.settlements += counts.settle
    for (const kind of REFUSAL_KINDS) refused[kind] += counts[kind]
  }
  refused.total = refused.verifications + refused.settlements
  const verifications = verify.valid + verify.invalid + verify.error
  const settlements = settle.ok + settle.fail + settle.error
  return {
    verifications: { total: verifications, valid: verify.valid, invalid: verify.invalid, errors: verify.error, successRate: rate(verify.valid, verifications) },
    settlements: { total: settlements, succeeded: settle.ok, failed: settle.fail, errors: settle.error, pending: settle.pending, successRate: rate(settle.ok, settlements) },
    volume,
    volumeUsd: Math.round(volumeUsd * 1_000_000) / 1_000_000,
    payers,
    refused,
  }
}

const rate = (part: number, total: number) => (total === 0 ? null : Math.round((part / total) * 10_000) / 100)

function latencyEntries(t: Tally, operations: readonly string[]): LatencyEntry[] {
  const entries: LatencyEntry[] = []
  for (const [key, histogram] of t.latency) {
    const [operation = '', network = ''] = key.split('|')
    if (!operations.includes(operation)) continue
    const summary = histogram.summary()
    if (summary) entries.push({ operation: operation as LatencyEntry['operation'], network, ...summary })
  }
  return entries.sort((a, b) => a.operation.localeCompare(b.operation) || a.network.localeCompare(b.network))
}
