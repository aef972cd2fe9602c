/**
 * EVM through Permit2: our `exact` (Permit2) and `upto` against the official @x402/evm 2.27
 * facilitator schemes (`ExactEvmScheme`, `UptoEvmScheme`, under @x402/core's `x402Facilitator`), on
 * the same anvil, with the real Permit2 (compiled from Uniswap's sources) and our x402 proxies at
 * their canonical addresses (test/support/permit2-contracts.ts). Payloads come from the official
 * clients. An upto payload names the facilitator that may settle it, so each side verifies and
 * settles payloads naming its own key (same payer, same shape); exact payloads are shared.
 */
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { ExactEvmScheme as ExactClient } from '@x402/evm/exact/client'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { UptoEvmScheme as UptoClient } from '@x402/evm/upto/client'
import { UptoEvmScheme } from '@x402/evm/upto/facilitator'
import { encodeFunctionData, type Hex, type LocalAccount } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { createNonceManager, jsonRpc } from 'viem/nonce'
import { createFacilitator } from '../src/index.js'
import { eip3009Abi, evmSchemes, exactPermit2ProxyAbi, MULTICALL3_ADDRESS, multicall3Abi, PERMIT2_ADDRESS, privateKeySigner, uptoPermit2ProxyAbi, X402_EXACT_PERMIT2_PROXY, X402_UPTO_PERMIT2_PROXY } from '../src/evm/index.js'
import { erc20AllowanceAbi, permit2NonceBitmapAbi } from '../src/evm/codec/permit2-abi.js'
import type { PaymentPayload } from '../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../src/schemas/requirements.js'
import { ANVIL_MNEMONIC } from '../test/support/anvil.js'
import { startEvmFixture, type EvmFixture } from '../test/support/evm-fixture.js'
import { startFaultProxy } from '../test/support/fault-proxy.js'
import { installPermit2, newPermit2Payer } from '../test/support/permit2-contracts.js'
import { ANVIL_KEY, mineClock } from './evm.js'
import { officialEvmSigner } from '../test/support/official-evm-signer.js'
import { ALL_CPUS, awaitReceipts, check, leanRpc, ownCpuMs, percentile, pinProcess, processCpuMs, progress, row, runConcurrent, settleInBursts, type Row } from './measure.js'

export const PERMIT2_COUNTS = {
  /** Untimed verifies of each side before the rounds. */
  warmup: 40,
  rounds: 3,
  latency: 300,
  concurrent: 600,
  concurrency: 32,
  /** Valid verifies of each side through the counting proxy. */
  counted: 50,
  settle: 100,
  settleConcurrency: 100,
  /** Bursts per side and runs of the chain floor, each on a fresh anvil; the table gives the median. */
  settleRounds: 5,
  /** Untimed settles of each side and scheme before anything is timed (V8 compiles the hot code; see evm.ts). */
  jitWarmupSettles: 500,
}

type Scheme = 'exact' | 'upto'

interface Side {
  verify(payload: PaymentPayload, requirements: PaymentRequirementsV2): Promise<{ isValid: boolean; invalidReason?: string }>
  settle(payload: PaymentPayload, requirements: PaymentRequirementsV2): Promise<{ success: boolean; errorReason?: string }>
  /** The key that settles (the facilitator an upto payload must name). */
  readonly address: Hex
}

interface World {
  readonly fixture: EvmFixture
  /** Requirements of a scheme naming `facilitator` (upto only). */
  requirements(scheme: Scheme, facilitator: Hex): PaymentRequirementsV2
  /** A payer holding `amount` of the token with Permit2 approved. */
  payer(amount: bigint): Promise<LocalAccount>
  stop(): Promise<void>
}

