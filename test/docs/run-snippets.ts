import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
/** The preload every snippet process gets (see the file). */
export const SNIPPET_PRELOAD = join(here, 'snippet-preload.cjs')
const TSX_CLI = resolve(here, '../../node_modules/tsx/dist/cli.mjs')

/** What one HTTP request to a snippet's server answered. */
export interface Probe {
  readonly path: string
  readonly status: number
  readonly contentType: string
  readonly body: string
  readonly headers: Record<string, string>
}

/** What running a snippet did. */
export interface SnippetRun {
  /** Exit code, `null` when the test stopped it (a server) or it was killed. */
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
  /** Servers it started: the port it asked for and the loopback port it got. */
  readonly listening: readonly { asked: number; port: number }[]
  /** Hosts beyond loopback it tried to reach (refused). */
  readonly blocked: readonly string[]
  /** It neither exited nor started its servers within the bound. */
  readonly timedOut: boolean
  /** For a server: the answers to the probe requests, by port asked. */
  readonly probes: Readonly<Record<number, readonly Probe[]>>
  readonly ms: number
}

export interface RunOptions {
  /** Where the snippet's file is written and run from (inside the project, so its node_modules resolve). */
  readonly directory: string
  readonly code: string
  /** The whole environment of the process (nothing of the test's own leaks in). */
  readonly env: Record<string, string>
  /** How many servers it starts (`.listen(` calls): 0 means it must exit by itself, with 0. */
  readonly servers: number
  readonly timeoutMs: number
  /** Paths asked of each server once they all listen. */
  readonly probePaths: readonly { path: string; headers?: Record<string, string> }[]
}

/**
 * Runs a snippet as a newcomer would (`npx tsx snippet.ts` in the project), with the preload
 * that keeps it on loopback. A snippet without servers must exit 0 within the bound; one with
 * servers must start all of them, answer the probes, and is then stopped (its process group).
 */
export async function runSnippet(options: RunOptions): Promise<SnippetRun> {
  mkdirSync(options.directory, { recursive: true })
  const file = join(options.directory, 'snippet.ts')
  writeFileSync(file, options.code)
  const report = join(options.directory, 'report.jsonl')
  writeFileSync(report, '')
  const started = performance.now()
  const child = spawn(process.execPath, [TSX_CLI, 'snippet.ts'], {
    cwd: options.directory,
    env: { ...options.env, NODE_OPTIONS: `--require ${SNIPPET_PRELOAD}`, X402_SNIPPET_REPORT: report },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: the tsx CLI and the snippet it starts are stopped together.
    detached: true,
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  let exitCode: number | null | undefined
  const exited = new Promise<void>((done) => child.once('exit', (code) => ((exitCode = code), done())))
  const entries = () =>
    (existsSync(report) ? readFileSync(report, 'utf8') : '')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { listening?: number; port?: number; blocked?: string })
  const listening = () => entries().flatMap((e) => (e.listening !== undefined && e.port !== undefined ? [{ asked: e.listening, port: e.port }] : []))

  const deadline = started + options.timeoutMs
  let timedOut = false
  const probes: Record<number, Probe[]> = {}
  if (options.servers === 0) {
    const bound = new Promise<void>((done) => setTimeout(done, Math.ceil(options.timeoutMs)).unref())
    await Promise.race([exited, bound])
    timedOut = exitCode === undefined
  } else {
    while (exitCode === undefined && listening().length < options.servers && performance.now() < deadline) {
      await new Promise((done) => setTimeout(done, 50))
    }
    if (exitCode === undefined && listening().length >= options.servers) {
      for (const { asked, port } of listening()) {
        probes[asked] = []
        for (const { path, headers } of options.probePaths) {
          try {
            const answer = await fetch(`http://127.0.0.1:${port}${path}`, { headers, signal: AbortSignal.timeout(Math.ceil(Math.max(1_000, deadline - performance.now()))) })
            probes[asked].push({
              path,
              status: answer.status,
              contentType: answer.headers.get('content-type') ?? '',
              body: (await answer.text()).slice(0, 4_000),
              headers: Object.fromEntries([...(answer.headers as unknown as Iterable<[string, string]>)]),
            })
          } catch (error) {
            // No answer at all: status 0, the cause as the body.
            probes[asked].push({ path, status: 0, contentType: '', body: String(error), headers: {} })
          }
        }
      }
    } else if (exitCode === undefined) {
      timedOut = true
    }
  }
  if (exitCode === undefined) {
    stopGroup(child.pid!, 'SIGTERM')
    const killed = setTimeout(() => stopGroup(child.pid!, 'SIGKILL'), 3_000)
    await exited
    clearTimeout(killed)
    // Stopped by the test: not an exit of its own.
    exitCode = null
  }
  return {
    exitCode: exitCode ?? null,
    stdout,
    stderr,
    listening: listening(),
    blocked: entries().flatMap((e) => (e.blocked ? [e.blocked] : [])),
    timedOut,
    probes,
    ms: Math.round(performance.now() - started),
  }
}

function stopGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    // Already gone.
  }
}

/** Runs `work` over `items`, at most `limit` at a time, answers in order. */
export async function inPool<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++
        results[index] = await work(items[index]!, index)
      }
    }),
  )
  return results
}
