import { describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createHandler } from '../../src/http/handler.js'
import { createAssetTable } from '../../src/networks/assets.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import { publicStatsSchema } from '../../src/stats/stats-schema.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { createChainAdapter, createTestChain, paymentBody, paymentBodyV1 } from '../support/stats-test-adapter.js'

const EVM = 'eip155:84532'
const USDC_BASE_SEPOLIA = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
const SOL_USDC_DEVNET = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'
const TEST_TOKEN = '0x00000000000000000000000000000000000000aa'
const DAY = 86_400_000

function setup(options: { start?: number; cacheSeconds?: number } = {}) {
  const clock = { now: options.start ?? Date.UTC(2026, 10, 2, 12, 0, 0) }
  const now = () => clock.now
  const store = createMemoryStore({ now })
  const chain = createTestChain()
  const stats = createPublicStats({ store, now, cacheSeconds: options.cacheSeconds ?? 0 })
  const facilitator = createFacilitator({
    schemes: [
      createChainAdapter(chain, { network: EVM, v1Name: 'base-sepolia', verifyDelayMs: 2 }),
      createChainAdapter(chain, { network: SOLANA_DEVNET, v1Name: 'solana-devnet', confirmDelayMs: 15 }),
    ],
    store,
    hooks: [stats.hooks],
  })
  return { clock, store, chain, stats, facilitator }
}

