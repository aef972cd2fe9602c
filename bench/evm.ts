/**
 * EVM: our exactEvm against the official @x402/evm facilitator scheme, on the
 * same anvil, with the same payloads for verify and distinct payloads of the
 * same payer for settle. Each side has its own settlement key and its own
 * counting transport.
 */
import diagnostics from 'node:diagnostics_channel'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { bytesToHex, decodeFunctionResult, encodeFunctionData, parseSignature, type Hex, type LocalAccount } from 'viem'
import { createNonceManager, jsonRpc } from 'viem/nonce'
import { mnemonicToAccount } from 'viem/accounts'
import { createFacilitator } from '../src/index.js'
import { exactEvm, privateKeySigner, signExactEvmPayment } from '../src/evm/index.js'
import { hashAuthorization } from '../src/evm/codec/typed-data.js'
import { recoverAuthorizationSigner, recoverWith, recoverWithViem, recoveryBackend } from '../src/evm/crypto/recover-signer.js'
import { loadSecp256k1Backends } from '../src/evm/crypto/secp256k1-backend.js'
import type { PaymentPayload } from '../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../src/schemas/requirements.js'
import { ANVIL_MNEMONIC } from '../test/support/anvil.js'
import { startEvmFixture, type EvmFixture } from '../test/support/evm-fixture.js'
import { startFaultProxy } from '../test/support/fault-proxy.js'
import { officialEvmSigner } from '../test/support/official-evm-signer.js'
import { eip3009Abi, MULTICALL3_ADDRESS, multicall3Abi } from '../src/evm/codec/abi.js'
import { RPC_REQUEST_CHANNEL } from '../src/transport/keep-alive-post.js'
import { awaitReceipts, check, leanRpc, ownCpuMs, processCpuMs, microseconds, percentile, progress, row, runConcurrent, settleInBursts, type Row } from './measure.js'

export const EVM_COUNTS = {
  warmup: 40,
  rounds: 3,
  latency: 300,
  concurrent: 600,
  concurrency: 32,
  settle: 100,
  settleConcurrency: 100,
  /** Bursts per side (and runs of each chain floor), interleaved; the table gives the median rate. */
  settleRounds: 3,
  /** The block time of the interval-mining rounds (Base's). */
  blockTimeSeconds: 2,
  /** Delay a proxy adds to every RPC request in the "far RPC" rounds (a provider a few tens of ms away). */
  rpcDelayMs: 20,
  /** Our signer keys in the far-RPC round that shows how keys scale a burst. */
  farSignerKeys: 4,
  receiptSamples: 15,
  recoverIterations: 300,
  /**
   * Untimed settles of each side, in bursts like the timed ones, on a chain of their own before
   * the settle rounds: the timed bursts then measure a facilitator whose hot code V8 has
   * compiled, as in a server that has been running, not the JIT's warm-up.
   */
  jitWarmupSettles: 1_000,
}

interface Side {
  verify(payload: PaymentPayload, requirements: PaymentRequirementsV2): Promise<{ isValid: boolean; invalidReason?: string }>
  settle(payload: PaymentPayload, requirements: PaymentRequirementsV2): Promise<{ success: boolean; errorReason?: string }>
  requests(): number
}

/** The private key of anvil's development account `index`. */
export const ANVIL_KEY = (index: number): Hex => bytesToHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index }).getHdKey().privateKey!)

