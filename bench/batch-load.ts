// Load generator of the signed-ahead batch rows (bench/evm-batch.ts), in its own process so the
// server process only serves: the same client for both sides, and its CPU is not the server's.
// Forked with IPC: each message {url, channels} sends every channel's voucher headers in order
// (GET url with PAYMENT-SIGNATURE, one request at a time per channel, channels side by side) over
// node:http keep-alive connections, and is answered with {elapsedMs, ok, failed, firstFailure?}.
import { Agent, request } from 'node:http'

export interface BatchLoadRound {
  readonly url: string
  /** Per channel, its voucher headers in the order they must be paid. */
  readonly channels: readonly (readonly string[])[]
}

export interface BatchLoadResult {
  readonly elapsedMs: number
  readonly ok: number
  readonly failed: number
  readonly firstFailure?: string
}

const get = (agent: Agent, url: URL, header: string) =>
  new Promise<{ status: number; required: string | undefined }>((resolve, reject) => {
    const req = request(url, { agent, headers: { 'PAYMENT-SIGNATURE': header } }, (res) => {
      const required = res.headers['payment-required']
      // The body is read to its end, as a client does before its next request on the connection.
      res.on('data', () => undefined)
      res.on('end', () => resolve({ status: res.statusCode ?? 0, required: typeof required === 'string' ? required : undefined }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })

async function round({ url, channels }: BatchLoadRound): Promise<BatchLoadResult> {
  // One connection per channel, opened in the round, closed after it.
  const agent = new Agent({ keepAlive: true, maxSockets: channels.length })
  const target = new URL('/call', url)
  let ok = 0
  let failed = 0
  let firstFailure: string | undefined
  const started = performance.now()
  await Promise.all(
    channels.map(async (headers) => {
      for (const header of headers) {
        try {
          const answer = await get(agent, target, header)
          if (answer.status === 200) ok++
          else {
            failed++
            firstFailure ??= `${answer.status} ${answer.required ? (JSON.parse(atob(answer.required)) as { error?: string }).error : ''}`
          }
        } catch (error) {
          failed++
          firstFailure ??= String(error)
        }
      }
    }),
  )
  const elapsedMs = performance.now() - started
  agent.destroy()
  return { elapsedMs, ok, failed, ...(firstFailure ? { firstFailure } : {}) }
}

process.on('message', (message: BatchLoadRound | 'exit') => {
  if (message === 'exit') process.exit(0)
  void round(message).then((result) => process.send!(result))
})
process.send!('ready')