describe('public statistics', () => {
  it('counts verifications, settlements, volume in token units and USD, payers and networks', async () => {
    const { chain, stats, facilitator } = setup()
    const payers = ['0x1111111111111111111111111111111111111111', '0x2222222222222222222222222222222222222222']
    for (const p of payers) chain.fund(p, 10_000_000n)
    chain.fund('SoLPayer111111111111111111111111111111111111', 10_000_000n)
    const pay = (i: number, extra: Partial<Parameters<typeof paymentBody>[1]> = {}) =>
      paymentBody(chain, { network: EVM, from: payers[i % 2]!, to: '0xbbbb000000000000000000000000000000000001', value: 1_250_000n, asset: USDC_BASE_SEPOLIA, nonce: `n${i}`, ...extra })

    // 3 valid verifies, 1 invalid (bad signature), 1 for a network nobody serves.
    for (let i = 0; i < 3; i++) expect((await facilitator.verify(pay(i))).isValid).toBe(true)
    expect((await facilitator.verify(pay(9, { validSignature: false }))).isValid).toBe(false)
    expect((await facilitator.verify(pay(10, { network: 'eip155:1' }))).isValid).toBe(false)
    // 3 settles, one of them repeated (answered from its record), one failure, one v1 payment.
    for (let i = 0; i < 3; i++) expect((await facilitator.settle(pay(i))).success).toBe(true)
    expect(await facilitator.settle(pay(0))).toMatchObject({ success: true })
    expect((await facilitator.settle(pay(11, { value: 99_000_000n }))).success).toBe(false)
    const v1 = await facilitator.settle(paymentBodyV1(chain, { network: 'base-sepolia', from: payers[0]!, to: '0xbbbb000000000000000000000000000000000001', value: 500_000n, asset: USDC_BASE_SEPOLIA, nonce: 'v1' }))
    expect(v1).toMatchObject({ success: true })
    // Solana: one settle with a confirmation time; a token without a price.
    expect((await facilitator.settle(paymentBody(chain, { network: SOLANA_DEVNET, from: 'SoLPayer111111111111111111111111111111111111', to: 'Recipient1111111111111111111111111111111111', value: 2_000_000n, asset: SOL_USDC_DEVNET, nonce: 's1' }))).success).toBe(true)
    chain.fund(payers[0]!, 5n * 10n ** 18n)
    expect((await facilitator.settle(pay(12, { asset: TEST_TOKEN, value: 3n * 10n ** 18n }))).success).toBe(true)
    await facilitator.drain()

    const body = await stats.read()
    expect(publicStatsSchema.parse(body)).toEqual(body)
    const all = body.usage.allTime
    // The verification for a network nobody serves never reached the payment checks: counted apart.
    expect(all.verifications).toEqual({ total: 4, valid: 3, invalid: 1, errors: 0, successRate: 75 })
    expect(all.refused).toEqual({ total: 1, verifications: 1, settlements: 0, unsupportedKind: 1, unsupportedVersion: 0, mismatch: 0, malformed: 0 })
    expect(all.settlements).toEqual({ total: 7, succeeded: 6, failed: 1, errors: 0, pending: 0, successRate: 85.71 })
    expect(all.payers).toBe(3)
    const usdc = all.volume.find((v) => v.asset === USDC_BASE_SEPOLIA)!
    expect(usdc).toMatchObject({ network: EVM, symbol: 'USDC', decimals: 6, amount: '4.25', baseUnits: '4250000', settlements: 4, usd: 4.25 })
    const unknown = all.volume.find((v) => v.asset === TEST_TOKEN)!
    expect(unknown).toMatchObject({ symbol: null, decimals: null, amount: '3000000000000000000', usd: null })
    expect(all.volumeUsd).toBe(6.25)
    expect(body.usage.last24h).toEqual(all)

    const evm = body.networks.find((n) => n.network === EVM)!
    expect(evm.name).toBe('base-sepolia')
    expect(evm.allTime.settlements.succeeded).toBe(5)
    expect(evm.allTime.payers).toBe(2)
    expect(evm.allTime.refused.total).toBe(0)
    expect(body.networks.map((n) => n.network)).toEqual([EVM, SOLANA_DEVNET])

    expect(body.daily).toHaveLength(30)
    expect(body.daily.at(-1)).toEqual({
      date: '2026-11-02',
      verifications: 4,
      validVerifications: 3,
      settlements: 7,
      successfulSettlements: 6,
      volumeUsd: 6.25,
      payers: 3,
      refused: 1,
      // Per network: the unpriced test token adds settlements but no USD; the unserved network is no network of its own.
      networks: [
        { network: EVM, verifications: 4, settlements: 6, successfulSettlements: 5, volumeUsd: 4.25 },
        { network: SOLANA_DEVNET, verifications: 0, settlements: 1, successfulSettlements: 1, volumeUsd: 2 },
      ],
    })
    // The networks of a day add up to the day.
    for (const day of body.daily) {
      expect(day.networks.reduce((sum, n) => sum + n.settlements, 0)).toBe(day.settlements)
      expect(day.networks.reduce((sum, n) => sum + n.volumeUsd, 0)).toBeCloseTo(day.volumeUsd, 6)
    }

    const verify1m = body.performance.find((w) => w.window === '1m')!.operations.find((o) => o.operation === 'verify' && o.network === EVM)!
    expect(verify1m.count).toBe(4)
    expect(verify1m.p50Ms).toBeGreaterThanOrEqual(1.5)
    const confirm = body.solanaConfirmation.find((w) => w.window === '1h')!.networks
    expect(confirm).toHaveLength(1)
    expect(confirm[0]).toMatchObject({ network: SOLANA_DEVNET, count: 1 })
    expect(confirm[0]!.p50Ms).toBeGreaterThanOrEqual(13)

    // Aggregates only: no payer, recipient or transaction appears anywhere.
    const text = JSON.stringify(body).toLowerCase()
    for (const secret of [...payers, 'solpayer', 'recipient1111', '0xbbbb', ...[...chain.applied.keys()]]) expect(text).not.toContain(secret.toLowerCase())
  })

  it('counts a settlement once when a racing duplicate\'s after-hook runs before the winner\'s', async () => {
    const { stats, store } = setup()
    const { createStatsRecorder } = await import('../../src/stats/stats-recorder.js')
    const hooks = createStatsRecorder({ store, now: () => Date.UTC(2026, 10, 2, 12, 0, 0) })
    const context = { network: EVM, asset: USDC_BASE_SEPOLIA, amount: 1_000_000n, timings: {} } as never
    const transaction = `0x${'ab'.repeat(32)}`
    const base = { operation: 'settle' as const, request: {} as never, context, durationMs: 5 }
    const landed = { success: true, transaction, network: EVM, payer: '0x1111111111111111111111111111111111111111' }
    // The racer answered from the winner's record finishes first; then the winner's own event.
    await hooks.afterSettle!({ ...base, origin: 'recorded', result: landed })
    await hooks.afterSettle!({ ...base, origin: 'sent', result: landed })
    // A later repeat answered from the record, and a different payment refused as a duplicate of it.
    await hooks.afterSettle!({ ...base, origin: 'recorded', result: landed })
    await hooks.afterSettle!({ ...base, origin: 'recorded', result: { success: false, errorReason: 'duplicate_settlement', transaction, network: EVM } })
    const body = await stats.read()
    expect(body.usage.allTime.settlements).toMatchObject({ succeeded: 1, failed: 0 })
    expect(body.usage.allTime.volume[0]).toMatchObject({ amount: '1', settlements: 1 })
  })

  it('counts a landed settlement whose own after-hook never ran (its process died) from the retry answered by its record', async () => {
    const { stats, store } = setup()
    const { createStatsRecorder } = await import('../../src/stats/stats-recorder.js')
    const hooks = createStatsRecorder({ store, now: () => Date.UTC(2026, 10, 2, 12, 0, 0) })
    const context = { network: EVM, asset: USDC_BASE_SEPOLIA, amount: 2_000_000n, timings: {} } as never
    const transaction = `0x${'cd'.repeat(32)}`
    // Only the retry's event arrives: the call that sent it was killed after recording its outcome.
    await hooks.afterSettle!({ operation: 'settle', request: {} as never, context, durationMs: 3, origin: 'recorded', result: { success: true, transaction, network: EVM, payer: '0x2222222222222222222222222222222222222222' } })
    const body = await stats.read()
    expect(body.usage.allTime.settlements).toMatchObject({ succeeded: 1 })
    expect(body.usage.allTime.volume[0]).toMatchObject({ amount: '2', settlements: 1 })
  })

  it('says "no data" rather than 0% when nothing happened', async () => {
    const { stats } = setup()
    const body = publicStatsSchema.parse(await stats.read())
    expect(body.usage.allTime.verifications.successRate).toBeNull()
    expect(body.usage.allTime.settlements.successRate).toBeNull()
    expect(body.performance.every((w) => w.operations.length === 0)).toBe(true)
    expect(body.daily.every((d) => d.verifications === 0)).toBe(true)
  })

  it('rolls windows and days over with the clock', async () => {
    const { clock, chain, stats, facilitator } = setup()
    chain.fund('0x1111111111111111111111111111111111111111', 100_000_000n)
    const settle = (nonce: string) =>
      facilitator.settle(paymentBody(chain, { network: EVM, from: '0x1111111111111111111111111111111111111111', to: '0xbbbb000000000000000000000000000000000001', value: 1_000_000n, asset: USDC_BASE_SEPOLIA, nonce }))
    await settle('day0')
    clock.now += 3 * DAY
    await settle('day3-a')
    await settle('day3-b')
    clock.now += 10 * 60_000
    await facilitator.drain()
    const body = await stats.read()
    expect(body.usage.allTime.settlements.succeeded).toBe(3)
    expect(body.usage.last24h.settlements.succeeded).toBe(2)
    const byDate = Object.fromEntries(body.daily.map((d) => [d.date, d.successfulSettlements]))
    expect(byDate['2026-11-02']).toBe(1)
    expect(byDate['2026-11-05']).toBe(2)
    expect(body.daily.at(-1)!.date).toBe('2026-11-05')
    const settles = (window: string) => body.performance.find((w) => w.window === window)!.operations.find((o) => o.operation === 'settle')?.count ?? 0
    expect(settles('1m')).toBe(0)
    expect(settles('1h')).toBe(2)
    expect(settles('24h')).toBe(2)
    expect(settles('all')).toBe(3)
    clock.now += 40 * DAY
    const later = await stats.read()
    expect(later.usage.allTime.settlements.succeeded).toBe(3)
    expect(later.daily.every((d) => d.settlements === 0)).toBe(true)
  })

  it('prices the assets an operator adds', async () => {
    const clock = { now: Date.UTC(2026, 0, 1) }
    const store = createMemoryStore()
    const chain = createTestChain()
    const assets = createAssetTable([{ network: 'eip155:31337', address: TEST_TOKEN, symbol: 'TUSD', decimals: 18, usdPrice: 1 }])
    const stats = createPublicStats({ store, assets, now: () => clock.now, cacheSeconds: 0 })
    const facilitator = createFacilitator({ schemes: [createChainAdapter(chain, { network: 'eip155:31337' })], store, hooks: [stats.hooks] })
    chain.fund('0xaaaa', 10n ** 20n)
    await facilitator.settle(paymentBody(chain, { network: 'eip155:31337', from: '0xaaaa', to: '0xbbbb', value: 25n * 10n ** 17n, asset: TEST_TOKEN, nonce: '1' }))
    await facilitator.drain()
    const body = await stats.read()
    expect(body.usage.allTime.volume[0]).toMatchObject({ symbol: 'TUSD', amount: '2.5', usd: 2.5 })
  })

  it('computes the body at most once per cacheSeconds', async () => {
    const { clock, chain, stats, facilitator } = setup({ cacheSeconds: 30 })
    const first = await stats.read()
    chain.fund('0x1', 10n)
    await facilitator.verify(paymentBody(chain, { network: EVM, from: '0x1', to: '0x2', value: 1n, asset: USDC_BASE_SEPOLIA, nonce: 'a' }))
    await facilitator.drain()
    expect(await stats.read()).toBe(first)
    clock.now += 31_000
    const fresh = await stats.read()
    expect(fresh.usage.allTime.verifications.total).toBe(1)
  })
})

