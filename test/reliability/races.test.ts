/**
 * Races on a real chain: many callers settling the same payment through two
 * facilitator instances that share a real Redis, and 200 distinct payments
 * settled at once over several signers. Every answer travels over real HTTP.
 * The race of one payment is shared with the PostgreSQL file (races-scenario.ts).
 */
import type { Address, LocalAccount } from 'viem'
import { describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createRedisStore } from '../../src/stores/redis-store.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startRedisServer } from '../support/redis-server.js'
import { settleOnePaymentFromFiftyCallers, useRaceWorld } from './races-scenario.js'
import { body, postJson } from './support.js'

const race = useRaceWorld(startRedisServer)

/** A facilitator instance with its own adapter and Redis connection, served over HTTP. */
async function instance(prefix: string, signers = race.world().signers) {
  const store = createRedisStore({ url: race.server().url, keyPrefix: prefix })
  const facilitator = createFacilitator({ schemes: [exactEvm(race.world().adapterConfig({ signers }))], store, timeouts: { settleMs: 30_000 } })
  return race.serve(facilitator, store)
}

describe('races', () => {
  it('50 concurrent settles of one payment across two instances sharing Redis: one transfer, every caller gets its hash', async () => {
    const [a, b] = await Promise.all([instance('race1:'), instance('race1:')])
    const { hash, elapsed } = await settleOnePaymentFromFiftyCallers(race.world(), a, b)
    console.info(`[races] 50 duplicate settles over 2 instances: 50/50 answered ${hash} (1 success, 49 duplicate_settlement), 1 transfer on chain, ${elapsed.toFixed(0)} ms`)
  })

  it('200 concurrent settles of distinct payments over 4 signers: all land, no nonce error', async () => {
    const world = race.world()
    const server = await instance('race2:')
    // Funded one after the other: the deployer's own transactions need consecutive nonces.
    const payers: LocalAccount[] = []
    for (let i = 0; i < 10; i++) payers.push(await world.newPayer(100_000n))
    const requirements = world.requirementsV2({ amount: '10' })
    const payments = await Promise.all(
      Array.from({ length: 200 }, (_, i) => signExactEvmPayment({ signer: payers[i % payers.length]!, requirements })),
    )
    const signerAddresses = world.signers.map((s) => s.address)
    const before = await Promise.all(signerAddresses.map((address) => world.node.publicClient.getTransactionCount({ address })))
    const payToBefore = await tokenBalance(world.node, world.token, world.payTo)

    const started = performance.now()
    const answers = await Promise.all(payments.map((p) => postJson(`${server.url}/settle`, body(p, requirements))))
    const elapsed = performance.now() - started

    // On a loaded CI machine a few may pass the settle budget: they answer settlement_pending with their
    // hash, and settling again (what a client does) must confirm that very transaction.
    const pendingIndexes = answers.flatMap((x, i) => (x.json.errorReason === 'settlement_pending' ? [i] : []))
    for (const i of pendingIndexes) {
      const again = await postJson(`${server.url}/settle`, body(payments[i]!, requirements))
      expect(again.json).toMatchObject({ success: true, transaction: answers[i]!.json.transaction })
      answers[i] = again
    }
    const failures = answers.filter((x) => x.status !== 200 || x.json.success !== true).map((x) => `${x.status} ${x.text}`)
    expect(failures).toEqual([])
    expect(answers.some((x) => /nonce/i.test(x.text))).toBe(false)
    expect(new Set(answers.map((x) => x.json.transaction)).size).toBe(200)
    const after = await Promise.all(signerAddresses.map((address) => world.node.publicClient.getTransactionCount({ address })))
    const perSigner = after.map((count, i) => count - before[i]!)
    expect(perSigner.reduce((x, y) => x + y, 0)).toBe(200)
    // The load is spread: every signer took a share.
    for (const share of perSigner) expect(share).toBeGreaterThan(0)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 2000n)
    for (const payer of payers) expect(await tokenBalance(world.node, world.token, payer.address as Address)).toBe(100_000n - 200n)
    console.info(
      `[races] 200 distinct settles over 4 signers: 200/200 success (${pendingIndexes.length} answered pending within the budget, confirmed on retry), per signer ${perSigner.join('/')}, ${elapsed.toFixed(0)} ms (${((200 * 1000) / elapsed).toFixed(0)} settles/s)`,
    )
  })
})
