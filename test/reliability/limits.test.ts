/**
 * The in-flight bound per signer, through HTTP: when every signer that could
 * pay for a settlement is at `maxInFlightSettlesPerSigner`, the answer is a
 * 503 `signer_busy` with Retry-After, nothing is claimed or sent, and the same
 * payment settles once a slot frees up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { exactSvm } from '../../src/svm/exact/exact-svm.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, type PaymentScenario, scenarioPaymentBody, startSolanaTestRpc, tokenBalance } from '../support/svm-fixtures.js'
import { authorizationsUsed, body, postJson, serve } from './support.js'

/** Polls `probe` until it holds (bounded). */
async function until(probe: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await probe())) {
    if (Date.now() > end) throw new Error('condition not reached in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('maxInFlightSettlesPerSigner on EVM', () => {
  let world: EvmFixture
  beforeAll(async () => {
    world = await startEvmFixture({ signerCount: 2 })
  })
  afterAll(async () => {
    await world?.node.testClient.setAutomine(true).catch(() => undefined)
    await world?.stop()
  })

  it('answers 503 signer_busy with Retry-After when both signers are busy, claims nothing, and settles on retry', async () => {
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ maxInFlightSettlesPerSigner: 1, receiptTimeoutMs: 8_000, receiptPollIntervalMs: 50 }))],
      timeouts: { settleMs: 10_000 },
    })
    const server = await serve(facilitator)
    try {
      const requirements = world.requirementsV2()
      const payers = [await world.newPayer(), await world.newPayer(), await world.newPayer()]
      const [p1, p2, p3] = await Promise.all(payers.map((payer) => signExactEvmPayment({ signer: payer, requirements })))
      const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
      const signers = world.signers.map((s) => s.address)
      const pendingCount = () => Promise.all(signers.map((address) => world.node.publicClient.getTransactionCount({ address, blockTag: 'pending' })))
      const before = await pendingCount()

      // Two settles that stall after broadcast hold both signers.
      await world.node.testClient.setAutomine(false)
      const busy = [postJson(`${server.url}/settle`, body(p1!, requirements)), postJson(`${server.url}/settle`, body(p2!, requirements))]
      await until(async () => (await pendingCount()).every((count, i) => count === before[i]! + 1))

      const refused = await postJson(`${server.url}/settle`, body(p3!, requirements))
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(refused.json).toMatchObject({ code: 'signer_busy' })
      expect(refused.ms).toBeLessThan(500)
      // Nothing claimed, nothing sent for the refused payment.
      const authorization = (p3!.payload as { authorization: { from: string; nonce: string } }).authorization
      const key = `settlement:exact:84532:${world.token.address.toLowerCase()}:${authorization.from.toLowerCase()}:${authorization.nonce.toLowerCase()}`
      expect(await facilitator.store.get(key)).toBeUndefined()
      expect(await pendingCount()).toEqual(before.map((count) => count + 1))

      await world.node.testClient.mine({ blocks: 1 })
      await world.node.testClient.setAutomine(true)
      const settled = await Promise.all(busy)
      expect(settled.map((answer) => answer.json.success)).toEqual([true, true])

      const retried = await postJson(`${server.url}/settle`, body(p3!, requirements))
      expect(retried.status).toBe(200)
      expect(retried.json).toMatchObject({ success: true, payer: payers[2]!.address })
      expect(await authorizationsUsed(world, payers[2]!.address, fromBlock)).toHaveLength(1)
      console.info(`[limits] evm: third settle with 2 signers at bound 1 -> ${refused.status} ${refused.json.code} in ${refused.ms.toFixed(0)} ms; retry after the block -> 200 success`)
    } finally {
      await server.close()
    }
  })

  it('refuses a bound below 1', () => {
    expect(() => exactEvm(world.adapterConfig({ maxInFlightSettlesPerSigner: 0 }))).toThrow(/maxInFlightSettlesPerSigner/)
  })

  it('refuses an RPC timeout no timer can hold (it would fire at once) or none at all', () => {
    for (const rpcTimeoutMs of [0, -1, 2 ** 31, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => exactEvm(world.adapterConfig({ rpcTimeoutMs })), String(rpcTimeoutMs)).toThrow(/rpcTimeoutMs must be above 0 and at most 2147483647/)
    }
    expect(() => exactEvm(world.adapterConfig({ rpcTimeoutMs: 2 ** 31 - 1 }))).not.toThrow()
  })

  it('settles with the longest RPC timeout over several URLs: no bound derived from it outgrows a timer', async () => {
    const f = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [world.node.rpcUrl, world.node.rpcUrl] }], rpcTimeoutMs: 2 ** 31 - 1, receiptPollIntervalMs: 50 }))],
    })
    const requirements = world.requirementsV2()
    const payments = []
    // Funded one after the other: the deployer's own transactions need consecutive nonces.
    for (let i = 0; i < 2; i++) payments.push(body(await signExactEvmPayment({ signer: await world.newPayer(), requirements }), requirements))
    const answers = await Promise.all(payments.map((payment) => f.settle(payment)))
    expect(answers.map((answer) => answer.errorReason ?? 'success')).toEqual(['success', 'success'])
  })
})

describe('maxInFlightSettlesPerSigner on Solana', () => {
  let chain: LiteSvmRpc
  let s: PaymentScenario
  beforeAll(async () => {
    chain = await startSolanaTestRpc()
    s = await createPaymentScenario(chain.svm)
  })
  afterAll(async () => {
    chain.hold = false
    await chain?.close()
  })

  const payment = (amount: bigint) => scenarioPaymentBody(chain.url, s, amount)

  it('refuses an RPC timeout no timer can hold (it would fire at once) or none at all', () => {
    for (const rpcTimeoutMs of [0, -1, 2 ** 31, Number.POSITIVE_INFINITY]) {
      expect(() => exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], rpcTimeoutMs }), String(rpcTimeoutMs)).toThrow(/timeout must be above 0 and at most 2147483647/)
    }
  })

  it('answers 503 signer_busy while the fee payer is at its bound, then settles the same payment', async () => {
    const facilitator = createFacilitator({
      schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], maxInFlightSettlesPerSigner: 1, pollIntervalMs: 10, confirmTimeoutMs: 8_000 })],
      timeouts: { settleMs: 10_000 },
    })
    const server = await serve(facilitator)
    try {
      const before = tokenBalance(chain.svm, s.payToAta)
      chain.resetStats()
      chain.hold = true
      const first = postJson(`${server.url}/settle`, await payment(11n))
      await until(() => (chain.stats.calls.sendTransaction ?? 0) >= 1)

      const request = await payment(13n)
      const refused = await postJson(`${server.url}/settle`, request)
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(refused.json).toMatchObject({ code: 'signer_busy' })
      expect(chain.stats.calls.sendTransaction).toBe(1)

      chain.hold = false
      chain.release()
      expect((await first).json).toMatchObject({ success: true })
      const retried = await postJson(`${server.url}/settle`, request)
      expect(retried.json).toMatchObject({ success: true })
      expect(tokenBalance(chain.svm, s.payToAta)).toBe(before + 24n)
      console.info(`[limits] svm: second settle with the fee payer at bound 1 -> ${refused.status} ${refused.json.code} in ${refused.ms.toFixed(0)} ms; retry -> 200 success`)
    } finally {
      await server.close()
    }
  })
})
