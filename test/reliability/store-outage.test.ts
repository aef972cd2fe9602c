/**
 * A Redis store that goes away in the middle of traffic: a real redis-server
 * killed by pid and restarted on the same port, or paused with SIGSTOP and
 * resumed with SIGCONT, under a facilitator settling real EIP-3009 payments
 * on anvil over HTTP. Verify and settle must answer within their budgets with
 * clear codes (never a 500 with a stack), send nothing they could not record,
 * keep the transaction id of anything already sent, and work again once Redis
 * is back. Statistics and catalog hooks failing meanwhile never change an answer.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { connect } from 'node:net'
import { Redis } from 'ioredis'
import type { Hex, LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCatalog } from '../../src/catalog/catalog.js'
import { createFacilitator, type Facilitator, type FacilitatorConfig } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { decodeSettlementRecord } from '../../src/settlement/settlement-record.js'
import { createPublicStats } from '../../src/stats/public-stats.js'
import { createRedisStore } from '../../src/stores/redis-store.js'
import type { Store } from '../../src/stores/store.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { authorizationsUsed, body, deadPort, postJson, serve, type Posted } from './support.js'

const VERIFY_MS = 2_000
const SETTLE_MS = 3_000
/** Scheduling slack on a loaded 2-core machine. */
const SLACK_MS = 400
const NO_STACK = /\n\s+at |Error:|ioredis|ECONNREFUSED/

/** A redis-server on a fixed loopback port that the test can kill, restart, pause and resume. */
interface ControlledRedis {
  readonly url: string
  readonly pid: number
  kill(): Promise<void>
  restart(): Promise<void>
  pause(): void
  resume(): void
  stop(): Promise<void>
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const timer = setTimeout(() => {
      socket.destroy()
      resolve(false)
    }, 200)
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(data.toString().startsWith('+PONG'))
    })
    socket.once('error', () => {
      clearTimeout(timer)
      resolve(false)
    })
  })
}

async function startControlledRedis(): Promise<ControlledRedis> {
  const port = await deadPort()
  let child: ChildProcess | undefined
  const launch = async () => {
    const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    child = started
    const until = Date.now() + 5_000
    while (Date.now() < until) {
      if (started.exitCode !== null) throw new Error(`redis-server exited with ${started.exitCode}`)
      if (await answersPing(port)) return
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    throw new Error('redis-server did not start')
  }
  const kill = async () => {
    const running = child
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    process.kill(running.pid!, 'SIGKILL')
    await exited
  }
  await launch()
  return {
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child!.pid!
    },
    kill,
    restart: launch,
    pause: () => process.kill(child!.pid!, 'SIGSTOP'),
    resume: () => process.kill(child!.pid!, 'SIGCONT'),
    async stop() {
      if (child && child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGCONT')
      await kill()
    },
  }
}

let world: EvmFixture
let redis: ControlledRedis
let admin: Redis
const figures: string[] = []
const cleanups: (() => Promise<unknown> | unknown)[] = []

beforeAll(async () => {
  ;[world, redis] = await Promise.all([startEvmFixture({ signerCount: 1 }), startControlledRedis()])
  admin = new Redis(redis.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 100 })
  admin.on('error', () => undefined)
})
afterAll(async () => {
  console.info(`[store-outage]\n${figures.join('\n')}`)
  for (const cleanup of cleanups.reverse()) await cleanup()
  admin?.disconnect()
  await world?.node.testClient.setAutomine(true).catch(() => undefined)
  await Promise.all([world?.stop(), redis?.stop()])
})

interface Harness {
  facilitator: Facilitator
  store: Store
  url: string
  hookErrors: string[]
}