export async function benchEvm(): Promise<Row[]> {
  const c = EVM_COUNTS
  progress(`EVM: anvil + contracts; verify ${c.latency} sequential, ${c.concurrent} at concurrency ${c.concurrency}; settle ${c.settle} at concurrency ${c.settleConcurrency}`)
  const world = await startEvmFixture({ signerCount: 2 })
  const rows: Row[] = []
  let stopCounting = () => {}
  try {
    const [ourKey, theirKey] = world.signers
    check(ourKey !== undefined && theirKey !== undefined, 'two facilitator keys')
    const requirements = world.requirementsV2({ amount: '1000' })

    const sides = sidesOf(world, ourKey, theirKey)
    stopCounting = sides.stop
    const { ourSide, theirSide } = sides

    // --- signer recovery, the known hot spot (offline, no chain) ---
    const payer = await world.newPayer(10n ** 15n)
    const sample = await signExactEvmPayment({ signer: payer, requirements })
    const auth = (sample.payload as { authorization: Record<string, string> }).authorization
    const digest = hashAuthorization(
      { name: world.token.name, version: world.token.version, chainId: world.node.chainId, verifyingContract: world.token.address },
      {
        from: auth.from as Hex,
        to: auth.to as Hex,
        value: BigInt(auth.value!),
        validAfter: BigInt(auth.validAfter!),
        validBefore: BigInt(auth.validBefore!),
        nonce: auth.nonce as Hex,
      },
    )
    const signature = (sample.payload as { signature: Hex }).signature
    check((await recoverAuthorizationSigner(digest, signature)) === payer.address, 'the fast recovery finds the payer')
    await microseconds(20, () => recoverWithViem(digest, signature))
    const viem = await microseconds(c.recoverIterations, () => recoverWithViem(digest, signature))
    // Each installed libsecp256k1 build; the first is the one the rest of the bench runs on.
    for (const backend of await loadSecp256k1Backends()) {
      await microseconds(20, () => recoverWith(backend, digest, signature))
      const fast = await microseconds(c.recoverIterations, () => recoverWith(backend, digest, signature))
      const used = backend.name === (await recoveryBackend()) ? ' (used below)' : ''
      rows.push(row('EVM', `signer recovery (offline) on ${backend.name}${used}`, 'µs/op', 'lower', fast, viem, 'theirs: viem recoverAddress (what the official verifier uses)'))
    }

    // --- JIT warm-up of both sides' settle path (verify included), untimed, before anything is timed ---
    progress(`EVM: JIT warm-up, ${c.jitWarmupSettles} untimed settles each on a chain of their own`)
    await jitWarmUp(c.jitWarmupSettles, c.settleConcurrency)

    // --- verify: the same payloads for both ---
    progress(`EVM: signing ${c.warmup + c.latency + c.concurrent} payloads`)
    const payloads = await Promise.all(
      Array.from({ length: c.warmup + Math.max(c.latency, c.concurrent) }, () => signExactEvmPayment({ signer: payer, requirements, validForSeconds: 3_600 })),
    )
    // anvil mines only when a transaction comes, and an eth_call runs at the last block's timestamp: after the
    // warm-up on another chain (minutes when the machine is loaded, or when the official side waits out a stranded
    // transaction) this chain's clock stood still that long, and a payment whose validAfter (now - 60 s) lies after
    // it reverts in the simulation ("authorization is not yet valid"). A live chain's clock moves with its blocks.
    await mineClock(world)
    for (const [name, side] of [['ours', ourSide], ['theirs', theirSide]] as const) {
      const first = await side.verify(payloads[0]!, requirements)
      check(first.isValid, `${name} accepts the benchmark payload (${first.invalidReason ?? ''})`)
    }
    // Rounds alternate between the two sides so background load on the machine hits both alike.
    const verifyRound = async (side: Side, round: number) => {
      const perRound = c.latency / c.rounds
      const parallelPerRound = c.concurrent / c.rounds
      const before = side.requests()
      const cpuBefore = { ours: ownCpuMs(), chain: processCpuMs(world.node.pid) }
      const sequential = await runConcurrent(perRound, 1, async (i) => {
        const answer = await side.verify(payloads[c.warmup + round * perRound + i]!, requirements)
        if (!answer.isValid) throw new Error(answer.invalidReason)
      })
      const requests = side.requests() - before
      const parallel = await runConcurrent(parallelPerRound, c.concurrency, async (i) => {
        const answer = await side.verify(payloads[c.warmup + round * parallelPerRound + i]!, requirements)
        if (!answer.isValid) throw new Error(answer.invalidReason)
      })
      check(sequential.errors.length === 0 && parallel.errors.length === 0, `every verify succeeds (${String(sequential.errors[0] ?? parallel.errors[0])})`)
      const chainAfter = processCpuMs(world.node.pid)
      const cpu = { facilitator: ownCpuMs() - cpuBefore.ours, chain: chainAfter === undefined || cpuBefore.chain === undefined ? Number.NaN : chainAfter - cpuBefore.chain }
      return { sequential, parallel, requests, cpu }
    }
    const verifyTotals = () => ({ durations: [] as number[], sequentialMs: 0, parallelMs: 0, requests: 0, facilitatorCpuMs: 0, chainCpuMs: 0 })
    const totals = { ours: verifyTotals(), theirs: verifyTotals() }
    for (const side of [ourSide, theirSide]) await runConcurrent(c.warmup, 1, (i) => side.verify(payloads[i]!, requirements))
    for (let round = 0; round < c.rounds; round++) {
      progress(`EVM: verify round ${round + 1}/${c.rounds}`)
      await mineClock(world)
      for (const [name, side] of [['ours', ourSide], ['theirs', theirSide]] as const) {
        const r = await verifyRound(side, round)
        const t = totals[name]
        t.durations.push(...r.sequential.durations)
        t.sequentialMs += r.sequential.elapsedMs
        t.parallelMs += r.parallel.elapsedMs
        t.requests += r.requests
        t.facilitatorCpuMs += r.cpu.facilitator
        t.chainCpuMs += r.cpu.chain
      }
    }
    const figures = (t: ReturnType<typeof verifyTotals>) => ({
      sequential: { durations: t.durations, perSecond: (c.latency * 1000) / t.sequentialMs },
      parallel: { perSecond: (c.concurrent * 1000) / t.parallelMs },
      requestsPerVerify: t.requests / c.latency,
      facilitatorCpuMs: t.facilitatorCpuMs / (c.latency + c.concurrent),
      chainCpuMs: t.chainCpuMs / (c.latency + c.concurrent),
    })
    const ourVerify = figures(totals.ours)
    const theirVerify = figures(totals.theirs)
    rows.push(
      row('EVM verify', 'latency p50', 'ms', 'lower', percentile(ourVerify.sequential.durations, 50), percentile(theirVerify.sequential.durations, 50)),
      row('EVM verify', 'latency p99', 'ms', 'lower', percentile(ourVerify.sequential.durations, 99), percentile(theirVerify.sequential.durations, 99)),
      row('EVM verify', 'throughput, concurrency 1', 'verify/s', 'higher', ourVerify.sequential.perSecond, theirVerify.sequential.perSecond),
      row('EVM verify', `throughput, concurrency ${c.concurrency}`, 'verify/s', 'higher', ourVerify.parallel.perSecond, theirVerify.parallel.perSecond),
      row('EVM verify', 'RPC requests per verify', 'requests', 'lower', ourVerify.requestsPerVerify, theirVerify.requestsPerVerify, 'HTTP requests sent to anvil (a JSON-RPC batch counts once)'),
      row('EVM verify', 'facilitator CPU per verify', 'ms', 'lower', ourVerify.facilitatorCpuMs, theirVerify.facilitatorCpuMs, 'the bench process (every thread); anvil runs in its own'),
      row('EVM verify', 'chain CPU per verify', 'ms', 'lower', ourVerify.chainCpuMs, theirVerify.chainCpuMs, 'the anvil process, from /proc (10 ms ticks)'),
    )

    // --- settle: 100 distinct payments of one payer for each side ---
    // anvil slows as its chain grows (each settle is a block): every burst and every chain floor
    // runs on a chain of its own, freshly started, and the rounds interleave them.
    progress(`EVM: settle ${c.settle} payments each, ${c.settleRounds} rounds, each burst on a fresh anvil`)
    /** One burst on a fresh chain; optionally on 2 s blocks, behind a delay to the RPC, with more keys of ours. */
    const settleFigures = async (who: 'ours' | 'theirs', withReceipts: boolean, blockTimeSeconds?: number, latency?: { delayMs: number; ourKeys: number }) => {
      const ourKeyCount = latency?.ourKeys ?? 1
      const fresh = await startEvmFixture({ signerCount: ourKeyCount + 1 })
      const ourKeys = fresh.signers.slice(0, ourKeyCount)
      const theirKey = fresh.signers[ourKeyCount]
      check(ourKeys.length === ourKeyCount && theirKey !== undefined, 'the facilitator keys')
      const proxy = latency ? await startFaultProxy(fresh.node.rpcUrl) : undefined
      const freshSides = sidesOf(fresh, ourKeys, theirKey, proxy?.url)
      try {
        const side = who === 'ours' ? freshSides.ourSide : freshSides.theirSide
        const freshPayer = await fresh.newPayer(10n ** 15n)
        const freshRequirements = fresh.requirementsV2({ amount: '1000' })
        const samples = withReceipts ? c.receiptSamples : 0
        const mine = await Promise.all(Array.from({ length: c.settle + samples + 3 }, () => signExactEvmPayment({ signer: freshPayer, requirements: freshRequirements, validForSeconds: 3_600 })))
        // Warm-up: first fee quote, nonce read and JIT, outside the timed burst.
        for (const payment of mine.slice(c.settle + samples)) await side.settle(payment, freshRequirements)
        if (blockTimeSeconds) await startBlockTime(fresh, blockTimeSeconds)
        if (latency) proxy?.setMode({ kind: 'delay', ms: latency.delayMs })
        const cpuBefore = { facilitator: ownCpuMs(), chain: processCpuMs(fresh.node.pid) }
        const burst = await runConcurrent(c.settle, c.settleConcurrency, async (i) => {
          const answer = await side.settle(mine[i]!, freshRequirements)
          if (!answer.success) throw new Error(answer.errorReason)
        })
        const chainAfter = processCpuMs(fresh.node.pid)
        const cpu = {
          facilitator: (ownCpuMs() - cpuBefore.facilitator) / c.settle,
          chain: chainAfter === undefined || cpuBefore.chain === undefined ? Number.NaN : (chainAfter - cpuBefore.chain) / c.settle,
        }
        const sequential = await runConcurrent(samples, 1, async (i) => {
          const answer = await side.settle(mine[c.settle + i]!, freshRequirements)
          if (!answer.success) throw new Error(answer.errorReason)
        })
        if (burst.errors.length > 0 || sequential.errors.length > 0) {
          progress(`EVM: ${who} settle failures: ${burst.errors.length} in the burst, ${sequential.errors.length} sequential (${String(burst.errors[0] ?? sequential.errors[0])})`)
        }
        return { burst, sequential, cpu }
      } finally {
        freshSides.stop()
        await proxy?.close()
        await fresh.stop()
      }
    }
    // The chain's own rate: the same transferWithAuthorization calls, pre-signed, sent raw and awaited,
    // all at once (no order at all) and one key's in nonce order, each send after the previous answer.
    const floorOf = async (order: 'at once' | 'in nonce order', options: { blockTimeSeconds?: number; withChecks?: boolean } = {}) => {
      const fresh = await startEvmFixture({ signerCount: 1 })
      try {
        const key = fresh.signers[0]
        check(key !== undefined, 'a key for the chain floor')
        return await rawSettleRate(fresh, await fresh.newPayer(10n ** 15n), fresh.requirementsV2({ amount: '1000' }), key, c.settle, order, options)
      } finally {
        await fresh.stop()
      }
    }

    type Burst = Awaited<ReturnType<typeof settleFigures>>
    const rounds = {
      ours: [] as Burst[],
      theirs: [] as Burst[],
      atOnce: [] as number[],
      ordered: [] as number[],
      orderedChecked: [] as number[],
      oursTimed: [] as Burst[],
      theirsTimed: [] as Burst[],
      orderedTimed: [] as number[],
      oursFar: [] as Burst[],
      oursFarKeys: [] as Burst[],
      theirsFar: [] as Burst[],
    }
    const bt = c.blockTimeSeconds
    const far = (ourKeys: number) => ({ delayMs: c.rpcDelayMs, ourKeys })
    const steps = [
      async (first: boolean) => void rounds.ours.push(await settleFigures('ours', first)),
      async (first: boolean) => void rounds.theirs.push(await settleFigures('theirs', first)),
      async () => void rounds.atOnce.push(await floorOf('at once')),
      async () => void rounds.ordered.push(await floorOf('in nonce order')),
      async () => void rounds.orderedChecked.push(await floorOf('in nonce order', { withChecks: true })),
      async () => void rounds.oursTimed.push(await settleFigures('ours', false, bt)),
      async () => void rounds.theirsTimed.push(await settleFigures('theirs', false, bt)),
      async () => void rounds.orderedTimed.push(await floorOf('in nonce order', { blockTimeSeconds: bt })),
      async () => void rounds.oursFar.push(await settleFigures('ours', false, bt, far(1))),
      async () => void rounds.oursFarKeys.push(await settleFigures('ours', false, bt, far(c.farSignerKeys))),
      async () => void rounds.theirsFar.push(await settleFigures('theirs', false, bt, far(1))),
    ]
    for (let round = 0; round < c.settleRounds; round++) {
      progress(`EVM: settle round ${round + 1}/${c.settleRounds}`)
      // Each round starts with another step; the sequential receipt samples come from the first round.
      for (let i = 0; i < steps.length; i++) await steps[(round + i) % steps.length]!(round === 0)
    }
    const median = (values: number[]) => percentile(values, 50)
    const rate = (side: typeof rounds.ours) => median(side.map((r) => r.burst.perSecond))
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
    const ourSettle = { rate: rate(rounds.ours), cpu: { facilitator: mean(rounds.ours.map((r) => r.cpu.facilitator)), chain: mean(rounds.ours.map((r) => r.cpu.chain)) }, sequential: rounds.ours[0]!.sequential }
    const theirSettle = { rate: rate(rounds.theirs), cpu: { facilitator: mean(rounds.theirs.map((r) => r.cpu.facilitator)), chain: mean(rounds.theirs.map((r) => r.cpu.chain)) }, sequential: rounds.theirs[0]!.sequential }
    const failed = (side: typeof rounds.ours) => side.reduce((sum, r) => sum + r.burst.errors.length, 0)
    const failures = [failed(rounds.ours) && `ours: ${failed(rounds.ours)} failed`, failed(rounds.theirs) && `theirs: ${failed(rounds.theirs)} failed`].filter(Boolean).join('; ')
    const spread = (values: number[]) => `${Math.round(Math.min(...values))} to ${Math.round(Math.max(...values))}`
    rows.push(
      row('EVM settle', `throughput, ${c.settle} payments of one payer, concurrency ${c.settleConcurrency}`, 'settle/s', 'higher', ourSettle.rate, theirSettle.rate,
        `median of ${c.settleRounds} bursts each, each on a fresh chain (ours ${spread(rounds.ours.map((r) => r.burst.perSecond))})${failures ? `; ${failures}` : ''}`),
      row('EVM settle', 'chain floor: same calls pre-signed, all sent at once, receipts', 'tx/s', 'higher', ourSettle.rate, median(rounds.atOnce), `theirs = anvil alone (ours / chain), ${spread(rounds.atOnce)}`),
      row('EVM settle', 'chain floor: same calls pre-signed, one key in nonce order, receipts', 'tx/s', 'higher', ourSettle.rate, median(rounds.ordered), `theirs = anvil alone, each send after the previous answer (ours / chain), ${spread(rounds.ordered)}`),
      row('EVM settle', 'chain floor with the checks: verify\'s eth_calls in one batch, then as above', 'tx/s', 'higher', ourSettle.rate, median(rounds.orderedChecked), `theirs = anvil alone: the chain's whole share of a settle (ours / chain), ${spread(rounds.orderedChecked)}`),
      row('EVM settle', `${bt} s blocks: throughput, ${c.settle} payments of one payer, concurrency ${c.settleConcurrency}`, 'settle/s', 'higher', rate(rounds.oursTimed), rate(rounds.theirsTimed),
        `burst started just after a block; ours ${spread(rounds.oursTimed.map((r) => r.burst.perSecond))}, theirs ${spread(rounds.theirsTimed.map((r) => r.burst.perSecond))}${failed(rounds.oursTimed) + failed(rounds.theirsTimed) ? `; failed: ours ${failed(rounds.oursTimed)}, theirs ${failed(rounds.theirsTimed)}` : ''}`),
      row('EVM settle', `${bt} s blocks: chain floor, same calls pre-signed, one key in nonce order`, 'tx/s', 'higher', rate(rounds.oursTimed), median(rounds.orderedTimed), `theirs = anvil alone (ours / chain), ${spread(rounds.orderedTimed)}`),
      row('EVM settle', `${bt} s blocks, ${c.rpcDelayMs} ms to the RPC: throughput, ${c.settle} payments, one key each`, 'settle/s', 'higher', rate(rounds.oursFar), rate(rounds.theirsFar),
        `each request delayed by a proxy; ours ${spread(rounds.oursFar.map((r) => r.burst.perSecond))}, theirs ${spread(rounds.theirsFar.map((r) => r.burst.perSecond))}`),
      row('EVM settle', `${bt} s blocks, ${c.rpcDelayMs} ms to the RPC: throughput, ours with ${c.farSignerKeys} keys`, 'settle/s', 'higher', rate(rounds.oursFarKeys), rate(rounds.theirsFar),
        `theirs with its one key; ours ${spread(rounds.oursFarKeys.map((r) => r.burst.perSecond))}${failed(rounds.oursFar) + failed(rounds.oursFarKeys) + failed(rounds.theirsFar) ? `; failed: ${failed(rounds.oursFar) + failed(rounds.oursFarKeys) + failed(rounds.theirsFar)}` : ''}`),
      row('EVM settle', 'facilitator CPU per settle (burst)', 'ms', 'lower', ourSettle.cpu.facilitator, theirSettle.cpu.facilitator, 'the bench process (every thread)'),
      row('EVM settle', 'chain CPU per settle (burst)', 'ms', 'lower', ourSettle.cpu.chain, theirSettle.cpu.chain, 'the anvil process: verify simulation, send, mining, receipt lookups'),
      row('EVM settle', 'time to receipt p50 (sequential settle)', 'ms', 'lower', percentile(ourSettle.sequential.durations, 50), percentile(theirSettle.sequential.durations, 50)),
      row('EVM settle', 'time to receipt p99 (sequential settle)', 'ms', 'lower', percentile(ourSettle.sequential.durations, 99), percentile(theirSettle.sequential.durations, 99)),
    )
    return rows
  } finally {
    stopCounting()
    await world.stop()
  }
}

