/**
 * EVM batch-settlement, resource server and facilitator together: our paywall
 * (`createBatchSettlementServer` + `createPaywall`) over our `batchSettlementEvm` against the
 * official @x402/express middleware with the official batch-settlement server scheme over the
 * official batch-settlement facilitator (`x402Facilitator`, in process), on the same anvil with our
 * contracts at the canonical addresses. Both are served over loopback HTTP and paid by the official
 * client (@x402/fetch + the batch-settlement client); both keep channel state in memory.
 *
 * Measured per side: vouchers per second with `channels` clients paying at once (each one request
 * at a time, as a channel allows), with the official client signing each (its 402 round trip
 * included) and with vouchers signed ahead (the server and facilitator alone); anvil RPC requests
 * per voucher; and the gas of the whole life (deposits, one claim of every channel, one sweep) per payment.
 */
import express from 'express'
import { x402Facilitator } from '@x402/core/facilitator'
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server'
import { x402Client } from '@x402/core/client'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware } from '@x402/express'
import { BatchSettlementEvmScheme as BatchClient } from '@x402/evm/batch-settlement/client'
import { BatchSettlementEvmScheme as OfficialBatchFacilitator } from '@x402/evm/batch-settlement/facilitator'
import { BatchSettlementEvmScheme as OfficialBatchServer } from '@x402/evm/batch-settlement/server'
import diagnostics from 'node:diagnostics_channel'
import type { Hex, LocalAccount } from 'viem'
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { createNonceManager, jsonRpc } from 'viem/nonce'
import { createFacilitator } from '../src/index.js'
import { exactEvm, privateKeySigner, signExactEvmPayment } from '../src/evm/index.js'
import { batchSettlementEvm } from '../src/evm/batch/index.js'
import { createNodeListener } from '../src/http/node-listener.js'
import { createBatchSettlementServer } from '../src/resource-server/batch/index.js'
import { createNodePaywall, createPaywall } from '../src/resource-server/index.js'
import { RPC_REQUEST_CHANNEL } from '../src/transport/keep-alive-post.js'
import { ANVIL_MNEMONIC } from '../test/support/anvil.js'
import { installBatchSettlement } from '../test/support/batch-settlement-contracts.js'
import { signVoucher } from '../test/support/batch-settlement-signing.js'
import { tokenBalance } from '../test/support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../test/support/evm-fixture.js'
import { listen, type LoopbackServer } from '../test/support/listen.js'
import { installPermit2 } from '../test/support/permit2-contracts.js'
import { ANVIL_KEY } from './evm.js'
import { officialEvmSigner } from '../test/support/official-evm-signer.js'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { BatchLoadResult, BatchLoadRound } from './batch-load.js'
import { check, ownCpuMs, percentile, processCpuMs, progress, row, type Row } from './measure.js'

export const BATCH_COUNTS = {
  /** Rounds of each side, alternating which goes first, on fresh channels; the table gives medians. */
  rounds: 3,
  /** Channels (payers) paying at once. */
  channels: 10,
  /** Paid calls per channel in the timed run (after one untimed deposit call each). */
  vouchersPerChannel: 50,
  /** Untimed calls per side before the timed run, on a channel of their own (V8 compiles the hot code). */
  warmup: 100,
  /** Then untimed vouchers signed ahead on that channel, through the load generator (the timed path). */
  warmupPresigned: 300,
  /** Pre-signed vouchers per channel sent without the client (the server and facilitator alone). */
  presigned: 100,
}

const NETWORK = 'eip155:84532'
const PRICE = 1_000n

export interface Side {
  /** ours: createPaywall (web Request/Response); node: createNodePaywall; theirs: the official middleware. */
  readonly name: 'ours' | 'node' | 'theirs'
  readonly url: string
  readonly receiver: Hex
  /** anvil RPC requests so far. */
  readonly requests: () => number
  /** Claims every channel and sweeps; answers the transactions sent. */
  claimAndSweep(): Promise<Hex[]>
  close(): Promise<void>
}