describe('statistics over HTTP', () => {
  it('serves GET /public/stats on the payment handler without authentication, cacheable', async () => {
    const { stats, facilitator } = setup({ cacheSeconds: 20 })
    const handler = createHandler(facilitator, { routes: [stats.route()], authenticate: () => false })
    const response = await handler(new Request('http://facilitator.test/public/stats'))
    expect(response.status).toBe(200)
    expect(response.headers.get('cache-control')).toBe('public, max-age=20, stale-while-revalidate=80')
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(publicStatsSchema.safeParse(await response.json()).success).toBe(true)
    // The payment routes still ask for credentials.
    expect((await handler(new Request('http://facilitator.test/supported'))).status).toBe(401)
    expect((await handler(new Request('http://facilitator.test/public/stats', { method: 'POST', body: '{}' }))).status).toBe(405)
  })

  it('serves the stats host with a handler of its own', async () => {
    const { stats } = setup({ cacheSeconds: 15 })
    const handler = stats.handler()
    const ok = await handler(new Request('http://stats.test/public/stats'))
    expect(ok.status).toBe(200)
    expect(ok.headers.get('cache-control')).toContain('max-age=15')
    expect(publicStatsSchema.parse(await ok.json()).schemaVersion).toBe(1)
    const head = await handler(new Request('http://stats.test/public/stats', { method: 'HEAD' }))
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    const missing = await handler(new Request('http://stats.test/verify'))
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ code: 'not_found' })
    expect((await handler(new Request('http://stats.test/public/stats', { method: 'DELETE' }))).status).toBe(405)
    expect((await handler(new Request('http://stats.test/public/stats', { method: 'OPTIONS' }))).status).toBe(204)
  })

  it('answers 503 without caching when the store fails', async () => {
    const store = createMemoryStore()
    // Fault injection: the store cannot be read.
    const broken = { ...store, readFields: () => Promise.reject(new Error('connection refused')) }
    const stats = createPublicStats({ store: broken })
    const response = await stats.handler()(new Request('http://stats.test/public/stats'))
    expect(response.status).toBe(503)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const body = await response.json()
    expect(body.code).toBe('store_unavailable')
    expect(JSON.stringify(body)).not.toContain('connection refused')
  })
})
