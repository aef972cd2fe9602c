/**
 * Settlements whose caller never asks again, on anvil: a settle answered `settlement_pending` (its
 * transaction not mined within the budget) is finished by the facilitator itself once the chain
 * shows it, so its record, ledger row and statistics say `settled` without any retry; with the
 * reconciler off it stays pending. A settle that finished leaves nothing in the in-flight index.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createLedgerRecorder } from '../../src/ledger/ledger-recorder.js'
import { createMemoryLedger } from '../../src/ledger/memory-ledger.js'
import { IN_FLIGHT_TTL_MS, inFlightKey, inFlightMinute } from '../../src/settlement/in-flight.js'
import type { SettlementOptions } from '../../src/settlement/settlement-options.js'
import { decodeSettlementRecord } from '../../src/settlement/settlement-record.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

describe('the reconciler finishes settlements nobody retries (anvil)', () => {
  let world: EvmFixture
  beforeAll(async () => {
    world = await startEvmFixture()
  })
  afterAll(async () => {
    await world?.node.testClient.setAutomine(true).catch(() => undefined)
    await world?.stop()
  })

  function setup(settlement: SettlementOptions) {
    const store = createMemoryStore()
    const ledger = createMemoryLedger()
    const stats = createPublicStats({ store, cacheSeconds: 0 })
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig())],
      store,
      hooks: [createLedgerRecorder({ ledger, recordedDelayMs: 0 }), stats.hooks],
      timeouts: { settleMs: 1_500 },
      settlement,
    })
    return { store, ledger, stats, facilitator }
  }

  /** Settles a fresh payment while no block is mined: answered pending. Then one block is mined. */
  async function settlePending(facilitator: ReturnType<typeof setup>['facilitator']) {
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2({ amount: '700' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    await world.node.testClient.setAutomine(false)
    try {
      const answer = await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
      expect(answer).toMatchObject({ success: false, errorReason: 'settlement_pending' })
      await world.node.testClient.mine({ blocks: 1 })
      return { answer, payer }
    } finally {
      await world.node.testClient.setAutomine(true)
    }
  }

  /** The in-flight index of the last hour: each settlement record it ever named, with its count now. */
  async function inFlightIndex(store: ReturnType<typeof createMemoryStore>): Promise<Record<string, number>> {
    const index: Record<string, number> = {}
    for (let minute = inFlightMinute(Date.now() - IN_FLIGHT_TTL_MS); minute <= inFlightMinute(Date.now()); minute++) {
      for (const [key, count] of Object.entries(await store.readFields(inFlightKey(minute)))) index[key] = (index[key] ?? 0) + count
    }
    return index
  }
  const inFlightCount = async (store: ReturnType<typeof createMemoryStore>) => Object.values(await inFlightIndex(store)).reduce((sum, count) => sum + count, 0)

  const recordOf = async (store: ReturnType<typeof createMemoryStore>, transaction: string) => {
    for (const key of Object.keys(await inFlightIndex(store))) {
      const record = decodeSettlementRecord(await store.get(key))
      if (record && 'transaction' in record && record.transaction === transaction) return record
    }
    return undefined
  }

  it('a pending settlement is confirmed, recorded and counted once the chain shows it, with no retry', async () => {
    const { store, ledger, stats, facilitator } = setup({ reconcile: { intervalMs: 100, minAgeMs: 0 } })
    const { answer, payer } = await settlePending(facilitator)
    let rows = (await ledger.read()).entries
    for (const until = Date.now() + 10_000; Date.now() < until && !rows.some((row) => row.status === 'settled'); rows = (await ledger.read()).entries) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    // The ledger appends outcomes: the caller's pending answer, then the one settled row, written by the reconciler.
    expect(rows.filter((row) => row.transaction === answer.transaction).map((row) => [row.status, row.resumed, row.payer]).sort()).toEqual([
      ['pending', false, payer.address.toLowerCase()],
      ['settled', true, payer.address.toLowerCase()],
    ])
    expect(await recordOf(store, answer.transaction)).toMatchObject({ state: 'settled', transaction: answer.transaction })
    await facilitator.drain()
    const usage = (await stats.read()).usage.allTime.settlements
    expect(usage).toMatchObject({ succeeded: 1, pending: 1, failed: 0 })
    expect(await inFlightCount(store)).toBe(0)
    await facilitator.close()
  })

  it('with the reconciler off, the same settlement stays pending until its caller asks again', async () => {
    const { store, ledger, facilitator } = setup({ reconcile: false })
    const { answer } = await settlePending(facilitator)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect((await ledger.read()).entries.map((row) => row.status)).toEqual(['pending'])
    expect(await recordOf(store, answer.transaction)).toMatchObject({ state: 'broadcast' })
    expect(await inFlightCount(store)).toBe(1)
    await facilitator.close()
  })

  it('a settle that finished leaves nothing in the in-flight index', async () => {
    const { store, facilitator } = setup({ reconcile: { intervalMs: 60_000 } })
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2({ amount: '300' })
    const answer = await facilitator.settle({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements })
    expect(answer).toMatchObject({ success: true })
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await inFlightCount(store)).toBe(0)
    await facilitator.close()
  })
})
