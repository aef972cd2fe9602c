/**
 * Solana: our exactSvm against the official @x402/svm facilitator scheme on
 * the same LiteSVM loopback RPC. Payloads come from the official x402 client
 * (each carries a random memo nonce, so none repeats), and the same set is
 * verified by both. A Solana fee payer has no nonce, so both sides co-sign
 * with the same fee payer the payloads name. The chain runs in a process of
 * its own (bench/solana-chain.ts), as a real node would.
 */
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import {
  createKeyPairSignerFromPrivateKeyBytes,
  createSolanaRpc,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  partiallySignTransaction,
  type KeyPairSigner,
} from '@solana/kit'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { toFacilitatorSvmSigner } from '@x402/svm'
import { ExactSvmScheme as OfficialClientScheme } from '@x402/svm/exact/client'
import { ExactSvmScheme as OfficialFacilitatorScheme } from '@x402/svm/exact/facilitator'
import { createFacilitator, SOLANA_DEVNET } from '../src/index.js'
import { exactSvm } from '../src/svm/index.js'
import { check, leanRpc, ownCpuMs, percentile, progress, row, runConcurrent, settleInBursts, type Row } from './measure.js'

export const SVM_COUNTS = {
  warmup: 20,
  // Rounds at concurrency 32 last tens of milliseconds: six short ones alternating keep a burst of background load from deciding the ratio.
  rounds: 6,
  latency: 300,
  concurrent: 600,
  concurrency: 32,
  settle: 100,
  settleConcurrency: 100,
  /** Rounds of the settle section: each times the chain floor and a burst of each side, interleaved. */
  settleRounds: 5,
  receiptSamples: 15,
  /** Untimed settles of each side, in bursts like the timed one, before anything is timed (see bench/evm.ts). */
  jitWarmupSettles: 1_000,
}

type Body = { paymentPayload: unknown; requirements: Record<string, unknown> }

interface Side {
  verify(body: Body): Promise<{ isValid: boolean; invalidReason?: string }>
  settle(body: Body): Promise<{ success: boolean; errorReason?: string }>
}