async function startPermit2World(signerCount: number): Promise<World> {
  const fixture = await startEvmFixture({ signerCount })
  try {
    await installPermit2(fixture.node)
  } catch (error) {
    await fixture.stop()
    throw error
  }
  const extra = { name: fixture.token.name, version: fixture.token.version, assetTransferMethod: 'permit2' }
  return {
    fixture,
    // Deadlines of an hour (the official client signs now + maxTimeoutSeconds): payloads signed ahead stay valid.
    requirements: (scheme, facilitator) =>
      fixture.requirementsV2({ scheme, amount: '1000', maxTimeoutSeconds: 3_600, extra: scheme === 'upto' ? { ...extra, facilitatorAddress: facilitator } : extra }),
    payer: (amount) => newPermit2Payer(fixture, { amount }),
    stop: () => fixture.stop(),
  }
}

/** `count` payloads of the official client for these requirements. */
async function officialPayloads(scheme: Scheme, payer: LocalAccount, requirements: PaymentRequirementsV2, count: number): Promise<PaymentPayload[]> {
  const client = new x402Client().setSpendControls(false).register('eip155:84532', scheme === 'exact' ? new ExactClient(payer) : new UptoClient(payer))
  const required = { x402Version: 2, resource: { url: 'https://example.test/paid', description: 'paid', mimeType: 'application/json' }, accepts: [{ ...requirements, extra: requirements.extra ?? {} }] }
  return Promise.all(Array.from({ length: count }, async () => (await client.createPaymentPayload(required as Parameters<typeof client.createPaymentPayload>[0])) as unknown as PaymentPayload))
}

/**
 * Our facilitator (`evmSchemes`, on its default transport) and the official one (its documented
 * signer over viem clients with a nonce manager, as in evm.ts) on `rpcUrl`, each with its own key.
 */
function sidesOf(world: World, ourKey: LocalAccount, theirKey: LocalAccount, rpcUrl = world.fixture.node.rpcUrl): { ours: Side; theirs: Side; close(): Promise<void> } {
  const { fixture } = world
  const ourSigner = privateKeySigner(ANVIL_KEY(fixture.signers.indexOf(ourKey) + 1))
  check(ourSigner.address === ourKey.address, 'our facilitator key is an anvil account from 1 on')
  const facilitator = createFacilitator({
    schemes: evmSchemes(fixture.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [rpcUrl], assets: [fixture.knownAsset] }], signers: [ourSigner], receiptPollIntervalMs: 50 })),
  })
  const ours: Side = {
    address: ourSigner.address,
    verify: (paymentPayload, paymentRequirements) => facilitator.verify({ x402Version: 2, paymentPayload, paymentRequirements }),
    settle: (paymentPayload, paymentRequirements) => facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements }),
  }
  const theirAccount = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: fixture.signers.indexOf(theirKey) + 1, nonceManager: createNonceManager({ source: jsonRpc() }) })
  check(theirAccount.address === theirKey.address, 'the official facilitator key is an anvil account')
  const theirSigner = officialEvmSigner(theirAccount, fixture.node.chain, rpcUrl)
  const official = new x402Facilitator().register('eip155:84532', new ExactEvmScheme(theirSigner)).register('eip155:84532', new UptoEvmScheme(theirSigner))
  const theirs: Side = {
    address: theirAccount.address,
    verify: (payload, req) => official.verify(payload as unknown as OfficialPayload, req as unknown as OfficialRequirements),
    settle: (payload, req) => official.settle(payload as unknown as OfficialPayload, req as unknown as OfficialRequirements),
  }
  return { ours, theirs, close: () => facilitator.close() }
}

export async function benchEvmPermit2(): Promise<Row[]> {
  const rows: Row[] = []
  // Both schemes warm up before either is timed: they share most of their code, and with a warm-up of
  // its own scheme only, the section that ran first measured V8 still compiling (exact first: 0.80 to
  // 0.98 ms of CPU a settle; the same exact rows run second: 0.49 ms).
  for (const scheme of ['exact', 'upto'] as const) {
    progress(`EVM Permit2 ${scheme}: JIT warm-up, ${PERMIT2_COUNTS.jitWarmupSettles} untimed settles each on a chain of their own`)
    await jitWarmUp(scheme)
  }
  for (const scheme of ['exact', 'upto'] as const) rows.push(...(await benchScheme(scheme)))
  return rows
}

