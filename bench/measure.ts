/**
 * Measurement helpers of the benchmark suite: percentiles, a fixed-concurrency
 * runner, and the result rows (ours, theirs, ratio) printed as a table and
 * written as JSON.
 */
import { execFileSync, fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { createConnectionPool, postKeepAlive } from '../src/transport/keep-alive-post.js'
import type { LoadResult, LoadRound } from './http-load.js'

/** One figure of the suite. `theirs` is the official x402 facilitator (or another named reference). */
export interface Row {
  readonly section: string
  readonly metric: string
  readonly unit: string
  /** Which direction is better, so a reader knows how to read the ratio. */
  readonly better: 'higher' | 'lower'
  readonly ours: number | null
  readonly theirs: number | null
  /** ours / theirs, when both exist. */
  readonly ratio: number | null
  /** What "theirs" is when it is not the official facilitator, or why a figure is missing. */
  readonly note?: string
}

export function row(
  section: string,
  metric: string,
  unit: string,
  better: 'higher' | 'lower',
  ours: number | null,
  theirs: number | null = null,
  note?: string,
): Row {
  const ratio = ours !== null && theirs !== null && theirs !== 0 ? ours / theirs : null
  return { section, metric, unit, better, ours, theirs, ratio, ...(note ? { note } : {}) }
}

/** The p-th percentile (0..100) of the samples, nearest-rank. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

export interface RunResult {
  /** Wall time of the whole run. */
  readonly elapsedMs: number
  /** Duration of each task, in completion order. */
  readonly durations: number[]
  /** Tasks that threw. */
  readonly errors: unknown[]
  /** Completed tasks per second. */
  readonly perSecond: number
}

/** Runs `count` tasks (`task(i)`), at most `concurrency` at a time, and times them. */
export async function runConcurrent(count: number, concurrency: number, task: (index: number) => Promise<unknown>): Promise<RunResult> {
  const durations: number[] = []
  const errors: unknown[] = []
  let next = 0
  const started = performance.now()
  const worker = async () => {
    for (;;) {
      const index = next++
      if (index >= count) return
      const t = performance.now()
      try {
        await task(index)
      } catch (error) {
        errors.push(error)
      }
      durations.push(performance.now() - t)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  const elapsedMs = performance.now() - started
  return { elapsedMs, durations, errors, perSecond: ((count - errors.length) * 1000) / elapsedMs }
}

/** Mean time of one call of a synchronous or asynchronous function, in microseconds. */
export async function microseconds(iterations: number, fn: (index: number) => unknown): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < iterations; i++) {
    const result = fn(i)
    if (result instanceof Promise) await result
  }
  return ((performance.now() - started) * 1000) / iterations
}

/** CPU time (user + system, every thread) this process has used so far, in ms. */
export function ownCpuMs(): number {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1000
}

/**
 * Pins every thread of process `pid` to the CPUs listed (`taskset` syntax: "0", "1", "0-1").
 * False where it cannot (no taskset, one core, not Linux): the pinned rows are then left out.
 */
