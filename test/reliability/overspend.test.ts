/**
 * Overspend races on real chains: eight distinct payments from one payer, each
 * for its whole balance, settled at once. Every one verifies against the same
 * state; only one can land. The facilitator must send that one and refuse the
 * other seven before sending anything (the chain would revert them at our cost).
 * EVM runs over two instances sharing a real Redis, so the holds are shared
 * through the store; Solana runs on LiteSVM.
 */
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createRedisStore } from '../../src/stores/redis-store.js'
import type { Store } from '../../src/stores/store.js'
import { exactSvm } from '../../src/svm/index.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'
import { createPaymentScenario, lamportsOf, scenarioPaymentBody, startSolanaTestRpc, tokenBalance as splBalance } from '../support/svm-fixtures.js'
import { body, nonceSum, postJson, serve } from './support.js'

let world: EvmFixture
let redis: RedisServer
let chain: LiteSvmRpc
const stores: Store[] = []
const closers: (() => Promise<void>)[] = []

beforeAll(async () => {
  ;[world, redis, chain] = await Promise.all([startEvmFixture({ signerCount: 4 }), startRedisServer(), startSolanaTestRpc()])
})
afterAll(async () => {
  await Promise.all(closers.map((close) => close()))
  await Promise.all(stores.map((store) => store.close?.()))
  await Promise.all([world?.stop(), redis?.stop(), chain?.close()])
})

async function evmInstance(prefix: string) {
  const store = createRedisStore({ url: redis.url, keyPrefix: prefix })
  stores.push(store)
  const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())], store, timeouts: { settleMs: 30_000 } })
  const server = await serve(facilitator)
  closers.push(server.close)
  return server
}

describe('overspend races', () => {
  it('EVM: eight payments of one payer for its whole balance over two instances: one lands, seven refused unsent', async () => {
    const [a, b] = await Promise.all([evmInstance('overspend1:'), evmInstance('overspend1:')])
    const payer = await world.newPayer(660_000n)
    const requirements = world.requirementsV2({ amount: '660000' })
    const payments = await Promise.all(Array.from({ length: 8 }, () => signExactEvmPayment({ signer: payer, requirements })))
    const signerAddresses = world.signers.map((s) => s.address)
    const noncesBefore = await nonceSum(world, signerAddresses)
    const ethBefore = await Promise.all(signerAddresses.map((address) => world.node.publicClient.getBalance({ address })))

    const answers = await Promise.all(payments.map((p, i) => postJson(`${(i % 2 === 0 ? a : b).url}/settle`, body(p, requirements))))

    expect(answers.map((x) => x.status)).toEqual(Array(8).fill(200))
    const landed = answers.filter((x) => x.json.success === true)
    expect(landed).toHaveLength(1)
    const refused = answers.filter((x) => x.json.success !== true)
    expect(refused.map((x) => x.json.errorReason)).toEqual(Array(7).fill('insufficient_funds'))
    expect(refused.every((x) => x.json.transaction === '')).toBe(true)
    // One transaction sent in all, and it landed: no signer paid for a revert.
    expect(await nonceSum(world, signerAddresses)).toBe(noncesBefore + 1)
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: landed[0]!.json.transaction as `0x${string}` })
    expect(receipt.status).toBe('success')
    const ethAfter = await Promise.all(signerAddresses.map((address) => world.node.publicClient.getBalance({ address })))
    const spent = ethBefore.reduce((sum, before, i) => sum + before - ethAfter[i]!, 0n)
    expect(spent).toBe(receipt.gasUsed * receipt.effectiveGasPrice)
    expect(await tokenBalance(world.node, world.token, payer.address as Address)).toBe(0n)
  })

  it('EVM: twenty payments of one payer that its balance covers all settle at once', async () => {
    const server = await evmInstance('overspend2:')
    const payer = await world.newPayer(20_000n)
    const requirements = world.requirementsV2({ amount: '1000' })
    const payments = await Promise.all(Array.from({ length: 20 }, () => signExactEvmPayment({ signer: payer, requirements })))
    const answers = await Promise.all(payments.map((p) => postJson(`${server.url}/settle`, body(p, requirements))))
    expect(answers.filter((x) => x.json.success !== true).map((x) => x.text)).toEqual([])
    expect(answers.filter((x) => x.json.success === true)).toHaveLength(20)
    expect(await tokenBalance(world.node, world.token, payer.address as Address)).toBe(0n)
  })

  it('Solana: eight payments from one source account for its whole balance: one lands, seven refused unsent, no fee spent on them', async () => {
    const s = await createPaymentScenario(chain.svm, { balance: 660_000n })
    const facilitator = createFacilitator({
      schemes: [exactSvm({ networks: [{ network: 'solana-devnet', rpcUrl: chain.url }], feePayers: [s.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 5_000 })],
    })
    const bodies = await Promise.all(Array.from({ length: 8 }, () => scenarioPaymentBody(chain.url, s, 660_000n)))
    const lamportsBefore = lamportsOf(chain.svm, s.feePayer.address)
    chain.resetStats()

    const answers = await Promise.all(bodies.map((b) => facilitator.settle(b)))

    const landed = answers.filter((x) => x.success)
    expect(landed).toHaveLength(1)
    const refused = answers.filter((x) => !x.success)
    expect(refused.map((x) => x.errorReason)).toEqual(Array(7).fill('insufficient_funds'))
    expect(refused.every((x) => x.transaction === '')).toBe(true)
    // One transaction offered to the chain, and its fee is all the fee payer spent.
    expect(chain.stats.calls.sendTransaction).toBe(1)
    const fee = lamportsBefore - lamportsOf(chain.svm, s.feePayer.address)
    expect(fee).toBeGreaterThan(0n)
    expect(fee).toBeLessThanOrEqual(10_000n + 100_000n)
    expect(splBalance(chain.svm, s.payerAta)).toBe(0n)
    expect(splBalance(chain.svm, s.payToAta)).toBe(660_000n)
  })
})
