// Load generator for bench/http.ts, run in its own process so the server process only serves.
// Forked with IPC: argv is the bodies file; each message {url, count, concurrency} runs one round
// and is answered with {elapsedMs, ok, failed}. Staying alive between rounds keeps process start-up
// out of the server's CPU figures.
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'

const [bodiesFile] = process.argv.slice(2)
const bodies = JSON.parse(readFileSync(bodiesFile, 'utf8')).map((b) => Buffer.from(JSON.stringify(b)))

function post(agent, target, body) {
  return new Promise((resolve) => {
    const req = request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve(res.statusCode === 200 && JSON.parse(Buffer.concat(chunks).toString()).isValid === true))
    })
    req.on('error', () => resolve(false))
    req.end(body)
  })
}

async function round({ url, count, concurrency }) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
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
        if (await post(agent, target, bodies[i % bodies.length])) ok++
        else failed++
      }
    }),
  )
  const elapsedMs = performance.now() - started
  agent.destroy()
  return { elapsedMs, ok, failed }
}

process.on('message', (message) => {
  if (message === 'exit') process.exit(0)
  round(message).then((result) => process.send(result))
})
process.send('ready')
