import { describe, expect, it } from 'vitest'
import type { PaymentContext } from '../../src/core/adapter.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import type { SettleEvent, VerifyEvent } from '../../src/core/hooks.js'
import { isFacilitatorError } from '../../src/errors/facilitator-error.js'
import type { PaymentRequest } from '../../src/schemas/messages.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import type { RefusalKind } from '../../src/stats/refusals.js'
import { hourKey, HOUR_MS, STATS_ALL_KEY } from '../../src/stats/stats-keys.js'
import { readPublicStats } from '../../src/stats/stats-reader.js'
import { createStatsRecorder } from '../../src/stats/stats-recorder.js'
import { publicStatsSchema } from '../../src/stats/stats-schema.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { junkRequest, JUNK_KINDS, randomSource, type Body } from '../support/junk-requests.js'
import { createChainAdapter, createTestChain, paymentBody, paymentBodyV1 } from '../support/stats-test-adapter.js'

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

  it('keeps junk apart and bounded: 10,000 requests naming random networks, schemes and versions add no field and no network, and leave the success rates alone', async () => {
    const now = Date.UTC(2026, 0, 1, 12)
    const store = createMemoryStore({ now: () => now })
    const stats = createPublicStats({ store, now: () => now, cacheSeconds: 0 })
    const chain = createTestChain()
    const EVM = 'eip155:84532'
    const facilitator = createFacilitator({ schemes: [createChainAdapter(chain, { network: EVM, v1Name: 'base-sepolia' })], store, hooks: [stats.hooks] })
    const payment = { network: EVM, from: '0x1111', to: '0xshop', value: 1000n, asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' }
    chain.fund('0x1111', 10n ** 9n)
    // Real payments: three valid verifications, one refused by the checks (a bad signature), two settlements.
    for (const nonce of ['a', 'b', 'c']) expect((await facilitator.verify(paymentBody(chain, { ...payment, nonce }))).isValid).toBe(true)
    expect(await facilitator.verify(paymentBody(chain, { ...payment, nonce: 'd', validSignature: false }))).toMatchObject({ invalidReason: 'invalid_signature' })
    for (const nonce of ['e', 'f']) expect((await facilitator.settle(paymentBody(chain, { ...payment, nonce }))).success).toBe(true)
    await facilitator.drain()
    const before = await stats.read()

    const served = { v2: paymentBody(chain, { ...payment, nonce: 'v2' }) as Body, v1: paymentBodyV1(chain, { ...payment, network: 'base-sepolia', nonce: 'v1' }) as Body }
    const random = randomSource(30_4)
    const refused = { verify: 0, settle: 0, unsupportedKind: 0, unsupportedVersion: 0, mismatch: 0, malformed: 0 } satisfies Record<string, number>
    const send = async (i: number) => {
      const junk = junkRequest(i % JUNK_KINDS, random, served)
      const operation = random() < 0.5 ? 'verify' : 'settle'
      const code = await (operation === 'verify' ? facilitator.verify(junk.body) : facilitator.settle(junk.body)).then(
        (answer) => ('isValid' in answer ? answer.invalidReason : answer.errorReason),
        (error: unknown) => (isFacilitatorError(error) ? error.code : String(error)),
      )
      expect(code).toBe(junk.code)
      refused[operation]++
      refused[junk.refusal satisfies RefusalKind]++
    }
    const fields = async () => [Object.keys(await store.readFields(STATS_ALL_KEY)).sort(), Object.keys(await store.readFields(hourKey(Math.floor(now / HOUR_MS)))).sort()]
    for (let i = 0; i < 400; i++) await send(i)
    await facilitator.drain()
    const [early, earlySize] = [await fields(), store.size()]
    for (let i = 400; i < 10_000; i++) await send(i)
    await facilitator.drain()

    // The same fields and keys after 400 junk requests as after 10,000: at most one per operation and kind.
    expect(await fields()).toEqual(early)
    expect(store.size()).toEqual(earlySize)
    expect((await fields())[0]!.filter((field) => field.startsWith('r|')).length).toBeLessThanOrEqual(2 * 4 * 2)

    const body = publicStatsSchema.parse(await stats.read())
    // What reached the payment checks is rated as before the junk; the junk is counted apart.
    expect(body.usage.allTime.verifications).toEqual(before.usage.allTime.verifications)
    expect(body.usage.allTime.verifications).toMatchObject({ total: 4, valid: 3, invalid: 1, successRate: 75 })
    expect(body.usage.allTime.settlements).toEqual(before.usage.allTime.settlements)
    expect(body.usage.allTime.settlements).toMatchObject({ total: 2, succeeded: 2, successRate: 100 })
    expect(body.usage.allTime.refused).toEqual({ total: 10_000, verifications: refused.verify, settlements: refused.settle, unsupportedKind: refused.unsupportedKind, unsupportedVersion: refused.unsupportedVersion, mismatch: refused.mismatch, malformed: refused.malformed })
    expect(body.usage.last24h.refused).toEqual(body.usage.allTime.refused)
    expect(body.daily.at(-1)).toMatchObject({ verifications: 4, settlements: 2, refused: 10_000 })
    // Only the served network has an entry, with the refusals its adapter made (unreadable payloads).
    expect(body.networks.map((n) => n.network)).toEqual([EVM])
    expect(body.networks[0]!.allTime.refused).toMatchObject({ total: 10_000 / JUNK_KINDS, malformed: 10_000 / JUNK_KINDS })
    expect(body.daily.flatMap((day) => day.networks.map((n) => n.network)).every((network) => network === EVM)).toBe(true)
    expect(body.performance.flatMap((w) => w.operations.map((op) => op.network)).every((network) => network === EVM)).toBe(true)
    expect(JSON.stringify(body)).not.toContain('junk-')
    expect(JSON.stringify(body).length).toBeLessThan(JSON.stringify(before).length + 2048)
  }, 120_000)

  it('counts statistics written before refusals had fields of their own as refusals, not as a network', async () => {
    const store = createMemoryStore()
    const now = () => Date.UTC(2026, 0, 1, 12)
    // What earlier versions wrote for requests no adapter served, beside a served network's counts.
    await store.incrementFields(STATS_ALL_KEY, { 'v|unsupported|invalid': 7, 's|unsupported|fail': 2, 'lat|verify|unsupported|3': 7, 'v|eip155:8453|valid': 3 })
    const body = await readPublicStats(store, { now })
    expect(body.usage.allTime.verifications).toMatchObject({ total: 3, valid: 3, successRate: 100 })
    expect(body.usage.allTime.settlements.total).toBe(0)
    expect(body.usage.allTime.refused).toMatchObject({ total: 9, verifications: 7, settlements: 2, unsupportedKind: 9 })
    expect(body.networks.map((n) => n.network)).toEqual(['eip155:8453'])
    expect(body.performance.find((w) => w.window === 'all')!.operations).toEqual([])
  })
})
