/**
 * The channel state batchSettlementEvm verifies EOA vouchers against, kept in the facilitator's
 * settlement store, on anvil with JSON-RPC requests counted: two facilitators on one store (two
 * instances), a deposit settled by one lets the other verify vouchers with no request at all; once
 * the state is older than its TTL a verify takes exactly one request (the channel read); a claim
 * settled by one instance drops the state for the other, which then refuses a voucher below the new
 * claimed total.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { createMemoryStore } from '../../../src/stores/memory-store.js'
import { signVoucher } from '../../support/batch-settlement-signing.js'
import { batchChannel, batchRequest, batchRequirements, batchScheme, depositPayload, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import type { EvmFixture } from '../../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js'

let world: EvmFixture
/** Counts the JSON-RPC calls that reach the node (a batch counts each of its calls). */
let proxy: FaultProxy
let rpc: string
let first: Facilitator
let second: Facilitator
const to = newBatchReceiver()
const { authorizer } = to
const TTL_MS = 1_500

beforeAll(async () => {
  world = await startBatchWorld()
  proxy = await startFaultProxy(world.node.rpcUrl)
  rpc = proxy.url
  const store = createMemoryStore()
  const adapter = () => batchScheme(world, rpc, { receiverAuthorizer: authorizer, confirmTimeoutMs: 20_000, channelStateTtlMs: TTL_MS })
  first = createFacilitator({ store, schemes: [adapter()] })
  second = createFacilitator({ store, schemes: [adapter()] })
}, 120_000)
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})

const wrap = (payload: unknown) => batchRequest(batchRequirements(world, to), payload)

/** JSON-RPC calls `work` made. */
async function counted(work: () => Promise<unknown>): Promise<number> {
  const before = proxy.methods.length
  await work()
  return proxy.methods.length - before
}

describe('batch-settlement channel state in the settlement store', () => {
  it('verifies EOA vouchers on another instance with no request while the state is fresh, with one after its TTL, and drops it for every instance on a claim', async () => {
    const payer = await world.newPayer(1_000_000n)
    const { config, id } = batchChannel(world, to, payer.address)
    const voucher = async (ceiling: bigint) => wrap({ type: 'voucher', channelConfig: config, voucher: { channelId: id, maxClaimableAmount: ceiling.toString(), signature: await signVoucher(payer, 84532, id, ceiling) } })
    const deposit = wrap(await depositPayload(world, payer, config, 10_000n))
    expect(await first.settle(deposit)).toMatchObject({ success: true, extra: { channelState: { balance: '10000' } } })

    // The other instance: the state the deposit's settle stored, no request.
    const bodies = await Promise.all([2000n, 3000n, 4000n].map(voucher))
    for (const body of bodies) {
      let answer
      expect(await counted(async () => (answer = await second.verify(body)))).toBe(0)
      expect(answer).toMatchObject({ isValid: true, extra: { balance: '10000', totalClaimed: '0' } })
    }

    // Older than the TTL: one request (the channel read in one eth_call), then none again.
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 100))
    expect(await counted(() => second.verify(bodies[0]!))).toBe(1)
    expect(await counted(() => second.verify(bodies[1]!))).toBe(0)

    // A claim settled by the first instance drops the stored state: the second reads the chain and refuses 3000 < 3000 + price.
    const claim = wrap({ type: 'claim', claims: [{ voucher: { channel: config, maxClaimableAmount: '3000' }, signature: await signVoucher(payer, 84532, id, 3000n), totalClaimed: '3000' }] })
    expect(await first.settle(claim)).toMatchObject({ success: true })
    let refused
    expect(await counted(async () => (refused = await second.verify(bodies[1]!)))).toBe(1)
    expect(refused).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_cumulative_below_claimed' })
    expect(await second.verify(bodies[2]!)).toMatchObject({ isValid: true, extra: { totalClaimed: '3000' } })
  }, 60_000)

  it('refuses no voucher for a store fault: a failing store reads the chain', async () => {
    const broken = {
      ...createMemoryStore(),
      get: () => Promise.reject(new Error('store down')),
      set: () => Promise.reject(new Error('store down')),
      delete: () => Promise.reject(new Error('store down')),
    }
    const payer = await world.newPayer(1_000_000n)
    const { config, id } = batchChannel(world, to, payer.address)
    const deposit = wrap(await depositPayload(world, payer, config, 10_000n))
    expect(await first.settle(deposit)).toMatchObject({ success: true })
    const lone = createFacilitator({ store: broken as never, schemes: [batchScheme(world, rpc, { receiverAuthorizer: authorizer })] })
    const body = wrap({ type: 'voucher', channelConfig: config, voucher: { channelId: id as Hex, maxClaimableAmount: '2000', signature: await signVoucher(payer, 84532, id, 2000n) } })
    let answer
    expect(await counted(async () => (answer = await lone.verify(body)))).toBe(1)
    expect(answer).toMatchObject({ isValid: true, extra: { balance: '10000' } })
  })
})
