/**
 * Stores: the same EVM settle burst on anvil through our facilitator on each store
 * (memory, SQLite, Redis, PostgreSQL), with the statistics, catalog and ledger
 * recorders installed as a deployment would, in one run. Figures are given as
 * ratios to the memory store. Where the time goes: store calls per settle and
 * their mean latency, counted by a wrapper around each store, and the CPU of the
 * bench process and of the store's server.
 *
 *   npm run bench -- stores                                  # every store
 *   BENCH_STORES=sqlite,postgres npm run bench -- stores     # some (memory always)
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LocalAccount } from 'viem'
import { createCatalog } from '../src/catalog/index.js'
import { createFacilitator, createMemoryStore, type FacilitatorHooks, type Store } from '../src/index.js'
import { createLedgerRecorder, createMemoryLedger, type SettlementLedger } from '../src/ledger/index.js'
import { createPublicStats } from '../src/stats/index.js'
import { exactEvm, privateKeySigner, signExactEvmPayment } from '../src/evm/index.js'
import type { PaymentPayload } from '../src/schemas/payload.js'
import { createPostgresStore } from '../src/stores/postgres/postgres-store.js'
import { createRedisStore } from '../src/stores/redis-store.js'
import { createSqliteStore } from '../src/stores/sqlite/sqlite-store.js'
import { startEvmFixture } from '../test/support/evm-fixture.js'
import { startPostgresServer, type PostgresServer } from '../test/support/postgres-server.js'
import { startRedisServer, type RedisServer } from '../test/support/redis-server.js'
import { ANVIL_KEY } from './evm.js'
import { check, ownCpuMs, percentile, processCpuMs, progress, row, runConcurrent, type Row } from './measure.js'

export const STORES_COUNTS = {
  /** Settles per timed burst. */
  settle: 600,
  /**
   * Settles in flight at once. At 50 a store's latency shows (each settle waits for its calls in
   * turn); at 200 the figure comes closer to what the machine can do.
   */
  concurrency: [50, 200],
  /** Payers the burst's payments come from. */
  payers: 10,
  /** Bursts per store, interleaved (each on a fresh chain); the table gives the median. */
  rounds: 5,
  /** Untimed settles per store before the timed rounds, so V8 has compiled the hot code of each. */
  warmupSettles: 200,
}

type StoreKind = 'memory' | 'sqlite' | 'sqlite-full' | 'redis' | 'postgres' | 'postgres-nosync'
const ALL_KINDS: readonly StoreKind[] = ['memory', 'sqlite', 'sqlite-full', 'redis', 'postgres', 'postgres-nosync']
/** BENCH_STORES=memory,postgres measures some stores only (memory, the reference, is always in). */
const WANTED: readonly StoreKind[] = process.env.BENCH_STORES
  ? ALL_KINDS.filter((kind) => kind === 'memory' || process.env.BENCH_STORES!.split(',').includes(kind))
  : ALL_KINDS
const LABEL: Record<StoreKind, string> = {
  memory: 'memory',
  sqlite: 'SQLite (WAL, synchronous NORMAL)',
  'sqlite-full': 'SQLite (WAL, synchronous FULL)',
  redis: 'Redis (no persistence)',
  postgres: 'PostgreSQL (fsync, synchronous_commit on)',
  'postgres-nosync': 'PostgreSQL with fsync off',
}
/** The goal of each store's throughput, as a share of the memory store's. */
const GOAL: Partial<Record<StoreKind, number>> = { sqlite: 0.9, redis: 0.8, postgres: 0.8 }

interface Burst {
  perSecond: number
  /** Bench-process CPU (facilitator, store client, in-process SQLite) per settle, ms. */
  cpuMs: number
  /** The store server's CPU per settle (Redis, PostgreSQL and its backends), ms. */
  serverCpuMs: number
  calls: number
  callMs: number
  failures: number
}

/** One line for a reason a server did not start (an Error's message may run over several). */
const oneLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n').map((line) => line.trim()).filter(Boolean).join('; ')

/**
 * The servers the wanted stores need. One that cannot start here (redis-server or PostgreSQL not
 * installed, say) leaves its stores out of the section, each with the reason on one line.
 */