export async function benchEvmBatch(): Promise<Row[]> {
  const world = await startEvmFixture({ signerCount: 3 })
  try {
    await installPermit2(world.node)
    await installBatchSettlement(world.node)
    const ours = await ourSide(world)
    const node = await ourSide(world, 'node')
    const theirs = await theirSide(world)
    const load = await startBatchLoad()
    type Run = Awaited<ReturnType<typeof runSide>>
    const runs: Record<Side['name'], Run[]> = { ours: [], node: [], theirs: [] }
    for (let round = 0; round < BATCH_COUNTS.rounds; round++) {
      // Each round in another order, so no side always runs first (or last).
      const order = [[ours, node, theirs], [theirs, ours, node], [node, theirs, ours]][round % 3]!
      for (const side of order) runs[side.name].push(await runSide(world, side, load, round === 0))
    }
    load.close()
    const median = (name: Side['name'], key: 'perSecond' | 'presignedPerSecond' | 'serverCpuPerVoucher' | 'rpcPerVoucher' | 'gasPerPayment') => percentile(runs[name].map((r) => r[key]), 50)
    const pick = (name: Side['name']) => ({
      perSecond: median(name, 'perSecond'),
      presignedPerSecond: median(name, 'presignedPerSecond'),
      serverCpuPerVoucher: median(name, 'serverCpuPerVoucher'),
      rpcPerVoucher: median(name, 'rpcPerVoucher'),
      gasPerPayment: median(name, 'gasPerPayment'),
      payments: runs[name][0]!.payments,
    })
    const results = { ours: pick('ours'), node: pick('node'), theirs: pick('theirs') }
    const exactGas = await exactPaymentGas(world)
    await ours.close()
    await node.close()
    await theirs.close()
    const note = `${BATCH_COUNTS.channels} channels at once x ${BATCH_COUNTS.vouchersPerChannel} vouchers, official client over loopback HTTP; median of ${BATCH_COUNTS.rounds} rounds`
    return [
      row('EVM batch', 'vouchers per second, official client paying (paywall + facilitator)', 'vouchers/s', 'higher', results.ours.perSecond, results.theirs.perSecond, note),
      row('EVM batch', 'vouchers per second, signed ahead (paywall + facilitator)', 'vouchers/s', 'higher', results.ours.presignedPerSecond, results.theirs.presignedPerSecond, `${BATCH_COUNTS.channels} channels at once x ${BATCH_COUNTS.presigned} vouchers, one request each, sent from a load generator process (node:http); median of ${BATCH_COUNTS.rounds} rounds`),
      row('EVM batch', 'server CPU per voucher, signed ahead (paywall + facilitator)', 'µs', 'lower', results.ours.serverCpuPerVoucher, results.theirs.serverCpuPerVoucher, 'the serving process, user + system, the load generator apart; robust to other load on the machine'),
      row('EVM batch', 'vouchers per second, signed ahead (node paywall + facilitator)', 'vouchers/s', 'higher', results.node.presignedPerSecond, results.theirs.presignedPerSecond, 'ours through createNodePaywall on node:http (no web Request/Response), as the row above otherwise'),
      row('EVM batch', 'server CPU per voucher, signed ahead (node paywall + facilitator)', 'µs', 'lower', results.node.serverCpuPerVoucher, results.theirs.serverCpuPerVoucher, 'ours through createNodePaywall; the serving process, user + system'),
      row('EVM batch', 'vouchers per second, official client paying (node paywall + facilitator)', 'vouchers/s', 'higher', results.node.perSecond, results.theirs.perSecond, 'ours through createNodePaywall; the client signs each voucher (its CPU is in the figure)'),
      row('EVM batch', 'anvil RPC requests per voucher', 'requests', 'lower', results.ours.rpcPerVoucher, results.theirs.rpcPerVoucher, 'EOA vouchers, state fresh'),
      row('EVM batch', 'gas per payment (deposits + one claim + one sweep)', 'gas', 'lower', results.ours.gasPerPayment, results.theirs.gasPerPayment, `${results.ours.payments} payments over ${BATCH_COUNTS.channels} channels`),
      row('EVM batch', 'gas per payment, batch-settlement against exact', 'gas', 'lower', results.ours.gasPerPayment, exactGas, 'theirs: one exact (EIP-3009) payment settled by our facilitator on the same chain'),
    ]
  } finally {
    await world.stop()
  }
}