export async function benchSvm(): Promise<Row[]> {
  const c = SVM_COUNTS
  progress(`Solana: litesvm; verify ${c.latency} sequential, ${c.concurrent} at concurrency ${c.concurrency}; settle ${c.settle} at concurrency ${c.settleConcurrency}`)
  const chain = await startSolanaChain()
  const rows: Row[] = []
  try {
    const s = chain.scenario
    const requirements = {
      scheme: 'exact',
      network: SOLANA_DEVNET,
      amount: '1000',
      asset: s.mint,
      payTo: s.payTo,
      maxTimeoutSeconds: 60,
      extra: { feePayer: s.feePayer.address },
    }

    const ours = createFacilitator({ schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer] })] })
    const ourSide: Side = {
      verify: (b) => ours.verify({ x402Version: 2, paymentPayload: b.paymentPayload, paymentRequirements: b.requirements }),
      settle: (b) => ours.settle({ x402Version: 2, paymentPayload: b.paymentPayload, paymentRequirements: b.requirements }),
    }
    const theirSigner = toFacilitatorSvmSigner(s.feePayer, { [SOLANA_DEVNET]: createSolanaRpc(chain.url) } as never)
    const theirs = new x402Facilitator().register(SOLANA_DEVNET, new OfficialFacilitatorScheme(theirSigner))
    const theirSide: Side = {
      verify: (b) => theirs.verify(b.paymentPayload as OfficialPayload, b.requirements as unknown as OfficialRequirements),
      settle: (b) => theirs.settle(b.paymentPayload as OfficialPayload, b.requirements as unknown as OfficialRequirements),
    }

    const client = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new OfficialClientScheme(s.payer, { rpcUrl: chain.url }))
    const makeBodies = async (count: number): Promise<Body[]> => {
      const bodies: Body[] = []
      const run = await runConcurrent(count, 8, async () => {
        const paymentPayload = await client.createPaymentPayload({ x402Version: 2, resource: { url: 'http://bench.local/paid' }, accepts: [requirements] } as never)
        bodies.push({ paymentPayload, requirements })
      })
      check(run.errors.length === 0, `the official client builds payments (${String(run.errors[0])})`)
      return bodies
    }
    // Until V8 has compiled the hot code (a few hundred settles in), a burst spends about as much CPU
    // on the compiler's threads as on the settles: each side settles untimed payments first.
    progress(`Solana: JIT warm-up, ${c.jitWarmupSettles} untimed settles each`)
    for (const [name, side] of [['ours', ourSide], ['theirs', theirSide]] as const) {
      await settleInBursts(await makeBodies(c.jitWarmupSettles), c.settleConcurrency, side.settle, name)
    }
    progress(`Solana: building ${c.warmup + Math.max(c.latency, c.concurrent)} payloads with the official client`)
    const bodies = await makeBodies(c.warmup + Math.max(c.latency, c.concurrent))
    for (const [name, side] of [['ours', ourSide], ['theirs', theirSide]] as const) {
      const first = await side.verify(bodies[0]!)
      check(first.isValid, `${name} accepts the benchmark payload (${JSON.stringify(first)})`)
      await runConcurrent(c.warmup, 1, (i) => side.verify(bodies[i]!))
    }

    const totals = { ours: newTotals(), theirs: newTotals() }
    for (let round = 0; round < c.rounds; round++) {
      progress(`Solana: verify round ${round + 1}/${c.rounds}`)
      for (const [name, side] of [['ours', ourSide], ['theirs', theirSide]] as const) {
        const perRound = c.latency / c.rounds
        const parallelPerRound = c.concurrent / c.rounds
        await chain.resetStats()
        const cpuBefore = { facilitator: ownCpuMs(), chain: (await chain.stats()).cpuMs }
        const sequential = await runConcurrent(perRound, 1, async (i) => {
          const answer = await side.verify(bodies[c.warmup + round * perRound + i]!)
          if (!answer.isValid) throw new Error(answer.invalidReason)
        })
        const { requests } = await chain.stats()
        const parallel = await runConcurrent(parallelPerRound, c.concurrency, async (i) => {
          const answer = await side.verify(bodies[c.warmup + round * parallelPerRound + i]!)
          if (!answer.isValid) throw new Error(answer.invalidReason)
        })
        check(sequential.errors.length === 0 && parallel.errors.length === 0, `every ${name} verify succeeds (${String(sequential.errors[0] ?? parallel.errors[0])})`)
        const facilitatorCpuMs = ownCpuMs() - cpuBefore.facilitator
        const chainCpuMs = (await chain.stats()).cpuMs - cpuBefore.chain
        const t = totals[name]
        t.facilitatorCpuMs += facilitatorCpuMs
        t.chainCpuMs += chainCpuMs
        t.durations.push(...sequential.durations)
        t.sequentialMs += sequential.elapsedMs
        t.parallelMs += parallel.elapsedMs
        t.requests += requests
      }
    }
    const verifies = c.latency + c.concurrent
    const seqRate = (t: Totals) => (c.latency * 1000) / t.sequentialMs
    const parRate = (t: Totals) => (c.concurrent * 1000) / t.parallelMs
    rows.push(
      row('Solana verify', 'latency p50', 'ms', 'lower', percentile(totals.ours.durations, 50), percentile(totals.theirs.durations, 50)),
      row('Solana verify', 'latency p99', 'ms', 'lower', percentile(totals.ours.durations, 99), percentile(totals.theirs.durations, 99)),
      row('Solana verify', 'throughput, concurrency 1', 'verify/s', 'higher', seqRate(totals.ours), seqRate(totals.theirs)),
      row('Solana verify', `throughput, concurrency ${c.concurrency}`, 'verify/s', 'higher', parRate(totals.ours), parRate(totals.theirs)),
      row('Solana verify', 'RPC requests per verify', 'requests', 'lower', totals.ours.requests / c.latency, totals.theirs.requests / c.latency, 'HTTP requests seen by the RPC server (a JSON-RPC batch counts once)'),
      row('Solana verify', 'facilitator CPU per verify', 'ms', 'lower', totals.ours.facilitatorCpuMs / verifies, totals.theirs.facilitatorCpuMs / verifies, 'the bench process (every thread); the chain runs in its own'),
      row('Solana verify', 'chain CPU per verify', 'ms', 'lower', totals.ours.chainCpuMs / verifies, totals.theirs.chainCpuMs / verifies, 'the LiteSVM JSON-RPC process'),
    )

    progress(`Solana: settle, ${c.settleRounds} rounds of ${c.settle} payments each, interleaved with the chain floor`)
    const burstOf = async (side: Side, bodies: readonly Body[]) => {
      const cpuBefore = { facilitator: ownCpuMs(), chain: (await chain.stats()).cpuMs }
      const burst = await runConcurrent(bodies.length, c.settleConcurrency, async (i) => {
        const answer = await side.settle(bodies[i]!)
        if (!answer.success) throw new Error(answer.errorReason)
      })
      return { burst, facilitatorCpuMs: ownCpuMs() - cpuBefore.facilitator, chainCpuMs: (await chain.stats()).cpuMs - cpuBefore.chain }
    }
    // Each round times the chain floor (plain and with the checks) and a burst of each side back to back,
    // the order reversed every round, on bodies built before the round: a chain that slows as its status
    // cache grows, or a neighbour's load, weighs on the floor and the bursts alike, and the ratio is the
    // median of the rounds' ratios, not one burst against the median of a few floors.
    const settleSides = [['ours', ourSide], ['theirs', theirSide]] as const
    const bursts = { ours: [] as number[], theirs: [] as number[] }
    const cpu = { ours: { facilitator: 0, chain: 0 }, theirs: { facilitator: 0, chain: 0 } }
    const failed = { ours: 0, theirs: 0 }
    const floors: number[] = []
    const floorChainCpu: number[] = []
    const checkedFloors: number[] = []
    const oursOverChecked: number[] = []
    for (let round = 0; round < c.settleRounds; round++) {
      progress(`Solana: settle round ${round + 1}/${c.settleRounds}`)
      const bodies = { ours: await makeBodies(c.settle), theirs: await makeBodies(c.settle), floor: await makeBodies(c.settle), checked: await makeBodies(c.settle) }
      const steps = [
        async () => {
          const before = (await chain.stats()).cpuMs
          floors.push(await chainFloor(chain.url, bodies.floor, s.feePayer))
          floorChainCpu.push(((await chain.stats()).cpuMs - before) / c.settle)
          checkedFloors.push(await chainFloor(chain.url, bodies.checked, s.feePayer, true))
        },
        ...settleSides.map(([name, side]) => async () => {
          const run = await burstOf(side, bodies[name])
          bursts[name].push(run.burst.perSecond)
          cpu[name].facilitator += run.facilitatorCpuMs
          cpu[name].chain += run.chainCpuMs
          failed[name] += run.burst.errors.length
          if (run.burst.errors.length > 0) progress(`Solana: ${name} settle failures: ${run.burst.errors.length} in the burst (${String(run.burst.errors[0])})`)
        }),
      ]
      for (const step of round % 2 === 0 ? steps : [...steps].reverse()) await step()
      oursOverChecked.push(bursts.ours.at(-1)! / checkedFloors.at(-1)!)
    }
    const sequentialOf = async (side: Side, name: string) => {
      const mine = await makeBodies(c.receiptSamples)
      const sequential = await runConcurrent(c.receiptSamples, 1, async (i) => {
        const answer = await side.settle(mine[i]!)
        if (!answer.success) throw new Error(answer.errorReason)
      })
      if (sequential.errors.length > 0) progress(`Solana: ${name} sequential settle failures: ${sequential.errors.length} (${String(sequential.errors[0])})`)
      return sequential
    }
    const sequential = { ours: await sequentialOf(ourSide, 'ours'), theirs: await sequentialOf(theirSide, 'theirs') }
    const settled = c.settle * c.settleRounds
    const rates = (samples: readonly number[]) => samples.map((rate) => rate.toFixed(0)).join(', ')
    const failures = (name: 'ours' | 'theirs') => (failed[name] ? `${name}: ${failed[name]} failed` : '')
    rows.push(
      row('Solana settle', `throughput, ${c.settle} payments of one payer, concurrency ${c.settleConcurrency}`, 'settle/s', 'higher', percentile(bursts.ours, 50), percentile(bursts.theirs, 50),
        [`median of ${c.settleRounds} bursts each (ours ${rates(bursts.ours)}; theirs ${rates(bursts.theirs)})`, failures('ours'), failures('theirs')].filter(Boolean).join('; ')),
      row('Solana settle', 'chain floor: same payments co-signed ahead, all sent at once, confirmations', 'tx/s', 'higher', percentile(bursts.ours, 50), percentile(floors, 50),
        `theirs = the LiteSVM RPC alone (ours / chain), ${rates(floors)}; its CPU ${percentile(floorChainCpu, 50).toFixed(2)} ms a transaction`),
      row('Solana settle', 'chain floor with the checks: verify\'s replay checks and simulations in one batch, then as above', 'tx/s', 'higher', percentile(bursts.ours, 50), percentile(checkedFloors, 50),
        `theirs = the LiteSVM RPC alone: the chain's whole share of a settle (ours / chain), ${rates(checkedFloors)}; ours / floor by round ${oursOverChecked.map((r) => r.toFixed(2)).join(', ')} (median ${percentile(oursOverChecked, 50).toFixed(2)})`),
      row('Solana settle', 'facilitator CPU per settle (burst)', 'ms', 'lower', cpu.ours.facilitator / settled, cpu.theirs.facilitator / settled, 'the bench process (every thread)'),
      row('Solana settle', 'chain CPU per settle (burst)', 'ms', 'lower', cpu.ours.chain / settled, cpu.theirs.chain / settled, 'the LiteSVM JSON-RPC process: simulation, send, execution, status lookups'),
      row('Solana settle', 'time to confirmation p50 (sequential settle)', 'ms', 'lower', percentile(sequential.ours.durations, 50), percentile(sequential.theirs.durations, 50)),
      row('Solana settle', 'time to confirmation p99 (sequential settle)', 'ms', 'lower', percentile(sequential.ours.durations, 99), percentile(sequential.theirs.durations, 99)),
    )
    return rows
  } finally {
    await chain.close()
  }
}

