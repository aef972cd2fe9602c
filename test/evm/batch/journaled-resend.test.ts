/**
 * A batch-settlement transaction journaled by a process whose send never reached the node, then a
 * new process on the same store and key (evmSchemes with batchSettlement), on anvil: the new
 * process's first nonce read (an exact settle's) re-sends the journaled deposit at its nonce before
 * handing out the next one, and the deposit's retried settle answers that transaction, as for every
 * EVM settle.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createFacilitator } from '../../../src/facilitator/facilitator.js'
import { signExactEvmPayment } from '../../../src/evm/exact/sign-payment.js'
import { createMemoryStore } from '../../../src/stores/memory-store.js'
import { batchChannel, batchRequest, batchRequirements, channelOnChain, depositPayload, evmSchemesThrough, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import type { EvmFixture } from '../../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js'

let world: EvmFixture
/** Loses the transactions sent through it (HTTP 502, never forwarded) while told to. */
let proxy: FaultProxy
const to = newBatchReceiver()

beforeAll(async () => {
  world = await startBatchWorld({ signerCount: 1 })
  proxy = await startFaultProxy(world.node.rpcUrl)
}, 120_000)
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})

const wrap = (payload: unknown) => batchRequest(batchRequirements(world, to), payload)

describe('a journaled batch-settlement transaction after a restart', () => {
  it('is re-sent at its nonce by the next process before that nonce goes to an exact settle, and its retried settle answers it', async () => {
    const store = createMemoryStore()
    const facilitatorOn = () => {
      return createFacilitator({ store, settlement: { leaseMs: 1_000 }, schemes: evmSchemesThrough(world, proxy.url, to.authorizer, { receiptTimeoutMs: 10_000, rebroadcastIntervalMs: 0 }) })
    }
    const payer = await world.newPayer(1_000_000n)
    const { config, id } = batchChannel(world, to, payer.address)
    const deposit = wrap(await depositPayload(world, payer, config, 10_000n))
    const signer = world.signers[0]!.address
    const nonce = await world.node.publicClient.getTransactionCount({ address: signer })

    // The first process journals the deposit, and its sends never reach the node.
    const first = facilitatorOn()
    proxy.setModeFor(['eth_sendRawTransaction'], { kind: 'error', status: 502 })
    let lost
    try {
      lost = await first.settle(deposit)
    } finally {
      proxy.setMode({ kind: 'pass' })
    }
    // Journaled, then unanswered: the transaction is named, its outcome unknown.
    expect(lost).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
    expect(await world.node.publicClient.getTransactionCount({ address: signer, blockTag: 'pending' })).toBe(nonce)

    // A new process on the same store: its first settle of the key (an exact payment) re-sends the deposit first.
    const second = facilitatorOn()
    const exactRequirements = world.requirementsV2()
    const exact = await second.settle({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: await world.newPayer(), requirements: exactRequirements }), paymentRequirements: exactRequirements })
    expect(exact).toMatchObject({ success: true })
    expect((await world.node.publicClient.getTransaction({ hash: exact.transaction as Hex })).nonce).toBe(nonce + 1)
    expect((await world.node.publicClient.getTransaction({ hash: lost.transaction as Hex })).nonce).toBe(nonce)
    expect(await channelOnChain(world, id)).toEqual([10_000n, 0n])

    // The deposit's retry answers the journaled transaction: nothing is sent again.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const retried = await second.settle(deposit)
    expect(retried).toMatchObject({ success: true, amount: '10000', transaction: lost.transaction })
    expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonce + 2)
  }, 60_000)
})
