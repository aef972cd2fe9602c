import { describe, expect, it } from 'vitest'
import type { PaymentContext } from '../../src/core/adapter.js'
import type { SettleEvent, VerifyEvent } from '../../src/core/hooks.js'
import type { PaymentRequest } from '../../src/schemas/messages.js'
import { readPublicStats } from '../../src/stats/stats-reader.js'
import { createStatsRecorder } from '../../src/stats/stats-recorder.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'

const NETWORKS = ['eip155:8453', 'eip155:84532', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'] as const
const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

// The recorder only reads these fields of an event; the rest of a context is irrelevant to it.
function context(network: string, amount: bigint): PaymentContext {
  return { x402Version: 2, scheme: 'exact', network: network as PaymentContext['network'], wireNetwork: network, amount, asset: USDC, payTo: '0xshop', timings: { confirmationMs: 400 } } as unknown as PaymentContext
}
const request = {} as PaymentRequest

describe('statistics memory', () => {
  it('stays bounded over 120,000 events and 62 simulated days: key counts stop growing', async () => {
    let now = Date.UTC(2026, 0, 1)
    const store = createMemoryStore({ now: () => now })
    const hooks = createStatsRecorder({ store, now: () => now, dedupeTtlMs: 86_400_000 })
    const sizes: ReturnType<typeof store.size>[] = []
    const events = 120_000
    for (let i = 0; i < events; i++) {
      now += 45_000 // 62 days in all
      const network = NETWORKS[i % 3]!
      const ctx = context(network, BigInt(1000 + (i % 977)))
      if (i % 4 === 0) {
        const event: SettleEvent = { operation: 'settle', request, context: ctx, durationMs: 50 + (i % 300), result: { success: true, transaction: `tx${i}`, network, payer: `payer${i % 5000}` } }
        await hooks.afterSettle!(event)
      } else {
        const event: VerifyEvent = { operation: 'verify', request, context: ctx, durationMs: 1 + (i % 40) / 10, result: { isValid: i % 7 !== 0, payer: `payer${i % 5000}` } }
        await hooks.afterVerify!(event)
      }
      if (i % 20_000 === 19_999) sizes.push(store.size())
    }
    // Time buckets and sketches are capped by their lifetimes, not by traffic: a bucket
    // lives its ttl after its last write, so one more of each kind can be alive.
    for (const size of sizes.slice(3)) {
      expect(size.hashes).toBeLessThanOrEqual(1 + 63 + 27 + 33)
      expect(size.sketches).toBeLessThanOrEqual(NETWORKS.length * (1 + 27 + 33))
      expect(size.hashes).toBe(sizes[3]!.hashes)
    }
    // Only the duplicate guards of recent settles live as values (one day of them here).
    expect(sizes.at(-1)!.values).toBeLessThanOrEqual(86_400_000 / 45_000 / 4 + 1)
    const body = await readPublicStats(store, { now: () => now })
    expect(body.usage.allTime.verifications.total + body.usage.allTime.settlements.total).toBe(events)
    // Settles happen on every 4th event, so their payers are the 1250 multiples of 4 below 5000.
    expect(Math.abs(body.usage.allTime.payers - 1250) / 1250).toBeLessThan(0.02)
  })
})