export function pinProcess(pid: number | undefined, cpuList: string): boolean {
  // The machine's CPUs, not availableParallelism(): that one shrinks to the CPUs this process is pinned to.
  if (pid === undefined || cpus().length < 2) return false
  try {
    execFileSync('taskset', ['-apc', cpuList, String(pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Every CPU of the machine, in taskset syntax. */
export const ALL_CPUS = `0-${cpus().length - 1}`

/**
 * CPU time another process has used so far, in ms, read from /proc (Linux;
 * `undefined` elsewhere). Kernel clock ticks are 10 ms here (USER_HZ 100), so
 * only differences over hundreds of ms mean anything.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

/**
 * A lean JSON-RPC poster for the chain floors: our HTTP client on keep-alive connections, the
 * body as given (one call or a batch), the answer parsed. What it costs is the floor's, not a
 * client library's.
 */
export function leanRpc(url: string): (body: unknown) => Promise<unknown> {
  const target = new URL(url)
  const pool = createConnectionPool()
  return async (body) => {
    const answer = await postKeepAlive(target, JSON.stringify(body), { pool, headers: { 'content-type': 'application/json' }, timeoutMs: 10_000 })
    return JSON.parse(answer.text) as unknown
  }
}

/**
 * Polls the receipts of the transactions added to `waiting` (one batch every 2 ms, through a
 * {@link leanRpc} poster) until nothing is being sent any more and every one is mined. A reverted
 * one, or one not mined within 20 s, fails the floor: `what` names them in the error.
 */
export async function awaitReceipts(post: (body: unknown) => Promise<unknown>, waiting: Set<string>, stillSending: () => boolean, what: string): Promise<void> {
  const giveUp = performance.now() + 20_000
  while (stillSending() || waiting.size > 0) {
    if (performance.now() > giveUp) throw new Error(`${what} was not mined within 20 s (anvil left it parked)`)
    const hashes = [...waiting]
    if (hashes.length > 0) {
      const answers = (await post(hashes.map((hash, id) => ({ jsonrpc: '2.0', id, method: 'eth_getTransactionReceipt', params: [hash] })))) as { id: number; result?: { status: string } | null }[]
      for (const answer of answers) {
        if (!answer.result) continue
        if (answer.result.status !== '0x1') throw new Error(`${what} reverted`)
        waiting.delete(hashes[answer.id]!)
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

/** Asserts a benchmark precondition: a figure over failing calls would be meaningless. */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`benchmark precondition failed: ${message}`)
}

function formatNumber(value: number | null): string {
  if (value === null || Number.isNaN(value)) return 'n/a'
  const abs = Math.abs(value)
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US')
  if (abs >= 100) return value.toFixed(0)
  if (abs >= 10) return value.toFixed(1)
  if (abs >= 1) return value.toFixed(2)
  return value.toPrecision(2)
}

/** The rows as a Markdown table (also readable in a terminal). */
export function formatTable(rows: readonly Row[]): string {
  const header = ['section', 'metric', 'unit', 'better', 'ours', 'theirs', 'ours / theirs', 'note']
  const lines = rows.map((r) => [
    r.section,
    r.metric,
    r.unit,
    r.better,
    formatNumber(r.ours),
    formatNumber(r.theirs),
    r.ratio === null ? '' : `${r.ratio.toFixed(2)}x`,
    r.note ?? '',
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const render = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  return [render(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(render)].join('\n')
}

/** Logs a progress line to stderr, so stdout keeps only the table. */
export function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`)
}

/**
 * Settles every payment, `concurrency` at a time in bursts like the timed ones, measuring nothing:
 * the JIT warm-up before a section's timed rounds. Each must land.
 */
export async function settleInBursts<P>(
  payments: readonly P[],
  concurrency: number,
  settle: (payment: P) => Promise<{ success: boolean; errorReason?: string }>,
  who: string,
): Promise<void> {
  for (let from = 0; from < payments.length; from += concurrency) {
    const burst = await runConcurrent(Math.min(concurrency, payments.length - from), concurrency, async (i) => {
      const answer = await settle(payments[from + i]!)
      if (!answer.success) throw new Error(answer.errorReason)
    })
    check(burst.errors.length === 0, `every warm-up settle of ${who} lands (${String(burst.errors[0])})`)
  }
}

/** The HTTP load generator (bench/http-load.ts) in its own process. */
export interface LoadGenerator {
  readonly pid: number | undefined
  /** One round; every answer must be accepted (200 and isValid or success), or it throws with the first refusal. */
  run(round: LoadRound): Promise<LoadResult>
  close(): void
}

/** Forks the load generator (argv `bodiesFile`: the bodies of rounds that name none) and waits until it is ready. */
export async function startLoadGenerator(bodiesFile?: string): Promise<LoadGenerator> {
  const script = fileURLToPath(new URL('./http-load.ts', import.meta.url))
  const child = fork(script, bodiesFile ? [bodiesFile] : [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('exit', (code) => reject(new Error(`the load generator exited before it was ready (${code})`)))
  })
  return {
    pid: child.pid,
    async run(round) {
      const result = await new Promise<LoadResult>((resolve) => {
        child.once('message', (answer) => resolve(answer as LoadResult))
        child.send(round)
      })
      check(result.failed === 0, `every POST ${round.path ?? '/verify'} to ${round.url} is accepted (${result.failed} of ${round.count} were not; first: ${result.firstFailure ?? ''})`)
      return result
    },
    close: () => {
      if (child.connected) child.send('exit')
    },
  }
}
