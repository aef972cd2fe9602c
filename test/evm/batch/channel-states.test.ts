/**
 * The channel state batchSettlementEvm verifies EOA vouchers against, kept in the facilitator's
 * settlement store, on anvil with JSON-RPC requests counted: two facilitators on one store (two
 * instances), a deposit settled by one lets the other verify vouchers with no request at all; once
 * the state is older than its TTL a verify takes exactly one request (the channel read); a claim
 * settled by one instance drops the state for the other, which then refuses a voucher below the new
 * claimed total.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { batchSettlementEvm } from '../../../src/evm/batch/index.js'
import { channelId } from '../../../src/evm/batch/codec.js'
import { createMemoryStore } from '../../../src/stores/memory-store.js'
import { installBatchSettlement } from '../../support/batch-settlement-contracts.js'
import { channelConfig, erc3009DepositAuthorization, signVoucher } from '../../support/batch-settlement-signing.js'
import { startEvmFixture, type EvmFixture } from '../../support/evm-fixture.js'
import { installPermit2 } from '../../support/permit2-contracts.js'

let world: EvmFixture
let proxy: Server
let rpc: string
/** JSON-RPC calls that reached the node through the proxy (a batch counts each of its calls). */
let calls = 0
let first: Facilitator
let second: Facilitator
const authorizer = privateKeyToAccount(generatePrivateKey())
const receiver = privateKeyToAccount(generatePrivateKey()).address
const TTL_MS = 1_500

async function countingProxy(upstream: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString()
      const parsed = JSON.parse(body) as unknown
      calls += Array.isArray(parsed) ? parsed.length : 1
      const answer = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text())
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

beforeAll(async () => {
  world = await startEvmFixture()
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  proxy = await countingProxy(world.node.rpcUrl)
  rpc = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  const store = createMemoryStore()
  const adapter = () => batchSettlementEvm({ networks: [{ network: 'eip155:84532', rpcUrls: [rpc] }], signers: world.signers, receiverAuthorizer: authorizer, confirmTimeoutMs: 20_000, channelStateTtlMs: TTL_MS })
  first = createFacilitator({ store, schemes: [adapter()] })
  second = createFacilitator({ store, schemes: [adapter()] })
}, 120_000)
afterAll(async () => {
  proxy?.close()
  await world?.stop()
})

const requirements = () => ({
  scheme: 'batch-settlement',
  network: 'eip155:84532' as const,
  amount: '1000',
  asset: world.token.address,
  payTo: receiver,
  maxTimeoutSeconds: 3600,
  extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: world.token.name, version: world.token.version },
})
const wrap = (payload: unknown) => ({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements(), payload }, paymentRequirements: requirements() })

/** JSON-RPC calls `work` made. */
async function counted(work: () => Promise<unknown>): Promise<number> {
  const before = calls
  await work()
  return calls - before
}

describe('batch-settlement channel state in the settlement store', () => {
  it('verifies EOA vouchers on another instance with no request while the state is fresh, with one after its TTL, and drops it for every instance on a claim', async () => {
    const payer = await world.newPayer(1_000_000n)
    const config = channelConfig({ payer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: world.token.address, salt: generatePrivateKey() })
    const id = channelId(config, 84532)
    const voucher = async (ceiling: bigint) => wrap({ type: 'voucher', channelConfig: config, voucher: { channelId: id, maxClaimableAmount: ceiling.toString(), signature: await signVoucher(payer, 84532, id, ceiling) } })
    const deposit = wrap({
      type: 'deposit',
      channelConfig: config,
      voucher: { channelId: id, maxClaimableAmount: '1000', signature: await signVoucher(payer, 84532, id, 1000n) },
      deposit: { amount: '10000', authorization: { erc3009Authorization: await erc3009DepositAuthorization(payer, world.token, 84532, config, 10_000n) } },
    })
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
    const config = channelConfig({ payer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: world.token.address, salt: generatePrivateKey() })
    const id = channelId(config, 84532)
    const deposit = wrap({
      type: 'deposit',
      channelConfig: config,
      voucher: { channelId: id, maxClaimableAmount: '1000', signature: await signVoucher(payer, 84532, id, 1000n) },
      deposit: { amount: '10000', authorization: { erc3009Authorization: await erc3009DepositAuthorization(payer, world.token, 84532, config, 10_000n) } },
    })
    expect(await first.settle(deposit)).toMatchObject({ success: true })
    const lone = createFacilitator({ store: broken as never, schemes: [batchSettlementEvm({ networks: [{ network: 'eip155:84532', rpcUrls: [rpc] }], signers: world.signers, receiverAuthorizer: authorizer })] })
    const body = wrap({ type: 'voucher', channelConfig: config, voucher: { channelId: id as Hex, maxClaimableAmount: '2000', signature: await signVoucher(payer, 84532, id, 2000n) } })
    let answer
    expect(await counted(async () => (answer = await lone.verify(body)))).toBe(1)
    expect(answer).toMatchObject({ isValid: true, extra: { balance: '10000' } })
  })
})
