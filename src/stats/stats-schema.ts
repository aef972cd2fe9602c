import * as z from 'zod'

const count = z.number().int().nonnegative()
/** A percentage 0..100 with two decimals, or null when there is nothing to rate yet. */
const percent = z.number().min(0).max(100).nullable()

/** Volume of one asset on one network. */
export const volumeEntrySchema = z.object({
  network: z.string().describe('CAIP-2 id'),
  asset: z.string().describe('token contract address or mint'),
  symbol: z.string().nullable().describe('symbol of a known asset, else null'),
  decimals: count.nullable().describe('decimals of a known asset, else null'),
  amount: z.string().describe('in token units (e.g. "12.5") for a known asset, else in base units'),
  baseUnits: z.string().describe('integer amount in the smallest unit'),
  settlements: count,
  usd: z.number().nullable().describe('USD value for an asset with a known price, else null'),
})

/** Usage over one period (all time, last 24 h). */
export const usageTotalsSchema = z.object({
  verifications: z.object({
    total: count,
    valid: count,
    invalid: count,
    errors: count.describe('faults: unreachable chain, timeout'),
    successRate: percent.describe('valid / total, percent'),
  }),
  settlements: z.object({
    total: count.describe('succeeded + failed + errors; each transaction counted once'),
    succeeded: count,
    failed: count,
    errors: count,
    pending: count.describe('answers "sent, not confirmed yet"; not part of total'),
    successRate: percent.describe('succeeded / total, percent'),
  }),
  volume: z.array(volumeEntrySchema),
  volumeUsd: z.number().describe('sum of the usd values that are known'),
  payers: count.describe('distinct payers of successful settlements (HyperLogLog estimate, ~1%)'),
})

/** Response times of one operation on one network over a window. */
export const latencyEntrySchema = z.object({
  operation: z.enum(['verify', 'settle']),
  network: z.string(),
  count,
  p50Ms: z.number(),
  p95Ms: z.number(),
  p99Ms: z.number(),
})

/** Time from sending a Solana transaction to its confirmation. */
export const confirmationEntrySchema = z.object({
  network: z.string(),
  count,
  p50Ms: z.number(),
  p95Ms: z.number(),
  p99Ms: z.number(),
})

/** One network's share of a day of the daily series. */
export const dailyNetworkSchema = z.object({
  network: z.string(),
  verifications: count,
  settlements: count,
  successfulSettlements: count,
  volumeUsd: z.number().describe('sum of the usd values that are known'),
})

const windowBounds = {
  window: z.enum(['1m', '5m', '1h', '24h', 'all']),
  from: z.string().nullable().describe('ISO start of the oldest bucket read; null for all time'),
}

/**
 * Body of GET /public/stats. Aggregates only: no addresses, no transactions,
 * nothing about a single payer.
 */
export const publicStatsSchema = z.object({
  schemaVersion: z.literal(1),
  generatedAt: z.string().describe('ISO time the body was computed'),
  usage: z.object({ allTime: usageTotalsSchema, last24h: usageTotalsSchema }),
  networks: z.array(
    z.object({
      network: z.string().describe('CAIP-2 id, or "unsupported" for requests no adapter served'),
      name: z.string().nullable().describe('x402 v1 name when the network has one'),
      allTime: usageTotalsSchema,
      last24h: usageTotalsSchema,
    }),
  ),
  daily: z
    .array(
      z.object({
        date: z.string().describe('UTC day, YYYY-MM-DD'),
        verifications: count,
        validVerifications: count,
        settlements: count,
        successfulSettlements: count,
        volumeUsd: z.number(),
        payers: count,
        networks: z
          .array(dailyNetworkSchema)
          .describe('the same day per network (CAIP-2 id, or "unsupported"), networks without activity that day left out'),
      }),
    )
    .describe('the last 30 UTC days, oldest first, today included'),
  performance: z.array(z.object({ ...windowBounds, operations: z.array(latencyEntrySchema) })),
  solanaConfirmation: z.array(z.object({ ...windowBounds, networks: z.array(confirmationEntrySchema) })),
})

export type PublicStats = z.infer<typeof publicStatsSchema>
export type UsageTotals = z.infer<typeof usageTotalsSchema>
export type VolumeEntry = z.infer<typeof volumeEntrySchema>
export type LatencyEntry = z.infer<typeof latencyEntrySchema>
export type DailyNetworkEntry = z.infer<typeof dailyNetworkSchema>
