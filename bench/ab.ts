/**
 * A/B: this working tree (B) against another commit (A), as a black-box HTTP client sees them.
 *
 *   npm run bench -- --against 0ab9a2c            # EVM and Solana rows
 *   npm run bench -- --against main evm           # EVM rows only
 *   npm run bench -- --against main --rounds 3    # fewer rounds per build (9 by default, at least 3)
 *   npm run bench -- --against main --unknown-token   # EVM: the test token not listed in `assets`
 *   npm run bench -- --against main --profile     # also CPU profiles of each server and the RPC calls of
 *                                                 # each request, per row and round (bench/profile-summary.ts reads them)
 *
 * The EVM test token is listed in `assets` (a known token, as USDC is built in) unless
 * --unknown-token: then verify and settle take the path of a token outside the known table.
 *
 * Both builds are built packages (bench/builds.ts: the working tree's dist/, the other commit's
 * built from `git archive` into a cache folder by sha), each served over node:http in a process
 * of its own by bench/ab-server.mjs through the public API both have. They run on the same
 * chains (one anvil, one LiteSVM RPC in its own process), hit by the same load generator
 * (bench/http-load.ts, its own process), with payments of many payers, none paying twice at
 * once (Solana: a payer per payment; EVM: 256 taking turns, see evmWorld), all signed before
 * anything is timed. Verify rows post the same bodies to both builds; settle rows give each
 * build its own payments (and, on EVM, its own key).
 *
 * Rounds alternate between the builds, the first of each pair swapped every round (A B, B A,
 * A B, ...), so a machine that speeds up or slows down over the run (a neighbour's tests, a
 * chain growing one block per settle) weighs on both alike. The table gives the medians of
 * the rounds, and B / A of each pair of rounds (back to back) with their median as the row's ratio.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateKeyPairSigner } from '@solana/kit'
import { x402Client } from '@x402/core/client'
import { ExactSvmScheme as OfficialClientScheme } from '@x402/svm/exact/client'
import { encodeAbiParameters, keccak256, numberToHex, type Address, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { SOLANA_DEVNET } from '../src/index.js'
import { signExactEvmPayment } from '../src/evm/index.js'
import { startEvmFixture, type EvmFixture } from '../test/support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../test/support/fault-proxy.js'
import { median, summarize, type AbRound, type AbRowRounds, type AbRowSummary } from './ab-table.js'
import { buildOf, workingTreeBuild, type Build } from './builds.js'
import { ANVIL_KEY, mineClock } from './evm.js'
import { check, leanRpc, percentile, processCpuMs, progress, runConcurrent, startLoadGenerator, type LoadGenerator } from './measure.js'
import { startSolanaChain } from './svm.js'

export const AB_COUNTS = {
  /**
   * Rounds of each build on each row (`--rounds`, at least 3). Many short rounds: on a shared
   * machine a neighbour's burst then spoils a round or two of a row, which the medians drop.
   */
  rounds: 9,
  verifySequential: 120,
  verifyConcurrent: 400,
  verifyConcurrency: 32,
  settleSequential: 30,
  settleConcurrent: 100,
  settleConcurrency: 10,
  /** Untimed operations of each build before the rounds, so V8 has compiled the hot code. */
  warmupVerifies: 400,
  warmupSettles: 100,
}

export type AbChain = 'evm' | 'svm'

export interface AbOptions {
  readonly against: string
  readonly chains: readonly AbChain[]
  readonly rounds: number
  /** Write a CPU profile of each server for each row and round here. */
  readonly profileDir?: string
  /**
   * EVM: serve the test token as one outside the known table (no `assets`): verify prices the
   * settlement by an estimate, as for any token a facilitator does not list. By default it is
   * listed, as USDC is built in.
   */
  readonly unknownToken?: boolean
}

export interface AbResult {
  readonly a: Build
  readonly b: Build
  readonly counts: typeof AB_COUNTS
  readonly rows: readonly AbRowRounds[]
  readonly summary: readonly AbRowSummary[]
}

type Body = { x402Version: 2; paymentPayload: unknown; paymentRequirements: Record<string, unknown> }

interface RowSpec {
  readonly name: string
  /** A short name for files (profiles). */
  readonly key: string
  readonly path: '/verify' | '/settle'
  readonly count: number
  readonly concurrency: number
}