async function startStoreServers(): Promise<{ redis?: RedisServer; postgres?: PostgresServer; postgresNoSync?: PostgresServer; skipped: Map<StoreKind, string> }> {
  const skipped = new Map<StoreKind, string>()
  const skip = (kinds: readonly StoreKind[], why: string) => {
    for (const kind of kinds.filter((k) => WANTED.includes(k))) {
      skipped.set(kind, why)
      progress(`stores: ${LABEL[kind]} skipped: ${why}`)
    }
  }
  let redis: RedisServer | undefined
  let postgres: PostgresServer | undefined
  let postgresNoSync: PostgresServer | undefined
  if (WANTED.includes('redis')) {
    // spawn() of a missing binary fails in an 'error' event nobody awaits: ask first.
    if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error) skip(['redis'], 'redis-server is not installed (apt-get install -y redis-server)')
    else redis = await startRedisServer().catch((error: unknown) => void skip(['redis'], oneLine(error)))
  }
  if (WANTED.includes('postgres') || WANTED.includes('postgres-nosync')) {
    // The second PostgreSQL skips its disk flushes: not a way to run one, a measure of what they cost here.
    const started = await Promise.allSettled([startPostgresServer({ durable: true }), startPostgresServer({ durable: false })])
    for (const [i, outcome] of started.entries()) {
      if (outcome.status === 'fulfilled') {
        if (i === 0) postgres = outcome.value
        else postgresNoSync = outcome.value
      } else skip([i === 0 ? 'postgres' : 'postgres-nosync'], oneLine(outcome.reason))
    }
  }
  return { ...(redis ? { redis } : {}), ...(postgres ? { postgres } : {}), ...(postgresNoSync ? { postgresNoSync } : {}), skipped }
}

/** CPU of a process and its children (PostgreSQL runs a backend process per connection), in ms. */
function processTreeCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0
  let total = processCpuMs(pid) ?? 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === pid) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // Field 4 of stat is the parent pid (index 1 after the command name).
      if (Number(fields[1]) === pid) total += processCpuMs(Number(entry)) ?? 0
    } catch {
      // The process ended meanwhile.
    }
  }
  return total
}

/** Counts the calls a store receives and the time they take (wall, concurrent calls overlap). */
function counted(store: Store): { store: Store; take(): { calls: number; ms: number } } {
  let calls = 0
  let ms = 0
  const wrapped = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown
      if (typeof value !== 'function' || name === 'close') return value
      return async (...args: unknown[]) => {
        const started = performance.now()
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args)
        } finally {
          calls++
          ms += performance.now() - started
        }
      }
    },
  })
  return {
    store: wrapped,
    take() {
      const out = { calls, ms }
      calls = 0
      ms = 0
      return out
    },
  }
}