/** The gas of one `exact` EIP-3009 payment of the same price, settled by our facilitator. */
async function exactPaymentGas(world: EvmFixture): Promise<number> {
  const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
  const requirements = world.requirementsV2({ amount: PRICE.toString() })
  const paymentPayload = await signExactEvmPayment({ signer: await world.newPayer(10n ** 9n), requirements, validForSeconds: 3_600 })
  await world.node.testClient.mine({ blocks: 1 })
  const settled = await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
  check(settled.success, `exact: the reference payment did not settle (${settled.errorReason ?? ''})`)
  return Number((await world.node.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })).gasUsed)
}

async function runSide(world: EvmFixture, side: Side, load: BatchLoad, warmUp: boolean) {
  if (warmUp) {
    // Untimed: one channel pays `warmup` calls.
    const warm = client(await world.newPayer(10n ** 12n))
    for (let i = 0; i < BATCH_COUNTS.warmup; i++) check((await warm(`${side.url}/call`)).status === 200, `${side.name}: warm-up call ${i} was not paid`)
    // And the load generator's path, on the same channel: signed ahead, untimed.
    await load.run({ url: side.url, channels: [await presign(warm.payer, warm.sent.at(-1)!, BigInt(BATCH_COUNTS.warmup), BATCH_COUNTS.warmupPresigned)] })
    await side.claimAndSweep()
  }
  const before = await tokenBalance(world.node, world.token, side.receiver)
  const payers: LocalAccount[] = []
  for (let i = 0; i < BATCH_COUNTS.channels; i++) payers.push(await world.newPayer(10n ** 12n))
  const pays = payers.map((payer) => client(payer))
  // Untimed: each channel's deposit.
  const deposits: Hex[] = []
  for (const pay of pays) {
    const response = await pay(`${side.url}/call`)
    check(response.status === 200, `${side.name}: a deposit call was not paid`)
    deposits.push((JSON.parse(atob(response.headers.get('PAYMENT-RESPONSE')!)) as { transaction: Hex }).transaction)
  }
  const requestsBefore = side.requests()
  const started = performance.now()
  await Promise.all(
    pays.map(async (pay) => {
      for (let i = 0; i < BATCH_COUNTS.vouchersPerChannel; i++) check((await pay(`${side.url}/call`)).status === 200, `${side.name}: a voucher call was not paid`)
    }),
  )
  const elapsed = performance.now() - started
  const vouchers = BATCH_COUNTS.channels * BATCH_COUNTS.vouchersPerChannel
  const rpcPerVoucher = (side.requests() - requestsBefore) / vouchers

  // The server and facilitator alone: vouchers signed ahead, sent one at a time per channel by the
  // load generator in its own process (the same node:http client for both sides), so neither
  // side's figure carries the client's CPU; this process's CPU per voucher is the server's.
  const ahead = await Promise.all(payers.map((payer, i) => presign(payer, pays[i]!.sent.at(-1)!, BigInt(BATCH_COUNTS.vouchersPerChannel + 1), BATCH_COUNTS.presigned)))
  globalThis.gc?.()
  const cpuBefore = ownCpuMs()
  const loadCpuBefore = processCpuMs(load.pid)
  const presignedRequestsBefore = side.requests()
  const presignedRun = await load.run({ url: side.url, channels: ahead })
  const presignedRpc = side.requests() - presignedRequestsBefore
  const presignedVouchers = BATCH_COUNTS.channels * BATCH_COUNTS.presigned
  const serverCpuPerVoucher = ((ownCpuMs() - cpuBefore) * 1000) / presignedVouchers
  const loadCpu = processCpuMs(load.pid)
  const loadCpuPerVoucher = loadCpu === undefined || loadCpuBefore === undefined ? null : ((loadCpu - loadCpuBefore) * 1000) / presignedVouchers
  const presignedPerSecond = presignedVouchers / (presignedRun.elapsedMs / 1000)
  const settled = await side.claimAndSweep()
  const payments = BATCH_COUNTS.channels * (BATCH_COUNTS.vouchersPerChannel + 1 + BATCH_COUNTS.presigned)
  const paid = BigInt(payments) * PRICE
  check((await tokenBalance(world.node, world.token, side.receiver)) - before === paid, `${side.name}: the receiver did not get every payment after the claim and sweep`)
  let gas = 0n
  for (const hash of [...deposits, ...settled]) gas += (await world.node.publicClient.getTransactionReceipt({ hash })).gasUsed
  const perSecond = vouchers / (elapsed / 1000)
  progress(`EVM batch ${side.name}: ${perSecond.toFixed(0)} vouchers/s with the client, ${presignedPerSecond.toFixed(0)} pre-signed (${serverCpuPerVoucher.toFixed(0)} µs server CPU, ${loadCpuPerVoucher?.toFixed(0) ?? '?'} µs load generator CPU per voucher, ${presignedRpc} RPC requests), ${rpcPerVoucher.toFixed(3)} RPC requests per voucher, ${settled.length} claim/sweep transactions`)
  return { perSecond, presignedPerSecond, serverCpuPerVoucher, rpcPerVoucher, gasPerPayment: Number(gas) / payments, payments }
}

