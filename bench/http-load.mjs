// Load generator for bench/http.ts, run in its own process so the server process only serves.
// argv: url, count, concurrency, bodiesFile. Prints {"elapsedMs":..,"ok":..,"failed":..} on stdout.
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'

const [url, countText, concurrencyText, bodiesFile] = process.argv.slice(2)
const count = Number(countText)
const concurrency = Number(concurrencyText)
const bodies = JSON.parse(readFileSync(bodiesFile, 'utf8')).map((b) => Buffer.from(JSON.stringify(b)))
const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
const target = new URL('/verify', url)

function post(body) {
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

let next = 0
let ok = 0
let failed = 0
const started = performance.now()
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    for (;;) {
      const i = next++
      if (i >= count) return
      if (await post(bodies[i % bodies.length])) ok++
      else failed++
    }
  }),
)
process.stdout.write(JSON.stringify({ elapsedMs: performance.now() - started, ok, failed }))
agent.destroy()