/**
 * Our facilitator and the official one over a world's chain, each with its own key and its own
 * request count. `stop` ends the counting of ours.
 */
function sidesOf(
  world: EvmFixture,
  ourKeys: LocalAccount | readonly LocalAccount[],
  theirKey: LocalAccount,
  rpcUrl = world.node.rpcUrl,
): { ourSide: Side; theirSide: Side; stop(): void } {
  // Ours runs on its default transport (our HTTP/1.1 keep-alive client), as users get it: its
  // requests to anvil are counted on the channel that client publishes on.
  let ourRequests = 0
  const anvilHost = new URL(rpcUrl).host
  const countOurs = (message: unknown) => {
    if ((message as { host?: string }).host === anvilHost) ourRequests++
  }
  diagnostics.subscribe(RPC_REQUEST_CHANNEL, countOurs)
  // The keys as raw private keys, through privateKeySigner (what the README recommends for one).
  const ourSigners = (Array.isArray(ourKeys) ? ourKeys : [ourKeys]).map((key: LocalAccount) => {
    const signer = privateKeySigner(ANVIL_KEY(world.signers.indexOf(key) + 1))
    check(signer.address === key.address, 'our facilitator keys are anvil accounts from 1 on')
    return signer
  })
  const ours = createFacilitator({
    schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [rpcUrl], assets: [world.knownAsset] }], signers: ourSigners, receiptPollIntervalMs: 50 }))],
  })
  const ourSide: Side = {
    verify: (paymentPayload, paymentRequirements) => ours.verify({ x402Version: 2, paymentPayload, paymentRequirements }),
    settle: (paymentPayload, paymentRequirements) => ours.settle({ x402Version: 2, paymentPayload, paymentRequirements }),
    requests: () => ourRequests,
  }

  // The official facilitator with its documented signer helper over viem clients, a nonce
  // manager so concurrent settles from one key do not collide, and a fast local polling interval.
  let theirRequests = 0
  const theirAccount = mnemonicToAccount(ANVIL_MNEMONIC, {
    addressIndex: world.signers.indexOf(theirKey) + 1,
    // One per world: viem's shared manager would carry nonces over from an earlier chain.
    nonceManager: createNonceManager({ source: jsonRpc() }),
  })
  check(theirAccount.address === theirKey.address, 'the official facilitator key is anvil account 2')
  const theirSigner = officialEvmSigner(theirAccount, world.node.chain, rpcUrl, () => void theirRequests++)
  const theirs = new x402Facilitator().register('eip155:84532', new ExactEvmScheme(theirSigner))
  const theirSide: Side = {
    verify: (payload, req) => theirs.verify(payload as unknown as OfficialPayload, req as unknown as OfficialRequirements),
    settle: (payload, req) => theirs.settle(payload as unknown as OfficialPayload, req as unknown as OfficialRequirements),
    requests: () => theirRequests,
  }
  return { ourSide, theirSide, stop: () => diagnostics.unsubscribe(RPC_REQUEST_CHANNEL, countOurs) }
}