/**
 * Transactions per second the chain itself takes: the payments co-signed by the fee payer
 * ahead of time, sent raw all at once through our lean HTTP client, and every missing
 * status asked for in one call every 2 ms until all are confirmed. `withChecks` first asks
 * the chain, in one batch, what a verify asks it for each payment (the replay check and the
 * simulation of the payer-signed bytes, as src/svm/exact/verify.ts does): the chain's whole
 * share of a settle, with no facilitator's CPU.
 */
async function chainFloor(url: string, bodies: readonly Body[], feePayer: KeyPairSigner, withChecks = false): Promise<number> {
  const signed = await Promise.all(
    bodies.map(async (body) => {
      const wire = (body.paymentPayload as { payload: { transaction: string } }).payload.transaction
      const transaction = await partiallySignTransaction([feePayer.keyPair], getTransactionDecoder().decode(getBase64Encoder().encode(wire)))
      return { payerWire: wire, wire: getBase64EncodedWireTransaction(transaction), signature: getSignatureFromTransaction(transaction) as string }
    }),
  )
  const checks = signed.flatMap(({ payerWire, signature }, i) => [
    { jsonrpc: '2.0', id: 2 * i, method: 'getSignatureStatuses', params: [[signature], { searchTransactionHistory: true }] },
    { jsonrpc: '2.0', id: 2 * i + 1, method: 'simulateTransaction', params: [payerWire, { encoding: 'base64', sigVerify: false, replaceRecentBlockhash: false, commitment: 'confirmed' }] },
  ])
  const post = leanRpc(url)
  const call = async (method: string, params: unknown[]): Promise<unknown> => {
    const parsed = (await post({ jsonrpc: '2.0', id: 0, method, params })) as { result?: unknown; error?: { message: string } }
    if (parsed.error) throw new Error(`${method}: ${parsed.error.message}`)
    return parsed.result
  }
  const started = performance.now()
  const checked = withChecks ? ((await post(checks)) as { id: number; result?: { value: unknown }; error?: unknown }[]) : []
  await Promise.all(signed.map(({ wire }) => call('sendTransaction', [wire, { encoding: 'base64', skipPreflight: true }])))
  const waiting = new Set(signed.map(({ signature }) => signature))
  const giveUp = started + 20_000
  while (waiting.size > 0) {
    check(performance.now() < giveUp, 'the chain floor confirms every transaction within 20 s')
    const asked = [...waiting]
    const { value } = (await call('getSignatureStatuses', [asked])) as { value: ({ err: unknown; confirmationStatus?: string } | null)[] }
    value.forEach((status, index) => {
      if (!status) return
      check(status.err === null, `a pre-signed payment failed on chain (${JSON.stringify(status.err)})`)
      if (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized') waiting.delete(asked[index]!)
    })
    if (waiting.size > 0) await new Promise((resolve) => setTimeout(resolve, 2))
  }
  const rate = (bodies.length * 1000) / (performance.now() - started)
  if (withChecks) {
    // Read after the clock stopped: every check answered, no payment was seen before, and every simulation passed.
    check(checked.length === checks.length, 'every check of the chain floor answered')
    for (const answer of checked) {
      check(answer.error === undefined && answer.result !== undefined, `a check of the chain floor failed: ${JSON.stringify(answer.error)}`)
      const value = answer.result.value
      // Odd ids are simulations (no error), even ids replay checks (no status yet).
      check(answer.id % 2 === 1 ? (value as { err: unknown }).err === null : (value as unknown[])[0] === null, 'each check passes')
    }
  }
  return rate
}

export interface SolanaChain {
  readonly url: string
  /** The chain process, for CPU figures. */
  readonly pid: number | undefined
  readonly scenario: { mint: string; payTo: string; feePayer: KeyPairSigner; payer: KeyPairSigner }
  /** The fee payer's 32-byte seed (hex), for a facilitator in another process. */
  readonly feePayerSeed: string
  /** Gives each owner a token account holding tokens of the scenario's mint. */
  fund(owners: readonly string[]): Promise<void>
  resetStats(): Promise<void>
  /** HTTP requests the RPC server saw since the last reset, and the CPU time its process used so far. */
  stats(): Promise<{ requests: number; cpuMs: number }>
  close(): Promise<void>
}

/** Starts bench/solana-chain.ts in a child process with keys made here, and waits until it serves. */
export async function startSolanaChain(): Promise<SolanaChain> {
  const seeds = [randomBytes(32), randomBytes(32)] as const
  const child = fork(fileURLToPath(new URL('./solana-chain.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_SOLANA_SEEDS: seeds.map((seed) => seed.toString('hex')).join(',') },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = <T>(pick: (message: Record<string, unknown>) => T | undefined): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: unknown) => {
        const value = pick(message as Record<string, unknown>)
        if (value === undefined) return
        child.off('message', onMessage)
        child.off('exit', onExit)
        resolve(value)
      }
      const onExit = (code: number | null) => reject(new Error(`the Solana chain process exited (${code})`))
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
  const ready = await next((m) => (m.ready ? (m as { url: string; mint: string; payTo: string }) : undefined))
  const [feePayer, payer] = await Promise.all(seeds.map((seed) => createKeyPairSignerFromPrivateKeyBytes(seed)))
  return {
    url: ready.url,
    pid: child.pid,
    feePayerSeed: seeds[0].toString('hex'),
    scenario: { mint: ready.mint, payTo: ready.payTo, feePayer: feePayer!, payer: payer! },
    async fund(owners) {
      const done = next((m) => (m.funded !== undefined || m.fundFailed !== undefined ? m : undefined))
      child.send({ fund: owners })
      const answer = await done
      if (answer.fundFailed !== undefined) throw new Error(`the Solana chain could not fund the payers: ${String(answer.fundFailed)}`)
    },
    async resetStats() {
      const done = next((m) => (m.reset ? true : undefined))
      child.send('reset-stats')
      await done
    },
    async stats() {
      const asked = next((m) => m.stats as { requests: number; cpuMs: number } | undefined)
      child.send('stats')
      return asked
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.send('close')
      }),
  }
}

interface Totals {
  durations: number[]
  sequentialMs: number
  parallelMs: number
  requests: number
  facilitatorCpuMs: number
  chainCpuMs: number
}

function newTotals(): Totals {
  return { durations: [], sequentialMs: 0, parallelMs: 0, requests: 0, facilitatorCpuMs: 0, chainCpuMs: 0 }
}
