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

/**
 * Requests refused before the payment checks over one period: counted here and nowhere else, so
 * that requests nobody could pay with do not weigh on the success rates.
 */
export const refusalTotalsSchema = z.object({
  total: count.describe('verifications + settlements'),
  verifications: count.describe('/verify requests refused before the payment checks'),
  settlements: count.describe('/settle requests refused before the payment checks (nothing was sent)'),
  unsupportedKind: count.describe('a scheme or network this facilitator does not serve (unsupported_scheme, invalid_network)'),
  unsupportedVersion: count.describe('an x402 version other than 1 and 2 (invalid_x402_version)'),
  mismatch: count.describe('the payload names another scheme, network or requirements (invalid_scheme, network_mismatch, accepted_requirements_mismatch)'),
  malformed: count.describe('a body that does not fit the x402 schema (invalid_request), or a payload or requirements the scheme cannot read (invalid_payload, invalid_payment_requirements, ...)'),
})

/**
 * Usage over one period (all time, last 24 h). `verifications` and `settlements` count the
 * payments that reached the payment checks: read by an adapter of a network and scheme this
 * facilitator serves, and judged (valid or not, settled or not, or a fault while checking).
 * Requests refused before that are in `refused` only.
 */
export const usageTotalsSchema = z.object({
  verifications: z.object({
    total: count.describe('valid + invalid + errors; refusals before the payment checks are in `refused`'),
    valid: count,
    invalid: count.describe('payments the checks refused (signature, amount, balance, nonce, simulation, a policy hook, ...)'),
    errors: count.describe('faults: unreachable chain, timeout'),
    successRate: percent.describe('valid / total, percent'),
  }),
  settlements: z.object({
    total: count.describe('succeeded + failed + errors; each transaction counted once; refusals before the payment checks are in `refused`'),
    succeeded: count,
    failed: count,
    errors: count,
    pending: count.describe('answers "sent, not confirmed yet"; not part of total'),
    successRate: percent.describe('succeeded / total, percent'),
  }),
  volume: z.array(volumeEntrySchema),
  volumeUsd: z.number().describe('sum of the usd values that are known'),
  payers: count.describe('distinct payers of successful settlements (HyperLogLog estimate, ~1%)'),
  refused: refusalTotalsSchema.describe('requests refused before the payment checks; per network: only those an adapter of that network refused (a payload it cannot read)'),
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
      network: z.string().describe('CAIP-2 id of a network this facilitator served; requests no adapter served are counted in usage.*.refused only'),
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
        refused: count.describe('requests refused before the payment checks that day, in none of the counts above'),
        networks: z
          .array(dailyNetworkSchema)
          .describe('the same day per served network (CAIP-2 id), networks without activity that day left out'),
      }),
    )
    .describe('the last 30 UTC days, oldest first, today included'),
  performance: z.array(z.object({ ...windowBounds, operations: z.array(latencyEntrySchema) })),
  solanaConfirmation: z.array(z.object({ ...windowBounds, networks: z.array(confirmationEntrySchema) })),
})

export type PublicStats = z.infer<typeof publicStatsSchema>
export type UsageTotals = z.infer<typeof usageTotalsSchema>
export type RefusalTotals = z.infer<typeof refusalTotalsSchema>
export type VolumeEntry = z.infer<typeof volumeEntrySchema>
export type LatencyEntry = z.infer<typeof latencyEntrySchema>
export type DailyNetworkEntry = z.infer<typeof dailyNetworkSchema>