/**
 * Settles `count` payments on each side, `concurrency` at a time, on a fresh chain, and checks
 * they all landed. Nothing is measured: until V8 has compiled the hot code (a few hundred
 * settles in, here), a burst spends as much CPU on the compiler's threads as on the settles.
 */
async function jitWarmUp(count: number, concurrency: number): Promise<void> {
  const world = await startEvmFixture({ signerCount: 2 })
  const [ourKey, theirKey] = world.signers
  check(ourKey !== undefined && theirKey !== undefined, 'two facilitator keys for the warm-up')
  const sides = sidesOf(world, ourKey, theirKey)
  try {
    const requirements = world.requirementsV2({ amount: '1000' })
    for (const [name, side] of [['ours', sides.ourSide], ['theirs', sides.theirSide]] as const) {
      const payer = await world.newPayer(10n ** 15n)
      const payments = await Promise.all(Array.from({ length: count }, () => signExactEvmPayment({ signer: payer, requirements, validForSeconds: 3_600 })))
      try {
        await settleInBursts(payments, concurrency, (payment) => side.settle(payment, requirements), name)
      } catch (error) {
        if (name === 'ours') throw error
        // Now and then anvil strands one of the official side's transactions (see test/support/anvil.ts), and
        // that facilitator, which does not rebroadcast, waits out its 180 s receipt bound. The warm-up measures
        // nothing, so that side's warm-up ends there; the timed rows stay strict.
        progress(`EVM: warm-up of theirs ended early: ${String(error)}`)
      }
    }
  } finally {
    sides.stop()
    await world.stop()
  }
}