/** The official client paying through fetch; `sent` holds the payment headers it sent. */
export function client(payer: LocalAccount) {
  const batch = new BatchClient(payer, { depositPolicy: { depositMultiplier: 1_000 } })
  const sent: string[] = []
  const capturing = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init)
    const header = request.headers.get('PAYMENT-SIGNATURE')
    if (header) sent.push(header)
    return fetch(request)
  }
  return Object.assign(wrapFetchWithPayment(capturing as typeof fetch, new x402Client().setSpendControls(false).register(NETWORK, batch)), { sent, payer })
}

/** Voucher headers continuing a channel from its last paid header (cumulative `from + i` prices), signed ahead. */
export async function presign(payer: LocalAccount, last: string, from: bigint, count: number): Promise<string[]> {
  const decoded = JSON.parse(atob(last)) as { payload: { channelConfig: unknown; voucher: { channelId: Hex } } }
  const id = decoded.payload.voucher.channelId
  const headers: string[] = []
  for (let i = 1n; i <= BigInt(count); i++) {
    const max = (from + i) * PRICE
    const signature = await signVoucher(payer, 84532, id, max)
    headers.push(btoa(JSON.stringify({ ...decoded, payload: { type: 'voucher', channelConfig: decoded.payload.channelConfig, voucher: { channelId: id, maxClaimableAmount: max.toString(), signature } } })))
  }
  return headers
}

// One deposit per channel on both sides: the official server announces 10 prices by default, so both announce this.
const MIN_DEPOSIT = (PRICE * 1_000n).toString()
const offerOf = (world: EvmFixture, receiver: Hex) => ({ scheme: 'batch-settlement', network: NETWORK, amount: PRICE.toString(), asset: world.token.address, payTo: receiver, extra: { name: world.token.name, version: world.token.version, minDeposit: MIN_DEPOSIT } })

/** Our side; `node` serves it through createNodePaywall (node:http req/res), else createPaywall behind createNodeListener. */
export async function ourSide(world: EvmFixture, transport: 'web' | 'node' = 'web'): Promise<Side> {
  const receiver = privateKeyToAccount(generatePrivateKey()).address
  let requests = 0
  const host = new URL(world.node.rpcUrl).host
  const count = (message: unknown) => {
    if ((message as { host?: string }).host === host) requests++
  }
  diagnostics.subscribe(RPC_REQUEST_CHANNEL, count)
  // A key per side: two facilitators sending from one key would race for its nonces.
  const index = transport === 'node' ? 3 : 1
  const signer = privateKeySigner(ANVIL_KEY(index))
  check(signer.address === world.signers[index - 1]?.address, `our ${transport} facilitator key is anvil account ${index}`)
  const facilitator = createFacilitator({
    schemes: [batchSettlementEvm({ networks: [{ network: NETWORK, rpcUrls: [world.node.rpcUrl] }], signers: [signer], receiverAuthorizer: privateKeyToAccount(generatePrivateKey()) })],
  })
  const batch = createBatchSettlementServer({ facilitator, claimPolicy: false })
  const offers = [offerOf(world, receiver)]
  let server: LoopbackServer
  if (transport === 'node') {
    const paid = createNodePaywall({ facilitator, batchSettlement: batch, offers })
    const body = JSON.stringify({ ok: true })
    server = await listen((req, res) => void paid(req, res, async () => ({ headers: { 'content-type': 'application/json' }, body })))
  } else {
    const paywall = createPaywall({ facilitator, batchSettlement: batch, offers })
    server = await listen(createNodeListener((request) => paywall(request, async () => Response.json({ ok: true }))))
  }
  return {
    name: transport === 'node' ? 'node' : 'ours',
    url: server.url,
    receiver,
    requests: () => requests,
    async claimAndSweep() {
      const round = await batch.claim()
      return [...(round?.claims ?? []), ...(round?.sweeps ?? [])].map((t) => t.transaction as Hex)
    },
    async close() {
      diagnostics.unsubscribe(RPC_REQUEST_CHANNEL, count)
      await batch.stop()
      await server.close()
    },
  }
}