async function benchScheme(scheme: Scheme): Promise<Row[]> {
  const c = PERMIT2_COUNTS
  const section = `EVM Permit2 ${scheme}`
  const rows: Row[] = []

  progress(`${section}: verify ${c.latency} sequential, ${c.concurrent} at concurrency ${c.concurrency}, ${c.rounds} alternating rounds`)
  const world = await startPermit2World(2)
  try {
    const [ourKey, theirKey] = world.fixture.signers
    check(ourKey !== undefined && theirKey !== undefined, 'two facilitator keys')
    const sides = sidesOf(world, ourKey, theirKey)
    const payer = await world.payer(10n ** 15n)
    const perSide = c.warmup + Math.max(c.latency, c.concurrent)
    const named = async (side: Side) => {
      const requirements = world.requirements(scheme, side.address)
      return { side, requirements, payloads: await officialPayloads(scheme, payer, requirements, perSide) }
    }
    const ours = await named(sides.ours)
    // exact payloads do not name a facilitator: the same ones go to both sides.
    const theirs = scheme === 'exact' ? { ...ours, side: sides.theirs } : await named(sides.theirs)
    // The chain's clock is the last block's (see mineClock): make it now before anything is checked.
    await mineClock(world.fixture)
    for (const [name, s] of [['ours', ours], ['theirs', theirs]] as const) {
      const first = await s.side.verify(s.payloads[0]!, s.requirements)
      check(first.isValid, `${name} accepts the ${scheme} Permit2 benchmark payload (${first.invalidReason ?? ''})`)
    }
    for (const s of [ours, theirs]) await runConcurrent(c.warmup, 1, (i) => s.side.verify(s.payloads[i]!, s.requirements))
    const totals = { ours: { durations: [] as number[], sequentialMs: 0, parallelMs: 0, cpuMs: 0 }, theirs: { durations: [] as number[], sequentialMs: 0, parallelMs: 0, cpuMs: 0 } }
    for (let round = 0; round < c.rounds; round++) {
      progress(`${section}: verify round ${round + 1}/${c.rounds}`)
      await mineClock(world.fixture)
      // Rounds alternate between the two sides so background load on the machine hits both alike.
      for (const [name, s] of [['ours', ours], ['theirs', theirs]] as const) {
        const perRound = c.latency / c.rounds
        const parallelPerRound = c.concurrent / c.rounds
        const cpuBefore = ownCpuMs()
        const valid = async (payload: PaymentPayload) => {
          const answer = await s.side.verify(payload, s.requirements)
          if (!answer.isValid) throw new Error(answer.invalidReason)
        }
        const sequential = await runConcurrent(perRound, 1, (i) => valid(s.payloads[c.warmup + round * perRound + i]!))
        const parallel = await runConcurrent(parallelPerRound, c.concurrency, (i) => valid(s.payloads[c.warmup + round * parallelPerRound + i]!))
        check(sequential.errors.length === 0 && parallel.errors.length === 0, `every ${scheme} Permit2 verify of ${name} succeeds (${String(sequential.errors[0] ?? parallel.errors[0])})`)
        const t = totals[name]
        t.cpuMs += ownCpuMs() - cpuBefore
        t.durations.push(...sequential.durations)
        t.sequentialMs += sequential.elapsedMs
        t.parallelMs += parallel.elapsedMs
      }
    }
    const rate = (ms: number, count: number) => (count * 1000) / ms
    rows.push(
      row(section + ' verify', 'latency p50', 'ms', 'lower', percentile(totals.ours.durations, 50), percentile(totals.theirs.durations, 50)),
      row(section + ' verify', 'throughput, concurrency 1', 'verify/s', 'higher', rate(totals.ours.sequentialMs, c.latency), rate(totals.theirs.sequentialMs, c.latency)),
      row(section + ' verify', `throughput, concurrency ${c.concurrency}`, 'verify/s', 'higher', rate(totals.ours.parallelMs, c.concurrent), rate(totals.theirs.parallelMs, c.concurrent)),
      row(section + ' verify', 'facilitator CPU per verify', 'ms', 'lower', totals.ours.cpuMs / (c.latency + c.concurrent), totals.theirs.cpuMs / (c.latency + c.concurrent), 'the bench process (every thread); anvil runs in its own'),
    )
    await sides.close()

    // --- RPC requests per valid verify, counted at a proxy in front of anvil (the same for both sides) ---
    progress(`${section}: ${c.counted} valid verifies of each side through a counting proxy`)
    const proxy = await startFaultProxy(world.fixture.node.rpcUrl)
    try {
      const counted = sidesOf(world, ourKey, theirKey, proxy.url)
      const count = { ours: { requests: 0, calls: 0, methods: new Map<string, number>() }, theirs: { requests: 0, calls: 0, methods: new Map<string, number>() } }
      await mineClock(world.fixture)
      for (const [name, side] of [['ours', counted.ours], ['theirs', counted.theirs]] as const) {
        const requirements = world.requirements(scheme, side.address)
        const payloads = await officialPayloads(scheme, payer, requirements, c.counted + 3)
        // The first verifies of a facilitator read what it caches (ours: the fee quote); not counted.
        for (const payload of payloads.slice(c.counted)) check((await side.verify(payload, requirements)).isValid, `${name} accepts a counted-run warm-up payload`)
        const requestsBefore = proxy.requests
        const callsBefore = proxy.calls.length
        for (const payload of payloads.slice(0, c.counted)) {
          const answer = await side.verify(payload, requirements)
          check(answer.isValid, `${name} accepts every counted payload (${answer.invalidReason ?? ''})`)
        }
        const seen = proxy.calls.slice(callsBefore)
        count[name].requests = proxy.requests - requestsBefore
        count[name].calls = seen.reduce((sum, calls) => sum + calls.length, 0)
        for (const call of seen.flat()) count[name].methods.set(call.method, (count[name].methods.get(call.method) ?? 0) + 1)
      }
      await counted.close()
      const methods = (m: Map<string, number>) => [...m].map(([method, n]) => `${method} ${(n / c.counted).toFixed(2)}`).join(', ')
      rows.push(
        row(section + ' verify', 'RPC requests per valid verify (HTTP)', 'requests', 'lower', count.ours.requests / c.counted, count.theirs.requests / c.counted, 'HTTP requests seen by a proxy in front of anvil (a JSON-RPC batch counts once); sequential verifies'),
        row(section + ' verify', 'JSON-RPC calls per valid verify', 'calls', 'lower', count.ours.calls / c.counted, count.theirs.calls / c.counted, `ours: ${methods(count.ours.methods)}; theirs: ${methods(count.theirs.methods)}`),
      )
    } finally {
      await proxy.close()
    }
  } finally {
    await world.stop()
  }

  // --- settle: 100 distinct payments of one payer per side, each burst on a fresh chain; and the chain alone ---
  progress(`${section}: settle ${c.settle} payments each at concurrency ${c.settleConcurrency}, ${c.settleRounds} rounds, each on a fresh anvil`)
  type Burst = { perSecond: number; errors: number; cpuMs: number; chainCpuMs: number }
  const bursts = { ours: [] as Burst[], theirs: [] as Burst[], oursPinned: [] as Burst[], floor: [] as number[], floorChecked: [] as number[], floorPinned: [] as number[] }
  // Pinned runs: anvil on core 0, this process on core 1, so neither takes CPU from the other (as
  // a facilitator and its chain's node do on different machines). Left out where pinning fails.
  let pinning = true
  const pinned = async <T>(anvilPid: number | undefined, measure: () => Promise<T>): Promise<T | undefined> => {
    if (!pinning || !pinProcess(anvilPid, '0') || !pinProcess(process.pid, '1')) {
      pinning = false
      return undefined
    }
    try {
      return await measure()
    } finally {
      pinProcess(process.pid, ALL_CPUS)
    }
  }
  const burst = async (who: 'ours' | 'theirs', pin = false) => {
    const fresh = await startPermit2World(2)
    const sides = sidesOf(fresh, fresh.fixture.signers[0]!, fresh.fixture.signers[1]!)
    try {
      const side = sides[who]
      const requirements = fresh.requirements(scheme, side.address)
      const payer = await fresh.payer(10n ** 15n)
      const payments = await officialPayloads(scheme, payer, requirements, c.settle + 3)
      // First fee quote, nonce read and connections, outside the timed burst.
      for (const payment of payments.slice(c.settle)) check((await side.settle(payment, requirements)).success, `a warm-up ${scheme} settle of ${who} lands`)
      const run = async () => {
        const before = { cpu: ownCpuMs(), chain: processCpuMs(fresh.fixture.node.pid) }
        const result = await runConcurrent(c.settle, c.settleConcurrency, async (i) => {
          const answer = await side.settle(payments[i]!, requirements)
          if (!answer.success) throw new Error(answer.errorReason)
        })
        return { before, result, chainAfter: processCpuMs(fresh.fixture.node.pid) }
      }
      const measured = pin ? await pinned(fresh.fixture.node.pid, run) : await run()
      if (!measured) return
      const { before, result, chainAfter } = measured
      if (result.errors.length > 0) progress(`${section}: ${who} settle failures: ${result.errors.length} (${String(result.errors[0])})`)
      bursts[pin ? 'oursPinned' : who].push({
        perSecond: result.perSecond,
        errors: result.errors.length,
        cpuMs: (ownCpuMs() - before.cpu) / c.settle,
        chainCpuMs: chainAfter === undefined || before.chain === undefined ? Number.NaN : (chainAfter - before.chain) / c.settle,
      })
    } finally {
      await sides.close()
      await fresh.stop()
    }
  }
  const floor = async (withChecks: boolean, pin = false) => {
    const fresh = await startPermit2World(1)
    try {
      if (!pin) bursts[withChecks ? 'floorChecked' : 'floor'].push(await chainFloor(fresh, scheme, c.settle, withChecks))
      else {
        const rate = await pinned(fresh.fixture.node.pid, () => chainFloor(fresh, scheme, c.settle, withChecks))
        if (rate !== undefined) bursts.floorPinned.push(rate)
      }
    } finally {
      await fresh.stop()
    }
  }
  const steps = [() => burst('ours'), () => burst('theirs'), () => floor(false), () => floor(true), () => burst('ours', true), () => floor(true, true)]
  for (let round = 0; round < c.settleRounds; round++) {
    progress(`${section}: settle round ${round + 1}/${c.settleRounds}`)
    for (let i = 0; i < steps.length; i++) await steps[(round + i) % steps.length]!()
  }
  const median = (values: number[]) => percentile(values, 50)
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
  const spread = (values: number[]) => `${Math.round(Math.min(...values))} to ${Math.round(Math.max(...values))}`
  const ourRate = median(bursts.ours.map((b) => b.perSecond))
  const failed = (side: typeof bursts.ours) => side.reduce((sum, b) => sum + b.errors, 0)
  const failures = failed(bursts.ours) + failed(bursts.theirs) ? `; failed: ours ${failed(bursts.ours)}, theirs ${failed(bursts.theirs)}` : ''
  rows.push(
    row(section + ' settle', `throughput, ${c.settle} payments of one payer, concurrency ${c.settleConcurrency}`, 'settle/s', 'higher', ourRate, median(bursts.theirs.map((b) => b.perSecond)),
      `median of ${c.settleRounds} bursts each, each on a fresh chain; ours ${spread(bursts.ours.map((b) => b.perSecond))}, theirs ${spread(bursts.theirs.map((b) => b.perSecond))}${scheme === 'upto' ? '; each settle charges the whole maximum' : ''}${failures}`),
    row(section + ' settle', 'chain floor: the same proxy calls pre-signed, one key in nonce order, receipts', 'tx/s', 'higher', ourRate, median(bursts.floor),
      `theirs = anvil alone (ours / chain), ${spread(bursts.floor)}`),
    row(section + ' settle', 'chain floor with the checks: our verify\'s eth_calls in one batch, then as above', 'tx/s', 'higher', ourRate, median(bursts.floorChecked),
      `theirs = anvil alone: the chain's whole share of our settle (ours / chain), ${spread(bursts.floorChecked)}`),
    ...(bursts.oursPinned.length > 0 && bursts.floorPinned.length > 0
      ? [row(section + ' settle', 'pinned: anvil on core 0, the facilitator on core 1, against the chain floor with the checks, anvil on core 0', 'settle/s', 'higher', median(bursts.oursPinned.map((b) => b.perSecond)), median(bursts.floorPinned),
          `theirs = anvil alone on one core (ours / chain): whether the facilitator keeps up with its chain when it does not share the chain's CPU; ours ${spread(bursts.oursPinned.map((b) => b.perSecond))}, chain ${spread(bursts.floorPinned)}`)]
      : []),
    row(section + ' settle', 'facilitator CPU per settle (burst)', 'ms', 'lower', mean(bursts.ours.map((b) => b.cpuMs)), mean(bursts.theirs.map((b) => b.cpuMs)), 'the bench process (every thread)'),
    row(section + ' settle', 'chain CPU per settle (burst)', 'ms', 'lower', mean(bursts.ours.map((b) => b.chainCpuMs)), mean(bursts.theirs.map((b) => b.chainCpuMs)), 'the anvil process, from /proc (10 ms ticks)'),
  )
  return rows
}