export async function benchStores(): Promise<Row[]> {
  const c = STORES_COUNTS
  const { redis, postgres, postgresNoSync, skipped } = await startStoreServers()
  const KINDS = WANTED.filter((kind) => !skipped.has(kind))
  progress(`stores: ${c.settle} settles at concurrency ${c.concurrency.join(' and ')} per burst, ${c.rounds} rounds per store on ${KINDS.join(', ')}; statistics, catalog and ledger recorders on`)
  const dir = mkdtempSync(join(tmpdir(), 'x402-bench-stores-'))
  // One store of each kind for the whole section, as a running server keeps its own: its pool's
  // connections (and PostgreSQL's compiled functions) are warm after the warm-up burst.
  const opened = new Map<StoreKind, { store: Store; ledger: SettlementLedger | undefined; pid: number | undefined }>()
  try {
    /** The store of `kind` (its own file, key prefix or schema), its server's pid, and its ledger. */
    const open = async (kind: StoreKind) => {
      const known = opened.get(kind)
      if (known) return known
      let made: { store: Store; ledger: SettlementLedger | undefined; pid: number | undefined }
      switch (kind) {
        case 'memory':
          made = { store: createMemoryStore(), ledger: createMemoryLedger(), pid: undefined }
          break
        case 'sqlite':
        case 'sqlite-full': {
          const store = createSqliteStore({ path: join(dir, `${kind}.sqlite`), synchronous: kind === 'sqlite' ? 'NORMAL' : 'FULL' })
          made = { store, ledger: store.ledger, pid: undefined }
          break
        }
        case 'redis':
          // No ledger in Redis (see docs/stores.md): this row has none.
          made = { store: createRedisStore({ url: redis!.url, keyPrefix: 'bench:' }), ledger: undefined, pid: redis!.pid }
          break
        case 'postgres':
        case 'postgres-nosync': {
          const server = (kind === 'postgres' ? postgres : postgresNoSync)!
          const store = createPostgresStore({ connectionString: server.url, schema: 'bench' })
          await store.ready()
          made = { store, ledger: store.ledger, pid: server.pid }
          break
        }
      }
      opened.set(kind, made)
      return made
    }

    /** One burst of `count` settles, `concurrency` at a time, on a fresh chain, through a facilitator on a fresh store of `kind`. */
    const burst = async (kind: StoreKind, count: number, concurrency: number): Promise<Burst> => {
      const fresh = await startEvmFixture({ signerCount: 1 })
      const store = await open(kind)
      const probe = counted(store.store)
      try {
        const signer = privateKeySigner(ANVIL_KEY(1))
        check(signer.address === fresh.signers[0]!.address, 'the facilitator key is anvil account 1')
        const stats = createPublicStats({ store: probe.store })
        const catalog = createCatalog({ store: probe.store })
        const hooks: FacilitatorHooks[] = [stats.hooks, catalog.hooks]
        if (store.ledger) hooks.push(createLedgerRecorder({ ledger: store.ledger }))
        const facilitator = createFacilitator({
          schemes: [exactEvm(fresh.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [fresh.node.rpcUrl], assets: [fresh.knownAsset] }], signers: [signer], receiptPollIntervalMs: 50 }))],
          store: probe.store,
          hooks,
        })
        const payers: LocalAccount[] = []
        for (let i = 0; i < c.payers; i++) payers.push(await fresh.newPayer(10n ** 15n))
        const requirements = fresh.requirementsV2({ amount: '1000' })
        const payments: PaymentPayload[] = await Promise.all(
          Array.from({ length: count + 3 }, (_, i) => signExactEvmPayment({ signer: payers[i % payers.length]!, requirements, validForSeconds: 3_600 })),
        )
        const settle = (payment: PaymentPayload) => facilitator.settle({ x402Version: 2, paymentPayload: payment, paymentRequirements: requirements })
        // First fee quote, nonce read and connections, outside the timed burst.
        for (const payment of payments.slice(count)) check((await settle(payment)).success, `a warm-up settle on ${kind} lands`)
        await facilitator.drain()
        probe.take()
        const before = { cpu: ownCpuMs(), server: processTreeCpuMs(store.pid) }
        const started = performance.now()
        const result = await runConcurrent(count, concurrency, async (i) => {
          const answer = await settle(payments[i]!)
          if (!answer.success) throw new Error(answer.errorReason)
        })
        // The recorders write behind the answers: their work belongs to the burst.
        await facilitator.drain()
        const elapsedMs = performance.now() - started
        const cpuMs = (ownCpuMs() - before.cpu) / count
        const serverCpuMs = (processTreeCpuMs(store.pid) - before.server) / count
        const { calls, ms } = probe.take()
        if (result.errors.length > 0) progress(`stores: ${kind}: ${result.errors.length} settles failed (${String(result.errors[0])})`)
        return { perSecond: ((count - result.errors.length) * 1000) / elapsedMs, cpuMs, serverCpuMs, calls: calls / count, callMs: ms / Math.max(1, calls), failures: result.errors.length }
      } finally {
        await fresh.stop()
      }
    }

    progress(`stores: JIT warm-up, ${c.warmupSettles} untimed settles on each store`)
    for (const kind of KINDS) await burst(kind, c.warmupSettles, c.concurrency[0]!)

    const rounds = new Map<string, Burst[]>()
    const bursts = (kind: StoreKind, concurrency: number) => rounds.get(`${kind}@${concurrency}`) ?? []
    for (let round = 0; round < c.rounds; round++) {
      progress(`stores: round ${round + 1}/${c.rounds}`)
      // Each round starts with another store, so that load on the machine hits them alike.
      for (let i = 0; i < KINDS.length; i++) {
        const kind = KINDS[(round + i) % KINDS.length]!
        for (const concurrency of c.concurrency) rounds.set(`${kind}@${concurrency}`, [...bursts(kind, concurrency), await burst(kind, c.settle, concurrency)])
      }
    }

    const median = (values: number[]) => percentile(values, 50)
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
    const figures = (kind: StoreKind, concurrency: number) => {
      const bursts = rounds.get(`${kind}@${concurrency}`)!
      return {
        rate: median(bursts.map((b) => b.perSecond)),
        spread: `${Math.round(Math.min(...bursts.map((b) => b.perSecond)))} to ${Math.round(Math.max(...bursts.map((b) => b.perSecond)))}`,
        cpu: mean(bursts.map((b) => b.cpuMs)),
        serverCpu: mean(bursts.map((b) => b.serverCpuMs)),
        calls: mean(bursts.map((b) => b.calls)),
        callMs: mean(bursts.map((b) => b.callMs)),
        failures: bursts.reduce((sum, b) => sum + b.failures, 0),
      }
    }
    const rows: Row[] = [...skipped].map(([kind, why]) => row('Stores', `settle throughput, ${LABEL[kind]}`, 'settle/s', 'higher', null, null, `skipped: ${why}`))
    for (const concurrency of c.concurrency) {
      const memory = figures('memory', concurrency)
      rows.push(
        row('Stores', `concurrency ${concurrency}: settle throughput on anvil, memory store (${c.settle} payments)`, 'settle/s', 'higher', memory.rate, null, `median of ${c.rounds} bursts, each on a fresh chain (${memory.spread}); statistics, catalog and ledger recorders on, drained`),
        row('Stores', `concurrency ${concurrency}: facilitator CPU per settle, memory store`, 'ms', 'lower', memory.cpu, null, `the bench process (every thread); ${memory.calls.toFixed(1)} store calls per settle, ${memory.callMs.toFixed(3)} ms each on average`),
      )
      for (const kind of KINDS.filter((k) => k !== 'memory')) {
        const f = figures(kind, concurrency)
        const goal = GOAL[kind]
        const ratio = f.rate / memory.rate
        const verdict = goal === undefined ? `no goal: what ${kind === 'sqlite-full' ? 'FULL' : 'the disk flushes'} cost${kind === 'sqlite-full' ? 's' : ''}` : `goal >= ${goal}x: ${ratio >= goal ? 'met' : 'missed'}`
        rows.push(
          row('Stores', `concurrency ${concurrency}: settle throughput, ${LABEL[kind]}`, 'settle/s', 'higher', f.rate, memory.rate,
            `theirs = memory store, same run; ${verdict}; ${f.spread}${kind === 'redis' ? '; no ledger (Redis keeps none)' : ''}${f.failures ? `; ${f.failures} failed` : ''}`),
          row('Stores', `concurrency ${concurrency}: facilitator CPU per settle, ${LABEL[kind]}`, 'ms', 'lower', f.cpu, memory.cpu, `theirs = memory store; the bench process${kind.startsWith('sqlite') ? ' (SQLite runs in it)' : ', the store client included'}`),
          row('Stores', `concurrency ${concurrency}: mean store call latency, ${LABEL[kind]}`, 'ms', 'lower', f.callMs, memory.callMs, `theirs = memory store; as the caller waits for it (event loop included)`),
        )
        if (kind === 'redis' || kind === 'postgres' || kind === 'postgres-nosync') {
          rows.push(row('Stores', `concurrency ${concurrency}: store server CPU per settle, ${LABEL[kind]}`, 'ms', 'lower', f.serverCpu, null, kind === 'redis' ? 'redis-server, from /proc (10 ms ticks)' : 'postmaster and its backends, from /proc (10 ms ticks)'))
        }
      }
    }
    return rows
  } finally {
    for (const { store } of opened.values()) await store.close?.()
    await Promise.all([redis?.stop(), postgres?.stop(), postgresNoSync?.stop()])
    rmSync(dir, { recursive: true, force: true })
  }
}
