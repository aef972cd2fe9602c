/**
 * Our paywall's batch-settlement side under hostile and concurrent input, on anvil with the
 * official client: forged, replayed and short vouchers refused with their codes and nothing charged
 * twice; two paywall instances on one Redis store serializing one channel; a client that lost its
 * state recovering through the corrective 402; a payer's timed withdrawal answered by a claim at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toClientEvmSigner } from '@x402/evm'
import { encodeFunctionData } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator, type Facilitator } from '../../src/facilitator/facilitator.js'
import { batchSettlementEvm } from '../../src/evm/batch/index.js'
import { batchSettlementAbi } from '../../src/evm/batch/abi.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../src/evm/batch/constants.js'
import { PAYMENT_HEADERS } from '../../src/resource-server/index.js'
import { createRedisStore } from '../../src/stores/redis-store.js'
import { batchShop, challengeOf, payingClient, payVia, SHOP_URL, tamper } from '../support/batch-paywall-shop.js'
import { installBatchSettlement, readChannelOnChain } from '../support/batch-settlement-contracts.js'
import { signVoucher } from '../support/batch-settlement-signing.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { installPermit2 } from '../support/permit2-contracts.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'

const PRICE = 1_000n
const CHAIN_ID = 84532
const authorizer = privateKeyToAccount(generatePrivateKey())
const R = 'invalid_batch_settlement_evm_'

let world: EvmFixture
let facilitator: Facilitator
let redis: RedisServer
let run = 0

beforeAll(async () => {
  ;[world, redis] = await Promise.all([startEvmFixture(), startRedisServer()])
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  facilitator = createFacilitator({
    schemes: [batchSettlementEvm({ networks: [{ network: 'eip155:84532', rpcUrls: [world.node.rpcUrl] }], signers: world.signers, receiverAuthorizer: authorizer, allowDelegatedRefunds: true })],
  })
}, 120_000)
afterAll(async () => {
  await redis?.stop()
  await world?.stop()
})

const newReceiver = () => privateKeyToAccount(generatePrivateKey()).address
const send = (target: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>, header: string) => target(SHOP_URL, { headers: { [PAYMENT_HEADERS.v2Payment]: header } })

describe('hostile vouchers', () => {
  it('refuses a replayed voucher, one below what is charged, a forged one (checked locally and by the facilitator) and a config that is not its channel, charging nothing twice', async () => {
    const receiver = newReceiver()
    const shop = batchShop(world, facilitator, receiver, PRICE)
    const payer = await world.newPayer(1_000_000n)
    const { pay } = payingClient(payer, shop.fetch)
    for (let i = 0; i < 2; i++) expect((await pay(SHOP_URL)).status).toBe(200)
    const [channel] = await shop.batch.store.list()
    const id = channel!.channelId
    const last = shop.fetch.headers.at(-1)!
    const worked = shop.fetch.worked()

    // The same voucher again: corrective 402 with the channel's state and the last signed voucher.
    const replay = await send(shop.fetch, last)
    expect(replay.status).toBe(402)
    const corrective = challengeOf(replay)
    expect(corrective.error).toBe(`${R}cumulative_amount_mismatch`)
    expect(corrective.accepts[0]!.extra.channelState).toMatchObject({ channelId: id, chargedCumulativeAmount: '2000' })
    expect(corrective.accepts[0]!.extra.voucherState).toEqual({ signedMaxClaimable: '2000', signature: channel!.signature })

    // Signed by the payer, but for what is already charged (no increment).
    const short = tamper(last, (p) => Object.assign(p.voucher, { maxClaimableAmount: '2000' }))
    expect(challengeOf(await send(shop.fetch, short)).error).toBe(`${R}cumulative_amount_mismatch`)
    const shortSigned = await signVoucher(payer, CHAIN_ID, id, 1000n)
    expect(challengeOf(await send(shop.fetch, tamper(last, (p) => Object.assign(p.voucher, { maxClaimableAmount: '1000', signature: shortSigned })))).error).toBe(`${R}cumulative_amount_mismatch`)

    // The right amount signed by someone else: refused locally (fresh state) and by the facilitator (stale).
    const forged = tamper(last, (p) => Object.assign(p.voucher, { maxClaimableAmount: '3000' }))
    const mallory = privateKeyToAccount(generatePrivateKey())
    const malloryVoucher = tamper(last, (p) => Object.assign(p.voucher, { maxClaimableAmount: '3000' }))
    const signed = await signVoucher(mallory, CHAIN_ID, id, 3000n)
    const byMallory = tamper(malloryVoucher, (p) => Object.assign(p.voucher, { signature: signed }))
    expect(challengeOf(await send(shop.fetch, forged)).error).toBe(`${R}voucher_signature`)
    expect(challengeOf(await send(shop.fetch, byMallory)).error).toBe(`${R}voucher_signature`)
    const stale = batchShop(world, facilitator, receiver, PRICE, { store: shop.batch.store, freshMs: 0 })
    expect(challengeOf(await send(stale.fetch, byMallory)).error).toBe(`${R}voucher_signature`)

    // A config that does not hash to the channel it names.
    const otherSalt = tamper(last, (p) => Object.assign(p.channelConfig, { salt: `0x${'11'.repeat(32)}` }))
    expect(challengeOf(await send(shop.fetch, otherSalt)).error).toBe(`${R}channel_id_mismatch`)

    expect(shop.fetch.worked() + stale.fetch.worked()).toBe(worked)
    expect((await shop.batch.store.get(id))?.charged).toBe(2n * PRICE)
    // The honest client carries on from the server's state.
    expect((await pay(SHOP_URL)).status).toBe(200)
    expect((await shop.batch.store.get(id))?.charged).toBe(3n * PRICE)
    await shop.batch.claim()
    expect((await readChannelOnChain(world.node, id)).totalClaimed).toBe(3n * PRICE)
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(3n * PRICE)
  }, 120_000)

  it('refuses a voucher above the channel\'s balance (the client must top up), charging nothing', async () => {
    const shop = batchShop(world, facilitator, newReceiver(), PRICE)
    const payer = await world.newPayer(1_000_000n)
    const { pay } = payingClient(payer, shop.fetch)
    // The client's default deposit is 5 prices: five calls use it up.
    for (let i = 0; i < 5; i++) expect((await pay(SHOP_URL)).status).toBe(200)
    const [channel] = await shop.batch.store.list()
    expect(channel).toMatchObject({ charged: 5n * PRICE, balance: 5n * PRICE })
    const signature = await signVoucher(payer, CHAIN_ID, channel!.channelId, 6n * PRICE)
    const beyond = tamper(shop.fetch.headers.at(-1)!, (p) => Object.assign(p.voucher, { maxClaimableAmount: (6n * PRICE).toString(), signature }))
    const worked = shop.fetch.worked()
    expect(challengeOf(await send(shop.fetch, beyond)).error).toBe(`${R}cumulative_exceeds_balance`)
    expect(shop.fetch.worked()).toBe(worked)
    expect((await shop.batch.store.get(channel!.channelId))?.charged).toBe(5n * PRICE)
  }, 120_000)

  it('lets a client that lost its channel state recover through the corrective 402 and pay on', async () => {
    const shop = batchShop(world, facilitator, newReceiver(), PRICE)
    const payer = await world.newPayer(1_000_000n)
    const first = payingClient(payer, shop.fetch)
    for (let i = 0; i < 3; i++) expect((await first.pay(SHOP_URL)).status).toBe(200)
    const [channel] = await shop.batch.store.list()
    expect(channel!.charged).toBe(3n * PRICE)
    // A second client of the same payer (no local state) that reads the chain, as after a restart.
    const reader = toClientEvmSigner(payer, world.node.publicClient as never)
    const { pay } = payingClient(reader, shop.fetch)
    const before = shop.fetch.seen.length
    expect((await pay(SHOP_URL)).status).toBe(200)
    const statuses = shop.fetch.seen.slice(before)
    expect(statuses.at(-1)).toBe(200)
    expect((await shop.batch.store.get(channel!.channelId))?.charged).toBe(4n * PRICE)
  }, 120_000)
})

describe('a claim the contract refuses for one channel', () => {
  it('claims the other channels (halving the batch), sweeps them, and reports the one refused', async () => {
    const receiver = newReceiver()
    const shop = batchShop(world, facilitator, receiver, PRICE)
    const payers = [await world.newPayer(1_000_000n), await world.newPayer(1_000_000n), await world.newPayer(1_000_000n)]
    for (const payer of payers) {
      const { pay } = payingClient(payer, shop.fetch)
      for (let i = 0; i < 2; i++) expect((await pay(SHOP_URL)).status).toBe(200)
    }
    // A stored voucher the contract will refuse (as a corrupted or forged state would hold).
    const [bad, ...good] = await shop.batch.store.list()
    await shop.batch.store.put({ ...bad!, signature: await signVoucher(privateKeyToAccount(generatePrivateKey()), CHAIN_ID, bad!.channelId, bad!.signedMaxClaimable) })
    await expect(shop.batch.claim()).rejects.toThrow(new RegExp(`claims refused for 1 channel\\(s\\), the others claimed: ${bad!.channelId}`))
    for (const c of good) expect((await readChannelOnChain(world.node, c.channelId)).totalClaimed).toBe(2n * PRICE)
    expect((await readChannelOnChain(world.node, bad!.channelId)).totalClaimed).toBe(0n)
    expect(await tokenBalance(world.node, world.token, receiver)).toBe(4n * PRICE)
  }, 120_000)
})

describe('two paywall instances on one Redis store', () => {
  it('serve one channel in turn and let exactly one of many concurrent copies of a voucher through', async () => {
    const receiver = newReceiver()
    const prefix = `batch${++run}:`
    const a = batchShop(world, facilitator, receiver, PRICE, { store: createRedisStore({ url: redis.url, keyPrefix: prefix }) })
    const b = batchShop(world, facilitator, receiver, PRICE, { store: createRedisStore({ url: redis.url, keyPrefix: prefix }) })
    const payer = await world.newPayer(1_000_000n)
    const { client } = payingClient(payer, a.fetch)
    for (let i = 0; i < 6; i++) expect((await payVia(client, i % 2 === 0 ? a.fetch : b.fetch)(SHOP_URL)).status).toBe(200)
    expect([...a.fetch.seen, ...b.fetch.seen].every((s) => s === 200)).toBe(true)
    const [channel] = await b.batch.store.list()
    expect(channel!.charged).toBe(6n * PRICE)

    // The client's next voucher, sent 16 times at once to both instances.
    const next = await signVoucher(payer, CHAIN_ID, channel!.channelId, 7n * PRICE)
    const header = tamper(a.fetch.headers.at(-1)!, (p) => Object.assign(p, { type: 'voucher', deposit: undefined }, { voucher: { channelId: channel!.channelId, maxClaimableAmount: (7n * PRICE).toString(), signature: next } }))
    const workedBefore = a.fetch.worked() + b.fetch.worked()
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => send(i % 2 === 0 ? a.fetch : b.fetch, header)))
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1)
    for (const refused of answers.filter((r) => r.status !== 200)) {
      expect(refused.status).toBe(402)
      expect([`${R}channel_busy`, `${R}cumulative_amount_mismatch`]).toContain(challengeOf(refused).error)
    }
    expect(a.fetch.worked() + b.fetch.worked()).toBe(workedBefore + 1)
    expect((await a.batch.store.get(channel!.channelId))?.charged).toBe(7n * PRICE)

    // One instance claims; the other then finds nothing to claim.
    expect((await a.batch.claim())?.claims).toHaveLength(1)
    expect((await b.batch.claim())?.claims).toEqual([])
    expect((await readChannelOnChain(world.node, channel!.channelId)).totalClaimed).toBe(7n * PRICE)
  }, 120_000)
})

describe('a timed withdrawal', () => {
  it('is answered by a claim at once by the running policy, so finalizing it returns only what was not charged', async () => {
    const receiver = newReceiver()
    // freshMs 0: every voucher goes through the facilitator, which reads the pending withdrawal.
    const shop = batchShop(world, facilitator, receiver, PRICE, { freshMs: 0, claimPolicy: { everySeconds: 600, checkEveryMs: 100 }, onError: (error) => errors.push(error) })
    const errors: unknown[] = []
    try {
      const payer = await world.newPayer(1_000_000n)
      const { client, pay } = payingClient(payer, shop.fetch)
      for (let i = 0; i < 3; i++) expect((await pay(SHOP_URL)).status).toBe(200)
      const [channel] = await shop.batch.store.list()
      const id = channel!.channelId
      await world.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
      const config = { ...channel!.config } as never
      const initiate = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'initiateWithdraw', args: [config, 2_000n] })
      const hash = await world.node.walletClient(payer).sendTransaction({ account: payer, chain: world.node.chain, to: BATCH_SETTLEMENT_ADDRESS, data: initiate })
      expect((await world.node.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
      // The facilitator reads a channel again once its last read is 2 s old.
      await new Promise((resolve) => setTimeout(resolve, 2_100))
      expect((await payVia(client, shop.fetch)(SHOP_URL)).status).toBe(200)
      expect((await shop.batch.store.get(id))?.withdrawRequestedAt).toBeGreaterThan(0)
      const deadline = Date.now() + 20_000
      while ((await readChannelOnChain(world.node, id)).totalClaimed < 4n * PRICE && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      expect((await readChannelOnChain(world.node, id)).totalClaimed).toBe(4n * PRICE)
      // The same round sweeps once its claim is confirmed.
      while ((await tokenBalance(world.node, world.token, receiver)) < 4n * PRICE && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(errors).toEqual([])
      await world.node.testClient.increaseTime({ seconds: 901 })
      await world.node.testClient.mine({ blocks: 1 })
      const finalize = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'finalizeWithdraw', args: [config] })
      const done = await world.node.walletClient(payer).sendTransaction({ account: payer, chain: world.node.chain, to: BATCH_SETTLEMENT_ADDRESS, data: finalize })
      expect((await world.node.publicClient.waitForTransactionReceipt({ hash: done })).status).toBe('success')
      expect(await tokenBalance(world.node, world.token, receiver)).toBe(4n * PRICE)
    } finally {
      await shop.batch.stop()
    }
  }, 120_000)
})
