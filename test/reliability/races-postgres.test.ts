/**
 * Races on a real chain with two facilitator instances sharing one real
 * PostgreSQL database: many callers settling the same payment through both, and
 * the ledger they share. Every answer travels over real HTTP.
 */
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/core/facilitator.js'
import { exactEvm } from '../../src/evm/exact-evm.js'
import { signExactEvmPayment } from '../../src/evm/sign-payment.js'
import { createLedgerRecorder } from '../../src/ledger/ledger-recorder.js'
import { createPostgresStore, type PostgresStore } from '../../src/stores/postgres/postgres-store.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startPostgresServer, type PostgresServer } from '../support/postgres-server.js'
import { authorizationsIn, authorizationsUsed, body, nonceSum, postJson, serve } from './support.js'

let world: EvmFixture
let postgres: PostgresServer
const stores: PostgresStore[] = []
const closers: (() => Promise<void>)[] = []

beforeAll(async () => {
  ;[world, postgres] = await Promise.all([startEvmFixture({ signerCount: 4 }), startPostgresServer()])
})
afterAll(async () => {
  await Promise.all(closers.map((close) => close()))
  await Promise.all(stores.map((store) => store.close()))
  await Promise.all([world?.stop(), postgres?.stop()])
})

/** A facilitator instance with its own adapter, pool and ledger recorder on the shared database, served over HTTP. */
async function instance(schema: string) {
  const store = createPostgresStore({ connectionString: postgres.url, schema })
  stores.push(store)
  const facilitator = createFacilitator({
    schemes: [exactEvm(world.adapterConfig())],
    store,
    hooks: [createLedgerRecorder({ ledger: store.ledger })],
    timeouts: { settleMs: 30_000 },
  })
  const server = await serve(facilitator)
  closers.push(server.close)
  return { ...server, facilitator, store }
}

describe('races on PostgreSQL', () => {
  it('50 concurrent settles of one payment across two instances sharing PostgreSQL: one transfer, every caller gets its hash', async () => {
    // Both start on a new database at once: one migrates, the other waits for it.
    const [a, b] = await Promise.all([instance('race1'), instance('race1')])
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2({ amount: '1000' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
    const signerAddresses = world.signers.map((s) => s.address)
    const noncesBefore = await nonceSum(world, signerAddresses)
    const payToBefore = await tokenBalance(world.node, world.token, world.payTo)

    const started = performance.now()
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => postJson(`${(i % 2 === 0 ? a : b).url}/settle`, body(paymentPayload, requirements))),
    )
    const elapsed = performance.now() - started

    expect(answers.map((x) => x.status)).toEqual(Array(50).fill(200))
    const hashes = new Set(answers.map((x) => x.json.transaction))
    // One success (the call that saw it confirmed); the other 49 are told duplicate_settlement with that hash.
    expect(answers.filter((x) => x.json.success === true)).toHaveLength(1)
    expect(answers.filter((x) => x.json.success !== true).map((x) => x.json.errorReason)).toEqual(Array(49).fill('duplicate_settlement'))
    expect(hashes.size).toBe(1)
    const [hash] = [...hashes] as Hex[]
    // Exactly one transfer on chain: one authorization used, one signer transaction, one amount moved.
    expect(await authorizationsUsed(world, payer.address, fromBlock)).toHaveLength(1)
    expect(await authorizationsIn(world, hash!)).toHaveLength(1)
    expect(await nonceSum(world, signerAddresses)).toBe(noncesBefore + 1)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 1000n)

    // One ledger row for the payment, whichever instance reads it: the 49 duplicate answers are not rows.
    await Promise.all([a.facilitator.drain(), b.facilitator.drain()])
    const [fromA, fromB] = await Promise.all([a.store.ledger.read(), b.store.ledger.read()])
    expect(fromA.entries.map((e) => [e.status, e.transaction, e.payer])).toEqual([['settled', hash, payer.address.toLowerCase()]])
    expect(fromB).toEqual(fromA)
    console.info(`[races-postgres] 50 duplicate settles over 2 instances: 50/50 answered ${hash} (1 success, 49 duplicate_settlement), 1 transfer on chain, 1 ledger row, ${elapsed.toFixed(0)} ms`)
  })
})