export async function theirSide(world: EvmFixture): Promise<Side> {
  const receiver = privateKeyToAccount(generatePrivateKey()).address
  let requests = 0
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 2, nonceManager: createNonceManager({ source: jsonRpc() }) })
  check(account.address === world.signers[1]!.address, 'the official facilitator key is anvil account 2')
  const signer = officialEvmSigner(account, world.node.chain, world.node.rpcUrl, () => void requests++)
  const facilitator = new x402Facilitator().register(NETWORK, new OfficialBatchFacilitator(signer, privateKeyToAccount(generatePrivateKey())))
  const facilitatorClient: FacilitatorClient = {
    verify: (payload, requirements) => facilitator.verify(payload as OfficialPayload, requirements as OfficialRequirements),
    settle: (payload, requirements) => facilitator.settle(payload as OfficialPayload, requirements as OfficialRequirements),
    getSupported: async () => facilitator.getSupported(),
  } as FacilitatorClient
  const resourceServer = new x402ResourceServer(facilitatorClient)
  const scheme = new OfficialBatchServer(receiver, { withdrawDelay: 900 })
  resourceServer.register(NETWORK, scheme)
  const app = express()
  const offer = offerOf(world, receiver)
  app.use(paymentMiddleware({ 'GET /call': { accepts: { scheme: offer.scheme, network: NETWORK, payTo: receiver, price: { amount: offer.amount, asset: offer.asset, extra: offer.extra } }, description: 'One call', mimeType: 'application/json' } }, resourceServer))
  app.get('/call', (_req, res) => void res.json({ ok: true }))
  const server: LoopbackServer = await listen(app)
  return {
    name: 'theirs',
    url: server.url,
    receiver,
    requests: () => requests,
    async claimAndSweep() {
      const manager = scheme.createChannelManager(facilitatorClient, NETWORK, world.token.address)
      const result = await manager.claimAndSettle()
      return [...result.claims.map((c) => c.transaction as Hex), ...(result.settle ? [result.settle.transaction as Hex] : [])]
    },
    close: () => server.close(),
  }
}

/** The signed-ahead load generator (bench/batch-load.ts) in its own process. */
export interface BatchLoad {
  readonly pid: number | undefined
  /** Sends every channel's headers; every one must be paid (200), or it throws with the first refusal. */
  run(round: BatchLoadRound): Promise<BatchLoadResult>
  close(): void
}

export async function startBatchLoad(): Promise<BatchLoad> {
  const child = fork(fileURLToPath(new URL('./batch-load.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('exit', (code) => reject(new Error(`the batch load generator exited before it was ready (${code})`)))
  })
  return {
    pid: child.pid,
    async run(round) {
      const result = await new Promise<BatchLoadResult>((resolve) => {
        child.once('message', (answer) => resolve(answer as BatchLoadResult))
        child.send(round)
      })
      check(result.failed === 0, `every pre-signed voucher to ${round.url} is paid (${result.failed} were not; first: ${result.firstFailure ?? ''})`)
      return result
    },
    close: () => {
      if (child.connected) child.send('exit')
    },
  }
}
