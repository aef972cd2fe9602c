/**
 * The rebroadcast while settle waits for a receipt, on a real anvil: a
 * transaction the node does not know gets its own signed bytes again, and
 * bytes that are not the awaited hash's are never sent.
 */
import { keccak256, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { awaitReceipt } from '../../src/evm/chain/await-receipt.js'
import { createNetworkRuntime } from '../../src/evm/chain/network-runtime.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

let world: EvmFixture
beforeAll(async () => {
  world = await startEvmFixture()
})
afterAll(async () => world?.stop())

const runtimeOf = () => {
  const config = world.adapterConfig()
  return createNetworkRuntime(config.networks[0]!, config)
}

/** A signed 1-wei transfer between two funded development accounts, not sent. */
async function signedTransfer(): Promise<Hex> {
  const from = world.node.accounts[5]!
  const nonce = await world.node.publicClient.getTransactionCount({ address: from.address, blockTag: 'pending' })
  return from.signTransaction({
    chainId: world.node.chainId,
    type: 'eip1559',
    to: world.node.accounts[6]!.address,
    value: 1n,
    gas: 21_000n,
    nonce,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 1n,
  })
}

describe('awaitReceipt', () => {
  it('offers the signed bytes again while the node does not know the transaction, and the receipt comes', async () => {
    const raw = await signedTransfer()
    // Never sent before: to the node this is a lost transaction.
    const outcome = await awaitReceipt(runtimeOf(), keccak256(raw), raw, { timeoutMs: 5_000, maxIntervalMs: 100, signal: AbortSignal.timeout(10_000) }, 100)
    expect(outcome.status).toBe('success')
  })

  it('never sends bytes that are not the awaited hash\'s: they would be another transaction', async () => {
    const raw = await signedTransfer()
    const awaited = keccak256('0x01')
    const outcome = await awaitReceipt(runtimeOf(), awaited, raw, { timeoutMs: 600, maxIntervalMs: 100, signal: AbortSignal.timeout(5_000) }, 100)
    expect(outcome.status).toBe('pending')
    expect(await world.node.publicClient.getTransaction({ hash: keccak256(raw) }).catch(() => undefined)).toBeUndefined()
  })

  it('with the rebroadcast off, a lost transaction stays lost (the wait ends pending)', async () => {
    const raw = await signedTransfer()
    const outcome = await awaitReceipt(runtimeOf(), keccak256(raw), raw, { timeoutMs: 500, maxIntervalMs: 100, signal: AbortSignal.timeout(5_000) }, 0)
    expect(outcome.status).toBe('pending')
  })
})
