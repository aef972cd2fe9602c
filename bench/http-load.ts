// Load generator for bench/http.ts and bench/ab.ts, run in its own process so the server process only serves.
// Forked with IPC: argv is an optional bodies file; each message {url, count, concurrency, path?, bodiesFile?}
// runs one round (POST /verify by default, or `path`, with the bodies of argv or of `bodiesFile`) and is
// answered with {elapsedMs, ok, failed, durations, firstFailure?}. Staying alive between rounds keeps process
// start-up out of the server's CPU figures. It posts through our own HTTP/1.1 client, a sixth of node:http's
// client CPU: on a machine of two cores the generator's CPU is taken from the server and the chain.
import { readFileSync } from 'node:fs'
import { createConnectionPool, postKeepAlive } from '../src/transport/keep-alive-post.js'

const bodyFiles = new Map<string, string[]>()
const bodiesOf = (file: string): string[] => {
  let bodies = bodyFiles.get(file)
  if (!bodies) {
    bodies = (JSON.parse(readFileSync(file, 'utf8')) as unknown[]).map((body) => JSON.stringify(body))
    bodyFiles.set(file, bodies)
  }
  return bodies
}
const [argvBodies] = process.argv.slice(2)
const headers = { 'content-type': 'application/json' }

export interface LoadRound {
  readonly url: string
  readonly count: number
  readonly concurrency: number
  /** @default '/verify' */
  readonly path?: '/verify' | '/settle'
  /** The bodies of this round (JSON array), each posted once when `count` is their number; else argv's. */
  readonly bodiesFile?: string
}

export interface LoadResult {
  readonly elapsedMs: number
  /** Answers 200 with `isValid: true` (verify) or `success: true` (settle). */
  readonly ok: number
  readonly failed: number
  /** Each request's time, in completion order. */
  readonly durations: number[]
  /** What the first failed request got, for the error line. */
  readonly firstFailure?: string
}

async function round({ url, count, concurrency, path = '/verify', bodiesFile }: LoadRound): Promise<LoadResult> {
  const bodies = bodiesOf(bodiesFile ?? argvBodies!)
  // A pool per round: each server gets its own connections, opened in the round.
  // A short idle timeout: the connections close soon after their round, as the old server is done with.
  const pool = createConnectionPool({ idleTimeoutMs: 1_000 })
  const target = new URL(path, url)
  const accepted = path === '/settle' ? 'success' : 'isValid'
  let next = 0
  let ok = 0
  let failed = 0
  let firstFailure: string | undefined
  const durations: number[] = []
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++
        if (i >= count) return
        const sent = performance.now()
        try {
          const answer = await postKeepAlive(target, bodies[i % bodies.length]!, { pool, headers, timeoutMs: 30_000 })
          if (answer.status === 200 && (JSON.parse(answer.text) as Record<string, unknown>)[accepted] === true) ok++
          else {
            failed++
            firstFailure ??= `HTTP ${answer.status}: ${answer.text.slice(0, 300)}`
          }
        } catch (error) {
          failed++
          firstFailure ??= String(error)
        }
        durations.push(performance.now() - sent)
      }
    }),
  )
  return { elapsedMs: performance.now() - started, ok, failed, durations, ...(firstFailure ? { firstFailure } : {}) }
}

process.on('message', (message: LoadRound | 'exit') => {
  if (message === 'exit') process.exit(0)
  void round(message).then((result) => process.send!(result))
})
process.send!('ready')