/** One build's server process (bench/ab-server.mjs). */
interface Served {
  readonly build: Build
  readonly url: string
  stats(): Promise<{ requests: number; cpuMs: number }>
  profile(what: 'start' | 'stop', name: string): Promise<void>
  close(): Promise<void>
}

/** A chain with both builds served on it, and payment bodies of fresh payers. */
interface World {
  readonly name: string
  readonly chainPid: number | undefined
  /** `count` bodies, none two of them in flight at once from the same payer (see each world). */
  bodies(count: number): Promise<Body[]>
  /** Before each round (EVM: a block, so the chain's clock is now). */
  beforeRound(): Promise<void>
  readonly a: Served
  readonly b: Served
  /** With --profile: a proxy between each build and the chain, recording the calls of each request. */
  readonly proxies?: { readonly a: FaultProxy; readonly b: FaultProxy }
  stop(): Promise<void>
}

const SERVER = fileURLToPath(new URL('./ab-server.mjs', import.meta.url))
const EVM_NETWORK = 'eip155:84532'

export async function benchAgainst(options: AbOptions): Promise<AbResult> {
  const counts = { ...AB_COUNTS, rounds: options.rounds }
  check(counts.rounds >= 3, '--rounds is at least 3')
  const a = buildOf(options.against)
  const b = workingTreeBuild()
  progress(`A/B: A = ${a.label} (${a.dist}), B = ${b.label} (${b.dist}); ${counts.rounds} rounds each, alternating`)
  const dir = mkdtempSync(join(tmpdir(), 'x402-bench-ab-'))
  if (options.profileDir) mkdirSync(options.profileDir, { recursive: true })
  const load = await startLoadGenerator()
  const rows: AbRowRounds[] = []
  try {
    for (const chain of options.chains) {
      const world = chain === 'evm' ? await evmWorld(a, b, options.profileDir, options.unknownToken ?? false) : await svmWorld(a, b, options.profileDir)
      try {
        rows.push(...(await runWorld(world, load, counts, dir, options.profileDir)))
      } finally {
        await world.stop()
      }
    }
  } finally {
    load.close()
    rmSync(dir, { recursive: true, force: true })
  }
  return { a, b, counts, rows, summary: rows.map(summarize) }
}