/** Untimed settles of each side on a chain of their own, in bursts like the timed ones (see evm.ts's jitWarmUp). */
async function jitWarmUp(scheme: Scheme): Promise<void> {
  const c = PERMIT2_COUNTS
  const world = await startPermit2World(2)
  const sides = sidesOf(world, world.fixture.signers[0]!, world.fixture.signers[1]!)
  try {
    for (const [name, side] of [['ours', sides.ours], ['theirs', sides.theirs]] as const) {
      const requirements = world.requirements(scheme, side.address)
      const payments = await officialPayloads(scheme, await world.payer(10n ** 15n), requirements, c.jitWarmupSettles)
      try {
        await settleInBursts(payments, c.settleConcurrency, (payment) => side.settle(payment, requirements), name)
      } catch (error) {
        if (name === 'ours') throw error
        // As in evm.ts: the official side does not rebroadcast a transaction anvil strands; the warm-up measures nothing.
        progress(`EVM Permit2 ${scheme}: warm-up of theirs ended early: ${String(error)}`)
      }
    }
  } finally {
    await sides.close()
    await world.stop()
  }
}

/**
 * The chain alone: `count` proxy `settle` calls of official payloads, pre-signed by one key and sent
 * one after another in nonce order through a lean HTTP client, every missing receipt asked in one
 * batch every 2 ms. Transactions a second. `withChecks` first asks the chain, in one batch, what
 * our verify asks it for each payment (the Multicall3 reads and the proxy call as `eth_call` from
 * the key at 300,000 gas): the chain's whole share of a settle, with no facilitator's CPU.
 */
