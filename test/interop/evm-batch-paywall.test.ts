/**
 * Our paywall's batch-settlement side against the official @x402/evm batch-settlement client, on
 * anvil with our contracts at the canonical addresses and our facilitator in process: deposits then
 * vouchers over several channels, claims by the policy (by hand, by threshold, by itself), the
 * sweep, a refund, a restart that reloads state from SQLite; balances and totals read on chain.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator, type Facilitator } from '../../src/facilitator/facilitator.js'
import { batchSettlementEvm } from '../../src/evm/batch/index.js'
import type { BatchSettlementServerOptions } from '../../src/resource-server/batch/index.js'
import { PAYMENT_HEADERS } from '../../src/resource-server/index.js'
import { createSqliteStore } from '../../src/stores/sqlite/sqlite-store.js'
import { installBatchSettlement, readChannelOnChain } from '../support/batch-settlement-contracts.js'
import { batchShop, payingClient, payVia, SHOP_URL } from '../support/batch-paywall-shop.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { installPermit2 } from '../support/permit2-contracts.js'

const NETWORK = 'eip155:84532'
const PRICE = 1_000n
const authorizer = privateKeyToAccount(generatePrivateKey())

let world: EvmFixture
let facilitator: Facilitator
const dir = mkdtempSync(join(tmpdir(), 'x402-batch-paywall-'))

beforeAll(async () => {
  world = await startEvmFixture()
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  facilitator = createFacilitator({
    schemes: [batchSettlementEvm({ networks: [{ network: NETWORK, rpcUrls: [world.node.rpcUrl] }], signers: world.signers, receiverAuthorizer: authorizer, allowDelegatedRefunds: true })],
  })
}, 120_000)
afterAll(async () => {
  await world?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const shop = (receiver: `0x${string}`, options: Partial<BatchSettlementServerOptions> = {}) => batchShop(world, facilitator, receiver, PRICE, options)
const URL = SHOP_URL
const newReceiver = () => privateKeyToAccount(generatePrivateKey()).address

describe('the official batch-settlement client paying our paywall', () => {
  it('takes a thousand vouchers over ten channels after one deposit each (no transaction per voucher), and one claim covers every channel before one sweep', async () => {
    const receiver = newReceiver()
    const { batch, fetch: target } = shop(receiver)
    const payers: LocalAccount[] = []
    for (let i = 0; i < 10; i++) payers.push(await world.newPayer(1_000_000n))
    await Promise.all(
      payers.map(async (payer) => {
        // Deposits of 200 prices: one per channel for its 101 calls.
        const { pay } = payingClient(payer, target, { depositPolicy: { depositMultiplier: 200 } })
        for (let i = 0; i <= 100; i++) {
          const response = await pay(URL)
          expect(response.status, `call ${i}`).toBe(200)
          const settlement = JSON.parse(atob(response.headers.get(PAYMENT_HEADERS.v2Response)!)) as { transaction: string; extra: { chargedAmount: string; channelState: { chargedCumulativeAmount: string } } }
          expect(settlement.extra.chargedAmount).toBe(PRICE.toString())
          expect(settlement.extra.channelState.chargedCumulativeAmount).toBe((BigInt(i + 1) * PRICE).toString())
          // The first call deposits (a transaction); vouchers move nothing on chain.
          if (i === 0) expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/)
          else expect(settlement.transaction).toBe('')
        }
      }),
    )
    expect(target.seen.every((s) => s === 200)).toBe(true)
    const channels = await batch.store.list()
    expect(channels).toHaveLength(10)
    for (const c of channels) expect(await readChannelOnChain(world.node, c.channelId)).toMatchObject({ balance: 200n * PRICE, totalClaimed: 0n })

    const round = await batch.claim()
    expect(round?.claims).toEqual([{ transaction: expect.stringMatching(/^0x/), channels: 10 }])
    expect(round?.sweeps).toEqual([{ transaction: expect.stringMatching(/^0x/), amount: (1010n * PRICE).toString() }])
    for (const c of channels) expect((await readChannelOnChain(world.node, c.channelId)).totalClaimed).toBe(101n * PRICE)
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(1010n * PRICE)
    for (const payer of payers) expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 200n * PRICE)
    // Nothing left to claim: a second round sends nothing.
    expect(await batch.claim()).toEqual({ claims: [], sweeps: [] })
  }, 180_000)

  it('tops a channel up with a deposit when the client runs out of balance', async () => {
    const { batch, fetch: target } = shop(newReceiver())
    const { pay } = payingClient(await world.newPayer(1_000_000n), target)
    const transactions: string[] = []
    for (let i = 0; i < 8; i++) {
      const response = await pay(URL)
      expect(response.status).toBe(200)
      transactions.push((JSON.parse(atob(response.headers.get(PAYMENT_HEADERS.v2Response)!)) as { transaction: string }).transaction)
    }
    // The client deposits 5 prices at a time (its default): calls 1 and 6 deposit.
    expect(transactions.map((t) => t !== '')).toEqual([true, false, false, false, false, true, false, false])
    const [channel] = await batch.store.list()
    expect(channel).toMatchObject({ charged: 8n * PRICE, balance: 10n * PRICE })
    expect((await readChannelOnChain(world.node, channel!.channelId)).balance).toBe(10n * PRICE)
  }, 120_000)

  it('claims by itself once the unclaimed total reaches the threshold, and not before', async () => {
    const receiver = newReceiver()
    const { batch, fetch: target } = shop(receiver, { claimPolicy: { aboveAmount: 5n * PRICE, checkEveryMs: 100 } })
    try {
      const { pay } = payingClient(await world.newPayer(1_000_000n), target)
      for (let i = 0; i < 4; i++) expect((await pay(URL)).status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 600))
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(0n)
      expect((await pay(URL)).status).toBe(200)
      const deadline = Date.now() + 20_000
      while ((await tokenBalance(world.node, world.token, receiver)) === 0n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200))
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(5n * PRICE)
    } finally {
      await batch.stop()
    }
  }, 120_000)

  it('claims by itself once one channel\'s unclaimed charges reach the per-channel bound', async () => {
    const receiver = newReceiver()
    const { batch, fetch: target } = shop(receiver, { claimPolicy: { aboveAmountPerChannel: 3n * PRICE, checkEveryMs: 100 } })
    try {
      const one = payingClient(await world.newPayer(1_000_000n), target)
      const other = payingClient(await world.newPayer(1_000_000n), target)
      for (let i = 0; i < 2; i++) expect((await one.pay(URL)).status).toBe(200)
      for (let i = 0; i < 2; i++) expect((await other.pay(URL)).status).toBe(200)
      // 4 prices unclaimed in all, 2 per channel: below the bound.
      await new Promise((resolve) => setTimeout(resolve, 600))
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(0n)
      expect((await one.pay(URL)).status).toBe(200)
      const deadline = Date.now() + 20_000
      while ((await tokenBalance(world.node, world.token, receiver)) === 0n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      // The round claims every channel with charges, not only the one at the bound.
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(5n * PRICE)
    } finally {
      await batch.stop()
    }
  }, 120_000)

  it('refunds what is left at the client\'s request, claiming what was charged in the same transaction, and forgets the channel', async () => {
    const receiver = newReceiver()
    const { batch, fetch: target } = shop(receiver)
    const payer = await world.newPayer(1_000_000n)
    const { client, pay } = payingClient(payer, target)
    for (let i = 0; i < 3; i++) expect((await pay(URL)).status).toBe(200)
    const [channel] = await batch.store.list()
    const deposited = 1_000_000n - (await tokenBalance(world.node, world.token, payer.address))
    const refund = await client.refund(URL, { fetch: target as typeof fetch })
    expect(refund).toMatchObject({ success: true, amount: (deposited - 3n * PRICE).toString() })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 3n * PRICE)
    expect((await readChannelOnChain(world.node, channel!.channelId)).totalClaimed).toBe(3n * PRICE)
    expect(await batch.store.get(channel!.channelId)).toBeUndefined()
    // The refund claimed the charges; the policy's next round sweeps them to the receiver.
    expect((await batch.claim())?.sweeps).toEqual([{ transaction: expect.stringMatching(/^0x/), amount: (3n * PRICE).toString() }])
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(3n * PRICE)
  }, 120_000)

  it('refunds part of the balance and keeps serving the channel', async () => {
    const receiver = newReceiver()
    const { batch, fetch: target } = shop(receiver)
    const payer = await world.newPayer(1_000_000n)
    const { client, pay } = payingClient(payer, target)
    for (let i = 0; i < 2; i++) expect((await pay(URL)).status).toBe(200)
    const before = await tokenBalance(world.node, world.token, payer.address)
    expect(await client.refund(URL, { fetch: target as typeof fetch, amount: '500' })).toMatchObject({ success: true, amount: '500' })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(before + 500n)
    const [channel] = await batch.store.list()
    expect(channel).toMatchObject({ charged: 2n * PRICE, totalClaimed: 2n * PRICE, refundNonce: 1n })
    expect((await pay(URL)).status).toBe(200)
    expect((await batch.store.get(channel!.channelId))?.charged).toBe(3n * PRICE)
  }, 120_000)

  it('carries on after a restart with the state it stored in SQLite: no corrective 402, and the claim covers calls of both lives', async () => {
    const receiver = newReceiver()
    const path = join(dir, 'restart.sqlite')
    const payer = await world.newPayer(1_000_000n)
    const first = createSqliteStore({ path })
    const before = shop(receiver, { store: first })
    const { client } = payingClient(payer, before.fetch)
    for (let i = 0; i < 4; i++) expect((await payVia(client, before.fetch)(URL)).status).toBe(200)
    await before.batch.stop()
    await first.close?.()

    const second = createSqliteStore({ path })
    const after = shop(receiver, { store: second })
    for (let i = 0; i < 4; i++) expect((await payVia(client, after.fetch)(URL)).status).toBe(200)
    expect(after.fetch.seen).toEqual([200, 200, 200, 200])
    const round = await after.batch.claim()
    expect(round?.claims[0]?.channels).toBe(1)
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(8n * PRICE)
    await after.batch.stop()
    await second.close?.()
  }, 120_000)

  it('claims every N seconds on a clock it keeps in the store, across a restart', async () => {
    const receiver = newReceiver()
    const path = join(dir, 'policy.sqlite')
    let clock = Date.now()
    const policy = { now: () => clock, claimPolicy: { everySeconds: 60, checkEveryMs: 50 } }
    const settle = () => new Promise((resolve) => setTimeout(resolve, 400))
    const first = createSqliteStore({ path })
    const before = shop(receiver, { store: first, ...policy })
    const { client } = payingClient(await world.newPayer(1_000_000n), before.fetch)
    for (let i = 0; i < 2; i++) expect((await payVia(client, before.fetch)(URL)).status).toBe(200)
    await settle()
    clock += 30_000
    await settle()
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(0n)
    await before.batch.stop()
    await first.close?.()

    const second = createSqliteStore({ path })
    const after = shop(receiver, { store: second, ...policy })
    try {
      await settle()
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(0n)
      // 61 s after the first instance started counting: the restarted one claims.
      clock += 31_000
      const deadline = Date.now() + 20_000
      while ((await tokenBalance(world.node, world.token, receiver)) === 0n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(2n * PRICE)
    } finally {
      await after.batch.stop()
      await second.close?.()
    }
  }, 120_000)

  it('with a receiver authorizer of its own, names it in the offer and signs claims and refunds itself (the facilitator has none)', async () => {
    const own = privateKeyToAccount(generatePrivateKey())
    const plain = createFacilitator({ schemes: [batchSettlementEvm({ networks: [{ network: NETWORK, rpcUrls: [world.node.rpcUrl] }], signers: world.signers })] })
    const receiver = newReceiver()
    const { batch, fetch: target } = batchShop(world, plain, receiver, PRICE, { receiverAuthorizer: own })
    const payer = await world.newPayer(1_000_000n)
    const { client, pay } = payingClient(payer, target)
    for (let i = 0; i < 3; i++) expect((await pay(URL)).status).toBe(200)
    const [channel] = await batch.store.list()
    expect(channel!.config.receiverAuthorizer.toLowerCase()).toBe(own.address.toLowerCase())
    expect((await batch.claim())?.claims).toHaveLength(1)
    expect((await pay(URL)).status).toBe(200)
    expect(await client.refund(URL, { fetch: target as typeof fetch })).toMatchObject({ success: true })
    expect(await readChannelOnChain(world.node, channel!.channelId)).toMatchObject({ balance: 4n * PRICE, totalClaimed: 4n * PRICE })
    expect((await batch.claim())?.sweeps[0]?.amount).toBe(PRICE.toString())
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(4n * PRICE)
  }, 120_000)
})