async function runWorld(world: World, load: LoadGenerator, c: typeof AB_COUNTS, dir: string, profileDir: string | undefined): Promise<AbRowRounds[]> {
  const specs: RowSpec[] = [
    { name: `${world.name} verify, concurrency 1`, key: 'verify-1', path: '/verify', count: c.verifySequential, concurrency: 1 },
    { name: `${world.name} verify, concurrency ${c.verifyConcurrency}`, key: `verify-${c.verifyConcurrency}`, path: '/verify', count: c.verifyConcurrent, concurrency: c.verifyConcurrency },
    { name: `${world.name} settle, concurrency 1`, key: 'settle-1', path: '/settle', count: c.settleSequential, concurrency: 1 },
    { name: `${world.name} settle, concurrency ${c.settleConcurrency}`, key: `settle-${c.settleConcurrency}`, path: '/settle', count: c.settleConcurrent, concurrency: c.settleConcurrency },
  ]
  // Every body up front: verify rows post the same bodies to both builds, settle rows fresh ones to each.
  const verifyPerRound = specs.filter((s) => s.path === '/verify').reduce((sum, s) => sum + s.count, 0)
  const settlePerRound = specs.filter((s) => s.path === '/settle').reduce((sum, s) => sum + s.count, 0)
  const total = c.warmupVerifies + c.rounds * verifyPerRound + 2 * (c.warmupSettles + c.rounds * settlePerRound)
  progress(`${world.name}: ${total} payments, each from a payer of its own`)
  const all = await world.bodies(total)
  let taken = 0
  const take = (count: number, name: string): string => {
    const file = join(dir, `${world.name}-${name}.json`)
    writeFileSync(file, JSON.stringify(all.slice(taken, taken + count)))
    taken += count
    return file
  }
  const warmVerify = take(c.warmupVerifies, 'warm-verify')
  const warmSettle = { a: take(c.warmupSettles, 'warm-settle-a'), b: take(c.warmupSettles, 'warm-settle-b') }
  const files = specs.map((spec) =>
    Array.from({ length: c.rounds }, (_, round) => {
      if (spec.path === '/verify') {
        const shared = take(spec.count, `${spec.key}-${round}`)
        return { a: shared, b: shared }
      }
      return { a: take(spec.count, `${spec.key}-${round}-a`), b: take(spec.count, `${spec.key}-${round}-b`) }
    }),
  )

  // Untimed: a first verify of each (a clear error if a build refuses the payments), then the JIT warm-up.
  progress(`${world.name}: warm-up, ${c.warmupVerifies} verifies and ${c.warmupSettles} settles through each build`)
  await world.beforeRound()
  for (const side of ['a', 'b'] as const) {
    const served = world[side]
    await load.run({ url: served.url, path: '/verify', count: 1, concurrency: 1, bodiesFile: warmVerify }).catch((error: unknown) => {
      throw new Error(`${served.build.label} refuses the benchmark's payments on ${world.name}: ${error instanceof Error ? error.message : String(error)}`)
    })
    await load.run({ url: served.url, path: '/verify', count: c.warmupVerifies, concurrency: c.verifyConcurrency, bodiesFile: warmVerify })
    await load.run({ url: served.url, path: '/settle', count: c.warmupSettles, concurrency: c.settleConcurrency, bodiesFile: warmSettle[side] })
  }

  const rounds = specs.map(() => ({ a: [] as AbRound[], b: [] as AbRound[] }))
  for (let round = 0; round < c.rounds; round++) {
    const order = round % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)
    progress(`${world.name}: round ${round + 1}/${c.rounds} (${order.join(', ').toUpperCase()})`)
    await world.beforeRound()
    for (const [i, spec] of specs.entries()) {
      for (const side of order) {
        const served = world[side]
        const profileName = profileDir ? `${side.toUpperCase()}-${served.build.sha.slice(0, 7)}-${world.name}-${spec.key}-round${round + 1}` : undefined
        const bodiesFile = files[i]![round]![side]
        const before = { server: await served.stats(), chain: processCpuMs(world.chainPid) }
        const proxy = world.proxies?.[side]
        const callsBefore = proxy?.calls.length ?? 0
        if (profileName) await served.profile('start', profileName)
        const result = await load.run({ url: served.url, path: spec.path, count: spec.count, concurrency: spec.concurrency, bodiesFile })
        if (profileName) await served.profile('stop', profileName)
        const after = { server: await served.stats(), chain: processCpuMs(world.chainPid) }
        if (profileName && proxy) {
          const requests = proxy.calls.slice(callsBefore).map(requestShape)
          const tally = Object.fromEntries([...new Set(requests)].map((shape) => [shape, requests.filter((r) => r === shape).length]))
          writeFileSync(join(profileDir!, `${profileName}.rpc.json`), `${JSON.stringify({ operations: spec.count, requests: requests.length, tally, sequence: requests.slice(0, 40) }, null, 2)}\n`)
        }
        rounds[i]![side].push({
          okPerSecond: (result.ok * 1000) / result.elapsedMs,
          p50Ms: percentile(result.durations, 50),
          p99Ms: percentile(result.durations, 99),
          rpcPerOp: (after.server.requests - before.server.requests) / spec.count,
          serverCpuMsPerOp: (after.server.cpuMs - before.server.cpuMs) / spec.count,
          chainCpuMsPerOp: before.chain === undefined || after.chain === undefined ? Number.NaN : (after.chain - before.chain) / spec.count,
        })
      }
    }
  }
  const out = specs.map((spec, i) => ({ name: spec.name, a: rounds[i]!.a, b: rounds[i]!.b }))
  for (const row of out) progress(`${row.name}: ${median(row.a.map((r) => r.okPerSecond)).toFixed(1)} → ${median(row.b.map((r) => r.okPerSecond)).toFixed(1)} ok/s`)
  return out
}

/**
 * What one RPC request asked, for the --profile tallies: its method, or a batch's methods in
 * order; an eth_call or eth_estimateGas with the 4-byte selector it calls.
 */
export function requestShape(calls: readonly { method: string; params: unknown }[]): string {
  const name = ({ method, params }: { method: string; params: unknown }) => {
    const data = Array.isArray(params) ? (params[0] as { data?: unknown; input?: unknown } | undefined) : undefined
    const input = typeof data?.data === 'string' ? data.data : typeof data?.input === 'string' ? data.input : undefined
    return input && (method === 'eth_call' || method === 'eth_estimateGas') ? `${method}(${input.slice(0, 10)})` : method
  }
  return calls.length === 1 ? name(calls[0]!) : `[${calls.map(name).join(', ')}]`
}