async function chainFloor(world: World, scheme: Scheme, count: number, withChecks = false): Promise<number> {
  const { fixture } = world
  const key = fixture.signers[0]!
  const requirements = world.requirements(scheme, key.address)
  const payer = await world.payer(10n ** 15n)
  const payments = await officialPayloads(scheme, payer, requirements, count)
  const client = fixture.node.publicClient
  const nonce = await client.getTransactionCount({ address: key.address, blockTag: 'pending' })
  const block = await client.getBlock()
  const maxFeePerGas = (block.baseFeePerGas ?? 1_000_000_000n) * 2n + 1_000_000n
  const checks: { jsonrpc: string; id: number; method: string; params: unknown[] }[] = []
  const raws = await Promise.all(
    payments.map((payment, i) => {
      const { signature, permit2Authorization: a } = payment.payload as {
        signature: Hex
        permit2Authorization: { from: Hex; permitted: { token: Hex; amount: string }; nonce: string; deadline: string; witness: { to: Hex; validAfter: string; facilitator?: Hex } }
      }
      const permit = { permitted: { token: a.permitted.token, amount: BigInt(a.permitted.amount) }, nonce: BigInt(a.nonce), deadline: BigInt(a.deadline) }
      const data =
        scheme === 'exact'
          ? encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'settle', args: [permit, a.from, { to: a.witness.to, validAfter: BigInt(a.witness.validAfter) }, signature] })
          : encodeFunctionData({
              abi: uptoPermit2ProxyAbi,
              functionName: 'settle',
              args: [permit, permit.permitted.amount, a.from, { to: a.witness.to, facilitator: a.witness.facilitator!, validAfter: BigInt(a.witness.validAfter) }, signature],
            })
      const to = scheme === 'exact' ? X402_EXACT_PERMIT2_PROXY : X402_UPTO_PERMIT2_PROXY
      const reads = encodeFunctionData({
        abi: multicall3Abi,
        functionName: 'aggregate3',
        args: [[
          { target: a.permitted.token, allowFailure: true, callData: encodeFunctionData({ abi: eip3009Abi, functionName: 'balanceOf', args: [a.from] }) },
          { target: a.permitted.token, allowFailure: true, callData: encodeFunctionData({ abi: erc20AllowanceAbi, functionName: 'allowance', args: [a.from, PERMIT2_ADDRESS] }) },
          { target: PERMIT2_ADDRESS, allowFailure: true, callData: encodeFunctionData({ abi: permit2NonceBitmapAbi, functionName: 'nonceBitmap', args: [a.from, BigInt(a.nonce) >> 8n] }) },
          { target: to, allowFailure: true, callData: encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'PERMIT2' }) },
        ]],
      })
      const fees = { maxFeePerGas: `0x${maxFeePerGas.toString(16)}`, maxPriorityFeePerGas: '0xf4240' }
      checks.push(
        { jsonrpc: '2.0', id: checks.length, method: 'eth_call', params: [{ from: key.address, to: MULTICALL3_ADDRESS, data: reads, gas: '0x30d40', ...fees }, 'latest'] },
        { jsonrpc: '2.0', id: checks.length + 1, method: 'eth_call', params: [{ from: key.address, to, data, gas: '0x493e0', ...fees }, 'latest'] },
      )
      return key.signTransaction({ chainId: fixture.node.chainId, type: 'eip1559', to, data, gas: 200_000n, nonce: nonce + i, maxFeePerGas, maxPriorityFeePerGas: 1_000_000n })
    }),
  )
  const post = leanRpc(fixture.node.rpcUrl)
  const waiting = new Set<Hex>()
  let sending = true
  const receipts = () => awaitReceipts(post, waiting, () => sending, 'a pre-signed Permit2 settlement')
  await mineClock(fixture)
  const started = performance.now()
  const mined = receipts()
  let checkAnswers: { result?: Hex; error?: { message: string } }[] = []
  try {
    if (withChecks) checkAnswers = (await post(checks)) as typeof checkAnswers
    for (const raw of raws) {
      const answer = (await post({ jsonrpc: '2.0', id: 0, method: 'eth_sendRawTransaction', params: [raw] })) as { result?: Hex; error?: { message: string } }
      check(answer.result !== undefined, `a pre-signed Permit2 settlement is accepted (${answer.error?.message ?? ''})`)
      waiting.add(answer.result)
    }
  } finally {
    sending = false
  }
  await mined
  const rate = (count * 1000) / (performance.now() - started)
  if (withChecks) {
    // Read after the clock stopped: every check answered, the simulated proxy calls included.
    check(checkAnswers.length === checks.length, 'every check of the chain floor answered')
    for (const answer of checkAnswers) check(answer.result !== undefined, `a check of the Permit2 chain floor failed (${answer.error?.message ?? ''})`)
  }
  return rate
}
