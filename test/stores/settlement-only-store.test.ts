import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { exactEvm, signExactEvmPayment } from '../../src/evm/index.js'
import { createCatalog } from '../../src/catalog/index.js'
import { createFacilitator, createMemoryStore, type MemoryStore, type SettlementStore } from '../../src/index.js'
import { createPublicStats } from '../../src/stats/index.js'
import { createStatsRecorder } from '../../src/stats/stats-recorder.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

/** A backend with the settlement role alone: the memory store's settlement methods, nothing else. */
function settlementOnly(backing: MemoryStore): SettlementStore {
  return {
    get: (key) => backing.get(key),
    set: (key, value, options) => backing.set(key, value, options),
    delete: (key) => backing.delete(key),
    incrementFields: (key, increments, options) => backing.incrementFields(key, increments, options),
    readFields: (key) => backing.readFields(key),
    placeHold: (key, id, hold) => backing.placeHold(key, id, hold),
    closeHold: (key, id, options) => backing.closeHold(key, id, options),
  }
}

let world: EvmFixture
beforeAll(async () => {
  world = await startEvmFixture()
})
afterAll(async () => world?.stop())

describe('a settlement-only store', () => {
  it('verifies and settles a payment through createFacilitator, with statistics in a store of their own', async () => {
    const backing = createMemoryStore()
    const store = settlementOnly(backing)
    const stats = createPublicStats({ store: createMemoryStore() })
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())], store, hooks: [stats.hooks] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const body = { x402Version: 2, paymentPayload, paymentRequirements: requirements }

    expect(await facilitator.verify(body)).toEqual({ isValid: true, payer: payer.address })
    const settled = await facilitator.settle(body)
    expect(settled).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'eip155:84532', payer: payer.address })
    expect((await world.node.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })).status).toBe('success')
    // The record went to the settlement-only store: a repeated settle answers from it, and the hold was closed there.
    expect(backing.size().values).toBeGreaterThan(0)
    expect(backing.size().holds).toBe(1)
    expect(await facilitator.settle(body)).toEqual(settled)
    await facilitator.drain()
    expect((await stats.read()).usage.allTime.settlements).toMatchObject({ total: 1, succeeded: 1 })
    // Nothing of the statistics went to the settlement store.
    expect(backing.size()).toMatchObject({ texts: 0, sketches: 0, rankings: 0 })
    await facilitator.close()
  })

  it('is refused, naming what it lacks, by statistics and the catalog; a non-store is refused by createFacilitator', () => {
    const store = settlementOnly(createMemoryStore())
    // @ts-expect-error statistics need the statistics role
    expect(() => createPublicStats({ store })).toThrow(expect.objectContaining({ code: 'misconfigured', message: expect.stringMatching(/^createPublicStats: `store` has no setTextFields, readTextFields, addDistinct, countDistinct, incrementRanked, readRanked, countRanked; it must be a StatsStore/) }))
    // @ts-expect-error the stats recorder too
    expect(() => createStatsRecorder({ store })).toThrow(/^createStatsRecorder: `store` has no setTextFields/)
    // @ts-expect-error the catalog too
    expect(() => createCatalog({ store })).toThrow(/^createCatalog: `store` has no setTextFields/)
    const { placeHold: _, ...noHolds } = store
    // @ts-expect-error settling needs holds
    expect(() => createFacilitator({ schemes: [], store: noHolds })).toThrow(expect.objectContaining({ code: 'misconfigured', message: 'createFacilitator: `store` has no placeHold; it must be a SettlementStore' }))
    expect(() => createFacilitator({ schemes: [], store: {} as SettlementStore })).toThrow('createFacilitator: `store` is not a store')
  })
})