/** Forks bench/ab-server.mjs for `build` with plain node (no tsx: see there) and waits until it serves. */
async function serve(build: Build, spec: Record<string, unknown>): Promise<Served> {
  const child: ChildProcess = fork(SERVER, [], {
    execArgv: [],
    env: { ...process.env, BENCH_AB_SERVER: JSON.stringify({ dist: build.dist, label: build.label, ...spec }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = <T>(pick: (message: Record<string, unknown>) => T | undefined): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: unknown) => {
        const m = message as Record<string, unknown>
        if (typeof m.failed === 'string') return finish(() => reject(new Error(m.failed as string)))
        const value = pick(m)
        if (value !== undefined) finish(() => resolve(value))
      }
      const onExit = (code: number | null) => finish(() => reject(new Error(`the server of ${build.label} exited (${code})`)))
      const finish = (settle: () => void) => {
        child.off('message', onMessage)
        child.off('exit', onExit)
        settle()
      }
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
  const url = await next((m) => (typeof m.ready === 'string' ? m.ready : undefined))
  return {
    build,
    url,
    async stats() {
      const asked = next((m) => m.stats as { requests: number; cpuMs: number } | undefined)
      child.send('stats')
      return asked
    },
    async profile(what, name) {
      const done = next((m) => ('profiled' in m ? true : undefined))
      child.send({ profile: what, name })
      await done
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || !child.connected) return resolve()
        child.once('exit', () => resolve())
        child.send('exit')
      }),
  }
}

/**
 * One anvil with the test token; A settles with anvil account 1, B with account 2.
 *
 * The payers take turns from a pool of EVM_PAYERS, each a payer of its own to the facilitators
 * (no two operations in flight share one; the EVM adapters keep nothing per payer between
 * operations), rather than a new payer per operation: anvil recomputes the storage of every
 * account a block touches from all its slots, and each payer is a slot of the token for good
 * (zeroed, it stays). Measured here: 2-3 ms of anvil CPU per settle on a fresh token, 7-9 ms
 * once 4,600 payers were funded, which would have made every settle row mostly anvil's.
 */
async function evmWorld(a: Build, b: Build, profileDir: string | undefined, unknownToken: boolean): Promise<World> {
  const world = await startEvmFixture({ signerCount: 2 })
  const served: Served[] = []
  const proxies = profileDir ? { a: await startFaultProxy(world.node.rpcUrl), b: await startFaultProxy(world.node.rpcUrl) } : undefined
  try {
    for (const [index, build] of [a, b].entries()) {
      const rpcUrl = proxies?.[index === 0 ? 'a' : 'b'].url ?? world.node.rpcUrl
      served.push(await serve(build, { chain: 'evm', rpcUrl, ...(profileDir ? { profileDir } : {}), evm: { network: EVM_NETWORK, key: ANVIL_KEY(index + 1), ...(unknownToken ? {} : { asset: world.knownAsset }) } }))
    }
    const requirements = world.requirementsV2({ amount: '1000' })
    const payers = Array.from({ length: EVM_PAYERS }, () => privateKeyToAccount(generatePrivateKey()))
    await fundEvmPayers(world, payers, 10n ** 15n)
    let next = 0
    return {
      name: 'EVM',
      chainPid: world.node.pid,
      a: served[0]!,
      b: served[1]!,
      ...(proxies ? { proxies } : {}),
      beforeRound: () => mineClock(world),
      async bodies(count) {
        const signed: Body[] = []
        for (let i = 0; i < count; i++) {
          const payer = payers[next++ % payers.length]!
          signed.push({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements, validForSeconds: 3_600 }), paymentRequirements: requirements })
        }
        return signed
      },
      async stop() {
        await Promise.all(served.map((s) => s.close()))
        await Promise.all([proxies?.a.close(), proxies?.b.close()])
        await world.stop()
      },
    }
  } catch (error) {
    await Promise.all(served.map((s) => s.close()))
    await Promise.all([proxies?.a.close(), proxies?.b.close()])
    await world.stop()
    throw error
  }
}

/** EVM payers taking turns (see evmWorld): eight times the highest concurrency. */
const EVM_PAYERS = 256

