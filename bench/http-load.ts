// Load generator for bench/http.ts, run in its own process so the server process only serves.
// Forked with IPC: argv is the bodies file; each message {url, count, concurrency} runs one round
// and is answered with {elapsedMs, ok, failed}. Staying alive between rounds keeps process start-up
// out of the server's CPU figures. It posts through our own HTTP/1.1 client, a sixth of node:http's
// client CPU: on a machine of two cores the generator's CPU is taken from the server and the chain.
import { readFileSync } from 'node:fs'
import { createConnectionPool, postKeepAlive } from '../src/transport/keep-alive-post.js'

const [bodiesFile] = process.argv.slice(2)
const bodies = (JSON.parse(readFileSync(bodiesFile!, 'utf8')) as unknown[]).map((body) => JSON.stringify(body))
const headers = { 'content-type': 'application/json' }

interface Round {
  readonly url: string
  readonly count: number
  readonly concurrency: number
}

async function round({ url, count, concurrency }: Round) {
  // A pool per round: each server gets its own connections, opened in the round.
  // A short idle timeout: the connections close soon after their round, as the old server is done with.
  const pool = createConnectionPool({ idleTimeoutMs: 1_000 })
  const target = new URL('/verify', url)
  let next = 0
  let ok = 0
  let failed = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++
        if (i >= count) return
        try {
          const answer = await postKeepAlive(target, bodies[i % bodies.length]!, { pool, headers, timeoutMs: 30_000 })
          if (answer.status === 200 && (JSON.parse(answer.text) as { isValid?: unknown }).isValid === true) ok++
          else failed++
        } catch {
          failed++
        }
      }
    }),
  )
  return { elapsedMs: performance.now() - started, ok, failed }
}

process.on('message', (message: Round | 'exit') => {
  if (message === 'exit') process.exit(0)
  void round(message).then((result) => process.send!(result))
})
process.send!('ready')