/**
 * Mines one block, so that the chain's clock (the timestamp eth_call runs at) is now: anvil mines
 * only when a transaction arrives, and verify simulates at the last block. Untimed.
 */
export async function mineClock(world: EvmFixture): Promise<void> {
  await world.node.testClient.mine({ blocks: 1 })
}

/**
 * Switches a fixture's anvil from mining each transaction at once to a block every
 * `seconds`, and returns just after the next block, so a burst starts at a block's beginning.
 */
async function startBlockTime(world: EvmFixture, seconds: number): Promise<void> {
  await world.node.testClient.setIntervalMining({ interval: seconds })
  const client = world.node.publicClient
  const start = await client.getBlockNumber()
  const giveUp = Date.now() + seconds * 3_000
  while ((await client.getBlockNumber()) === start) {
    if (Date.now() > giveUp) throw new Error('anvil mined no block on its interval')
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

/**
 * Sends `count` pre-signed transferWithAuthorization transactions, all at once or one
 * after another in nonce order, and waits for every receipt: transactions per second.
 * It talks to anvil through our own lean HTTP client, and asks for every missing
 * receipt in one batch every 2 ms, so that the figure is the chain's, not a client's
 * (through viem's fetch transport the same floor measured half as high). `withChecks`
 * first asks the chain, in one batch, what a verify asks it for each payment (the same
 * Multicall3 eth_call): the chain's whole share of a settle, with no facilitator's CPU.
 */
async function rawSettleRate(
  world: Awaited<ReturnType<typeof startEvmFixture>>,
  payer: LocalAccount,
  requirements: PaymentRequirementsV2,
  key: LocalAccount,
  count: number,
  order: 'at once' | 'in nonce order',
  { blockTimeSeconds, withChecks = false }: { blockTimeSeconds?: number | undefined; withChecks?: boolean } = {},
): Promise<number> {
  const client = world.node.publicClient
  const payments = await Promise.all(Array.from({ length: count }, () => signExactEvmPayment({ signer: payer, requirements, validForSeconds: 3_600 })))
  const nonce = await client.getTransactionCount({ address: key.address, blockTag: 'pending' })
  const block = await client.getBlock()
  const maxFeePerGas = (block.baseFeePerGas ?? 1_000_000_000n) * 2n + 1_000_000n
  const checks: Hex[] = []
  const raws = await Promise.all(
    payments.map((payment, i) => {
      const p = payment.payload as { signature: Hex; authorization: Record<string, string> }
      const a = p.authorization
      const { r, s, yParity } = parseSignature(p.signature)
      const data = encodeFunctionData({
        abi: eip3009Abi,
        functionName: 'transferWithAuthorization',
        args: [a.from as Hex, a.to as Hex, BigInt(a.value!), BigInt(a.validAfter!), BigInt(a.validBefore!), a.nonce as Hex, yParity + 27, r, s],
      })
      // What a verify asks the chain for an EOA payer (src/evm/exact/check-chain-state.ts): balance, nonce state
      // and a simulation of this very transfer, in one Multicall3 eth_call.
      checks[i] = encodeFunctionData({
        abi: multicall3Abi,
        functionName: 'aggregate3',
        args: [[
          { target: world.token.address, allowFailure: true, callData: encodeFunctionData({ abi: eip3009Abi, functionName: 'balanceOf', args: [a.from as Hex] }) },
          { target: world.token.address, allowFailure: true, callData: encodeFunctionData({ abi: eip3009Abi, functionName: 'authorizationState', args: [a.from as Hex, a.nonce as Hex] }) },
          { target: world.token.address, allowFailure: true, callData: data },
        ]],
      })
      return key.signTransaction({ chainId: world.node.chainId, type: 'eip1559', to: world.token.address, data, gas: 150_000n, nonce: nonce + i, maxFeePerGas, maxPriorityFeePerGas: 1_000_000n })
    }),
  )
  const post = leanRpc(world.node.rpcUrl)
  const send = async (raw: Hex): Promise<Hex> => {
    const answer = (await post({ jsonrpc: '2.0', id: 0, method: 'eth_sendRawTransaction', params: [raw] })) as { result?: Hex; error?: { message: string } }
    if (!answer.result) throw new Error(`a raw settlement was refused: ${answer.error?.message}`)
    return answer.result
  }
  const waiting = new Set<Hex>()
  let sending = true
  const receipts = () => awaitReceipts(post, waiting, () => sending, 'a raw settlement')
  // With checks: every payment's eth_call in one batch (the chain's work, not a client's), then the sends.
  let checkAnswers: { result?: Hex; error?: unknown }[] = []
  const checkAll = async () => {
    const batch = checks.map((data, id) => ({ jsonrpc: '2.0', id, method: 'eth_call', params: [{ to: MULTICALL3_ADDRESS, data }, 'latest'] }))
    checkAnswers = (await post(batch)) as typeof checkAnswers
  }
  if (blockTimeSeconds) await startBlockTime(world, blockTimeSeconds)
  const started = performance.now()
  const mined = receipts()
  try {
    if (withChecks) await checkAll()
    if (order === 'in nonce order') for (const raw of raws) waiting.add(await send(raw))
    else for (const hash of await Promise.all(raws.map(send))) waiting.add(hash)
    sending = false
    await mined
  } catch (error) {
    sending = false
    await mined.catch(() => undefined)
    progress(`EVM: chain floor ${order} failed: ${String(error)}`)
    return Number.NaN
  }
  const rate = (count * 1000) / (performance.now() - started)
  if (withChecks) {
    // Read after the clock stopped: every check answered, and its simulated transfer succeeded.
    check(checkAnswers.length === count, 'every check of the chain floor answered')
    for (const answer of checkAnswers) {
      check(answer.result !== undefined, `a check of the chain floor failed: ${JSON.stringify(answer.error)}`)
      const [, , transfer] = decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data: answer.result })
      check(transfer?.success === true, 'the simulated transfer of each check succeeds')
    }
  }
  return rate
}