/**
 * Token balances for many payers at once: the test token's balance slots written with
 * anvil_setStorageAt in JSON-RPC batches (a mint each would add a block each). The slot of the
 * balances mapping (Solidity's layout: keccak of the key and the mapping's slot) is found from
 * one real mint.
 */
async function fundEvmPayers(world: EvmFixture, payers: readonly LocalAccount[], amount: bigint): Promise<void> {
  const minted = await world.newPayer(amount)
  const slotOf = (owner: Address, mappingSlot: bigint) => keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [owner, mappingSlot]))
  let mappingSlot: bigint | undefined
  for (let slot = 0n; slot < 32n && mappingSlot === undefined; slot++) {
    const value = await world.node.publicClient.getStorageAt({ address: world.token.address, slot: slotOf(minted.address, slot) })
    if (value !== undefined && BigInt(value) === amount) mappingSlot = slot
  }
  check(mappingSlot !== undefined, 'the test token keeps its balances in a mapping within its first 32 slots')
  const post = leanRpc(world.node.rpcUrl)
  const value: Hex = numberToHex(amount, { size: 32 })
  for (let from = 0; from < payers.length; from += 500) {
    const batch = payers.slice(from, from + 500).map((payer, id) => ({ jsonrpc: '2.0', id, method: 'anvil_setStorageAt', params: [world.token.address, slotOf(payer.address, mappingSlot!), value] }))
    const answers = (await post(batch)) as { error?: { message: string } }[]
    check(answers.every((answer) => answer.error === undefined), `anvil sets the payers' balances (${answers.find((answer) => answer.error)?.error?.message ?? ''})`)
  }
  const last = payers[payers.length - 1]
  if (last) {
    const balance = await world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'balanceOf', args: [last.address] })
    check(balance === amount, 'a payer funded through its storage slot holds its tokens')
  }
}

/**
 * One LiteSVM RPC (its own process); both builds co-sign with the same fee payer, as a Solana fee
 * payer has no nonce. Every payment comes from a payer of its own (LiteSVM's cost does not grow
 * with its accounts, and the Solana adapters cache token-account addresses by owner).
 */
async function svmWorld(a: Build, b: Build, profileDir: string | undefined): Promise<World> {
  const chain = await startSolanaChain()
  const served: Served[] = []
  const proxies = profileDir ? { a: await startFaultProxy(chain.url), b: await startFaultProxy(chain.url) } : undefined
  try {
    for (const [index, build] of [a, b].entries()) {
      const rpcUrl = proxies?.[index === 0 ? 'a' : 'b'].url ?? chain.url
      served.push(await serve(build, { chain: 'svm', rpcUrl, svm: { feePayerSeed: chain.feePayerSeed }, ...(profileDir ? { profileDir } : {}) }))
    }
    const s = chain.scenario
    const requirements = { scheme: 'exact', network: SOLANA_DEVNET, amount: '1000', asset: s.mint, payTo: s.payTo, maxTimeoutSeconds: 60, extra: { feePayer: s.feePayer.address } }
    return {
      name: 'Solana',
      chainPid: chain.pid,
      a: served[0]!,
      b: served[1]!,
      ...(proxies ? { proxies } : {}),
      beforeRound: async () => undefined,
      async bodies(count) {
        const payers = await Promise.all(Array.from({ length: count }, () => generateKeyPairSigner()))
        await chain.fund(payers.map((payer) => payer.address))
        // Built by the official x402 client, as a real one would (each with a random memo nonce).
        const bodies: Body[] = new Array(count)
        const run = await runConcurrent(count, 8, async (i) => {
          const client = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new OfficialClientScheme(payers[i]!, { rpcUrl: chain.url }))
          const paymentPayload = await client.createPaymentPayload({ x402Version: 2, resource: { url: 'http://bench.local/paid' }, accepts: [requirements] } as never)
          bodies[i] = { x402Version: 2, paymentPayload, paymentRequirements: requirements }
        })
        check(run.errors.length === 0, `the official client builds payments (${String(run.errors[0])})`)
        return bodies
      },
      async stop() {
        await Promise.all(served.map((x) => x.close()))
        await Promise.all([proxies?.a.close(), proxies?.b.close()])
        await chain.close()
      },
    }
  } catch (error) {
    await Promise.all(served.map((x) => x.close()))
    await Promise.all([proxies?.a.close(), proxies?.b.close()])
    await chain.close()
    throw error
  }
}
