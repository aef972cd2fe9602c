/**
 * Races on a real chain with two facilitator instances sharing one real
 * PostgreSQL database: many callers settling the same payment through both, and
 * the ledger they share. Every answer travels over real HTTP. The race itself
 * is shared with the Redis file (races-scenario.ts); the ledger checks are this file's.
 */
import { describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { createLedgerRecorder } from '../../src/ledger/ledger-recorder.js'
import { createPostgresStore } from '../../src/stores/postgres/postgres-store.js'
import { startPostgresServer } from '../support/postgres-server.js'
import { settleOnePaymentFromFiftyCallers, useRaceWorld } from './races-scenario.js'

const race = useRaceWorld(startPostgresServer)

/** A facilitator instance with its own adapter, pool and ledger recorder on the shared database, served over HTTP. */
async function instance(schema: string) {
  const store = createPostgresStore({ connectionString: race.server().url, schema })
  const facilitator = createFacilitator({
    schemes: [exactEvm(race.world().adapterConfig())],
    store,
    hooks: [createLedgerRecorder({ ledger: store.ledger })],
    timeouts: { settleMs: 30_000 },
  })
  const server = await race.serve(facilitator, store)
  return { ...server, facilitator, store }
}

describe('races on PostgreSQL', () => {
  it('50 concurrent settles of one payment across two instances sharing PostgreSQL: one transfer, every caller gets its hash', async () => {
    // Both start on a new database at once: one migrates, the other waits for it.
    const [a, b] = await Promise.all([instance('race1'), instance('race1')])
    const { hash, payer, elapsed } = await settleOnePaymentFromFiftyCallers(race.world(), a, b)

    // One ledger row for the payment, whichever instance reads it: the 49 answers from the record append it again, skipped.
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    const [fromA, fromB] = await Promise.all([a.store.ledger.read(), b.store.ledger.read()])
    expect(fromA.entries.map((e) => [e.status, e.transaction, e.payer])).toEqual([['settled', hash, payer.address.toLowerCase()]])
    // The settling call's own row, with what its transaction cost: the waiters' rows from the record came later, and were skipped.
    expect(fromA.entries[0]!.cost).toMatch(/^[1-9]\d*$/)
    expect(fromB).toEqual(fromA)
    console.info(`[races-postgres] 50 duplicate settles over 2 instances: 50/50 answered ${hash} (1 success, 49 duplicate_settlement), 1 transfer on chain, 1 ledger row, ${elapsed.toFixed(0)} ms`)
  })
})