/** A facilitator with statistics and catalog hooks on `store`, served over HTTP. */
async function harness(store: Store, settlement?: FacilitatorConfig['settlement'], rpcUrl?: string): Promise<Harness> {
  const hookErrors: string[] = []
  const stats = createPublicStats({ store })
  const catalog = createCatalog({ store })
  const facilitator = createFacilitator({
    schemes: [exactEvm(world.adapterConfig(rpcUrl ? { networks: [{ network: 'eip155:84532', rpcUrls: [rpcUrl] }] } : {}))],
    store,
    hooks: [stats.hooks, catalog.hooks],
    timeouts: { verifyMs: VERIFY_MS, settleMs: SETTLE_MS },
    ...(settlement ? { settlement } : {}),
    onError: (_error, where) => hookErrors.push(where),
  })
  const server = await serve(facilitator)
  cleanups.push(() => server.close(), () => facilitator.drain(), () => store.close?.())
  return { facilitator, store, url: server.url, hookErrors }
}

async function payment(amount = '1000') {
  const payer = await world.newPayer(1_000_000n)
  const requirements = world.requirementsV2({ amount })
  const paymentPayload = await signExactEvmPayment({
    signer: payer as LocalAccount,
    requirements,
    resource: { url: 'https://api.example.com/weather', description: 'Weather', mimeType: 'application/json' },
  })
  return { payer, request: body(paymentPayload, requirements) }
}

const signerNonce = () => world.node.publicClient.getTransactionCount({ address: world.signers[0]!.address })

/** Asserts a clean 503 store_unavailable answer: SPEC's error body, no stack, no store internals. */
function expectStoreFault(answer: Posted) {
  expect(answer.status).toBe(503)
  expect(answer.json).toMatchObject({ code: 'store_unavailable' })
  expect(typeof answer.json.error).toBe('string')
  expect(answer.text).not.toMatch(NO_STACK)
  expect(answer.headers.get('retry-after')).toBe('1')
}

/** Resolves once the store answers again (the client reconnects on its own), with the time it took. */
async function untilStoreAnswers(store: Store, timeoutMs: number): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < timeoutMs) {
    if (await store.get('probe').then(() => true, () => false)) return performance.now() - started
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('the store did not come back')
}

/**
 * The settlement records under a prefix, none while the admin connection is down: after an earlier
 * test killed and restarted Redis it reconnects on its own (every 100 ms), and a poll meanwhile retries.
 */
async function settlementRecords(prefix: string) {
  try {
    const keys = await admin.keys(`${prefix}settlement:*`)
    return await Promise.all(keys.map(async (key) => decodeSettlementRecord((await admin.get(key)) ?? undefined)))
  } catch {
    return []
  }
}

/** Polls Redis until the payment is claimed (state `claimed`), bounded. */
async function waitForClaim(prefix: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    for (const record of await settlementRecords(prefix)) if (record?.state === 'claimed') return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error('no claim appeared')
}

async function waitForBroadcastRecord(prefix: string, timeoutMs: number): Promise<string> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    for (const record of await settlementRecords(prefix)) if (record?.state === 'broadcast') return record.transaction
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('no broadcast record appeared')
}

