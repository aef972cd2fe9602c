/**
 * Where a signed-ahead batch voucher's CPU goes, one side at a time (not part of `npm run bench`):
 * the bench's own setup, then `presigned` vouchers per channel sent as in bench/evm-batch.ts, with
 * this process's CPU per voucher, and a CPU profile of that phase alone when `--profile <file>`.
 * `bare` answers the same requests from a plain node:http server: the floor of HTTP and the client;
 * `node` is ours through createNodePaywall (node:http req/res, no web Request/Response);
 * `listener` through createNodeListener with a handler answering as the paywall does (the web Request/Response cost).
 *
 *   node --expose-gc --import tsx bench/batch-profile.ts ours|node|theirs|bare|listener [--remote] [--rounds N] [--profile out.cpuprofile]
 */
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { LocalAccount } from 'viem'
import { createNodeListener } from '../src/http/node-listener.js'
import { installBatchSettlement } from '../test/support/batch-settlement-contracts.js'
import { startEvmFixture } from '../test/support/evm-fixture.js'
import { installPermit2 } from '../test/support/permit2-contracts.js'
import { BATCH_COUNTS, client, ourSide, presign, startBatchLoad, theirSide, type Side } from './evm-batch.js'
import { check, ownCpuMs, processCpuMs } from './measure.js'

const args = process.argv.slice(2)
const which = args[0] as 'ours' | 'node' | 'theirs' | 'bare' | 'listener'
const rounds = Number(args[args.indexOf('--rounds') + 1] || 3) || 3
const profileFile = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : undefined
// --remote: the requests come from bench/batch-load.ts in its own process (node:http client).
const load = args.includes('--remote') ? await startBatchLoad() : undefined

const world = await startEvmFixture({ signerCount: 3 })
await installPermit2(world.node)
await installBatchSettlement(world.node)
const real = await (which === 'theirs' ? theirSide(world) : ourSide(world, which === 'node' ? 'node' : 'web'))
// The bare floor answers what ours answers: 200, a JSON body and a PAYMENT-RESPONSE of the same size.
let side: Side = real
let bare: { close(): void } | undefined
let sampleResponse = ''

async function channels(count: number) {
  const payers: LocalAccount[] = []
  for (let i = 0; i < count; i++) payers.push(await world.newPayer(10n ** 12n))
  const pays = payers.map((payer) => client(payer))
  for (const pay of pays) {
    const response = await pay(`${real.url}/call`)
    check(response.status === 200, 'a deposit call was not paid')
    sampleResponse = response.headers.get('PAYMENT-RESPONSE') ?? ''
  }
  return Promise.all(payers.map((payer, i) => presign(payer, pays[i]!.sent.at(-1)!, 1n, BATCH_COUNTS.presigned)))
}

async function send(ahead: string[][]) {
  if (load) return void (await load.run({ url: side.url, channels: ahead }))
  await Promise.all(
    ahead.map(async (headers) => {
      for (const header of headers) {
        const response = await fetch(`${side.url}/call`, { headers: { 'PAYMENT-SIGNATURE': header } })
        check(response.status === 200, `refused: ${response.status} ${response.headers.get('PAYMENT-REQUIRED') ?? ''}`)
        await response.arrayBuffer()
      }
    }),
  )
}

// Warm-up: two rounds of channels, untimed.
for (let i = 0; i < 2; i++) {
  const ahead = await channels(BATCH_COUNTS.channels)
  if (which === 'bare' || which === 'listener') await startBare()
  await send(ahead)
}
async function startBare() {
  if (bare) return
  const body = JSON.stringify({ ok: true })
  // `listener`: createNodeListener with a handler that answers as the paywall does, without the paywall.
  const viaListener = createNodeListener(async () => {
    const response = Response.json({ ok: true })
    response.headers.set('PAYMENT-RESPONSE', sampleResponse)
    return response
  })
  const server = createServer(which === 'listener' ? viaListener : (req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'application/json', 'PAYMENT-RESPONSE': sampleResponse, 'content-length': Buffer.byteLength(body) })
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  bare = { close: () => server.close() }
  side = { ...real, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

const session = new Session()
if (profileFile) {
  session.connect()
  await session.post('Profiler.setSamplingInterval', { interval: 100 })
  await session.post('Profiler.enable')
}
const results: string[] = []
for (let r = 0; r < rounds; r++) {
  const ahead = await channels(BATCH_COUNTS.channels)
  const vouchers = ahead.flat().length
  if (profileFile && r === rounds - 1) await session.post('Profiler.start')
  globalThis.gc?.()
  const cpu = ownCpuMs()
  const usage = process.cpuUsage()
  const loadCpu = processCpuMs(load?.pid)
  const started = performance.now()
  await send(ahead)
  const wall = performance.now() - started
  const used = ownCpuMs() - cpu
  const split = process.cpuUsage(usage)
  const loadUsed = load ? processCpuMs(load.pid)! - loadCpu! : 0
  results.push(`${which} round ${r}: ${((vouchers / wall) * 1000).toFixed(0)} vouchers/s, ${((used * 1000) / vouchers).toFixed(0)} µs CPU per voucher (user ${(split.user / vouchers).toFixed(0)}, system ${(split.system / vouchers).toFixed(0)}; wall ${((wall * 1000) / vouchers).toFixed(0)} µs)${load ? `, load generator ${((loadUsed * 1000) / vouchers).toFixed(0)} µs` : ''}`)
  if (profileFile && r === rounds - 1) {
    const { profile } = await session.post('Profiler.stop')
    writeFileSync(profileFile, JSON.stringify(profile))
  }
}
console.log(results.join('\n'))
bare?.close()
load?.close()
await real.close()
await world.stop()