describe('Redis store outage during verify and settle', () => {
  it('killed: verify still answers, settle answers 503 store_unavailable at once and sends nothing; after a restart the same payment settles', async () => {
    const h = await harness(createRedisStore({ url: redis.url, keyPrefix: 'kill:', onConnectionError: () => undefined }))
    const warm = await payment()
    expect((await postJson(`${h.url}/settle`, warm.request)).json).toMatchObject({ success: true })

    const { payer, request } = await payment()
    const fromBlock = await world.node.publicClient.getBlockNumber()
    const nonceBefore = await signerNonce()
    await redis.kill()

    // Verify needs no store: it answers; its statistics hook fails aside, into onError.
    const verified = await postJson(`${h.url}/verify`, request)
    expect(verified.status).toBe(200)
    expect(verified.json).toMatchObject({ isValid: true, payer: payer.address })
    expect(verified.ms).toBeLessThan(VERIFY_MS)

    const settled = await postJson(`${h.url}/settle`, request)
    expectStoreFault(settled)
    expect(settled.ms).toBeLessThan(SETTLE_MS)
    // A settle it could not record sent nothing.
    expect(await signerNonce()).toBe(nonceBefore)
    expect(await authorizationsUsed(world, payer.address, fromBlock)).toHaveLength(0)
    await h.facilitator.drain()
    expect(h.hookErrors).toContain('afterVerify')
    expect(h.hookErrors).toContain('afterSettle')
    figures.push(`Redis killed: verify 200 isValid in ${verified.ms.toFixed(0)} ms; settle 503 store_unavailable in ${settled.ms.toFixed(0)} ms (budget ${SETTLE_MS} ms), nothing sent`)

    await redis.restart()
    const back = await untilStoreAnswers(h.store, 5_000)
    const retried = await postJson(`${h.url}/settle`, request)
    expect(retried.status).toBe(200)
    expect(retried.json).toMatchObject({ success: true, payer: payer.address })
    expect(await authorizationsUsed(world, payer.address, fromBlock)).toHaveLength(1)
    figures.push(`Redis restarted: store answering again after ${back.toFixed(0)} ms; the same payment then settled in ${retried.ms.toFixed(0)} ms`)
  })

  it('paused (SIGSTOP), store defaults: settle answers 503 store_unavailable after the 1 s command timeout; after SIGCONT the next settle works', async () => {
    const h = await harness(createRedisStore({ url: redis.url, keyPrefix: 'pause:', onConnectionError: () => undefined }))
    await untilStoreAnswers(h.store, 5_000)
    const { payer, request } = await payment()
    const nonceBefore = await signerNonce()
    redis.pause()
    let settled: Posted
    let verified: Posted
    try {
      ;[verified, settled] = await Promise.all([postJson(`${h.url}/verify`, request), postJson(`${h.url}/settle`, request)])
    } finally {
      redis.resume()
    }
    expect(verified.json).toMatchObject({ isValid: true })
    expectStoreFault(settled)
    expect(settled.ms).toBeLessThan(SETTLE_MS)
    expect(await signerNonce()).toBe(nonceBefore)
    figures.push(`Redis paused, store defaults: verify 200 in ${verified.ms.toFixed(0)} ms; settle 503 store_unavailable in ${settled.ms.toFixed(0)} ms (command timeout 1 s)`)

    const next = await payment()
    const after = await postJson(`${h.url}/settle`, next.request)
    expect(after.json).toMatchObject({ success: true, payer: next.payer.address })
    figures.push(`after SIGCONT: next settle success in ${after.ms.toFixed(0)} ms`)
    expect(payer.address).not.toBe(next.payer.address)
  })

  it('paused (SIGSTOP), a client of yours with ioredis defaults (offline queue, no command timeout): the settle still answers within its budget', async () => {
    const client = new Redis(redis.url)
    client.on('error', () => undefined)
    cleanups.push(() => client.quit().catch(() => client.disconnect()))
    const h = await harness(createRedisStore({ client, keyPrefix: 'paused-own:' }))
    await untilStoreAnswers(h.store, 5_000)
    const { request } = await payment()
    const nonceBefore = await signerNonce()
    redis.pause()
    let settled: Posted
    try {
      settled = await postJson(`${h.url}/settle`, request)
    } finally {
      redis.resume()
    }
    expectStoreFault(settled)
    expect(settled.ms).toBeLessThan(SETTLE_MS + SLACK_MS)
    expect(await signerNonce()).toBe(nonceBefore)
    figures.push(`Redis paused, ioredis defaults: settle 503 store_unavailable in ${settled.ms.toFixed(0)} ms (bounded by the ${SETTLE_MS} ms budget)`)

    const next = await payment()
    expect((await postJson(`${h.url}/settle`, next.request)).json).toMatchObject({ success: true })
  })

  it('killed between the claim and the journal write: 503 store_unavailable, the signed transaction is never sent', async () => {
    // The chain reads between claim and journal (nonce, fees) are slowed so the kill lands in that window.
    const proxy = await startFaultProxy(world.node.rpcUrl)
    cleanups.push(() => proxy.close())
    const prefix = 'journal:'
    const h = await harness(createRedisStore({ url: redis.url, keyPrefix: prefix, onConnectionError: () => undefined }), undefined, proxy.url)
    await untilStoreAnswers(h.store, 5_000)
    const { payer, request } = await payment()
    const fromBlock = await world.node.publicClient.getBlockNumber()
    const nonceBefore = await signerNonce()
    proxy.setModeFor(['eth_getTransactionCount', 'eth_gasPrice', 'eth_maxPriorityFeePerGas', 'eth_feeHistory', 'eth_getBlockByNumber'], { kind: 'delay', ms: 400 })
    const inFlight = postJson(`${h.url}/settle`, request)
    await waitForClaim(prefix, 2_000)
    await redis.kill()
    const settled = await inFlight
    expectStoreFault(settled)
    expect(settled.ms).toBeLessThan(SETTLE_MS)
    expect(proxy.methods).not.toContain('eth_sendRawTransaction')
    expect(await signerNonce()).toBe(nonceBefore)
    expect(await authorizationsUsed(world, payer.address, fromBlock)).toHaveLength(0)
    figures.push(`Redis killed between claim and journal: settle 503 store_unavailable in ${settled.ms.toFixed(0)} ms, nothing sent`)

    await redis.restart()
    await untilStoreAnswers(h.store, 5_000)
    proxy.setMode({ kind: 'pass' })
    const retried = await postJson(`${h.url}/settle`, request)
    expect(retried.json).toMatchObject({ success: true, payer: payer.address })
  })

  it.each(['killed', 'paused'] as const)('%s after broadcast: the settle answers success with its transaction id, and hook failures do not change it', async (mode) => {
    const prefix = `after-${mode}:`
    const h = await harness(createRedisStore({ url: redis.url, keyPrefix: prefix, onConnectionError: () => undefined }))
    await untilStoreAnswers(h.store, 5_000)
    const { payer, request } = await payment()
    await world.node.testClient.setAutomine(false)
    let settled: Posted
    let transaction: string
    try {
      const inFlight = postJson(`${h.url}/settle`, request)
      // Awaited below; heard now, so that a failure before then is this test's, not an uncaught one.
      inFlight.catch(() => undefined)
      transaction = await waitForBroadcastRecord(prefix, 2_000)
      // Let the transaction reach the node's pool before the store goes away.
      const until = Date.now() + 1_000
      while (Date.now() < until && !(await world.node.publicClient.getTransaction({ hash: transaction as Hex }).catch(() => undefined))) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      if (mode === 'killed') await redis.kill()
      else redis.pause()
      await world.node.testClient.mine({ blocks: 1 })
      settled = await inFlight
    } finally {
      await world.node.testClient.setAutomine(true)
      if (mode === 'paused') redis.resume()
    }
    expect(settled.status).toBe(200)
    expect(settled.json).toMatchObject({ success: true, transaction, payer: payer.address })
    expect(settled.ms).toBeLessThan(SETTLE_MS + SLACK_MS)
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: transaction as Hex })
    expect(receipt.status).toBe('success')
    await h.facilitator.drain()
    if (mode === 'killed') expect(h.hookErrors).toContain('afterSettle')
    figures.push(`Redis ${mode} after broadcast: settle 200 success with its transaction in ${settled.ms.toFixed(0)} ms`)
    if (mode === 'killed') {
      // The outcome write was lost with the server (no persistence here); the transaction was still answered.
      await redis.restart()
      await untilStoreAnswers(h.store, 5_000)
    } else {
      // The outcome write was on the wire when Redis paused: it lands on SIGCONT, so a repeat answers the same
      // transaction with the same outcome.
      await untilStoreAnswers(h.store, 5_000)
      const repeated = await postJson(`${h.url}/settle`, request)
      expect(repeated.json).toMatchObject({ success: true, transaction })
    }
  })
})
