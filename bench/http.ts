/**
 * HTTP: requests per second of POST /verify through the node:http example
 * against calling verify() in-process, on the same anvil, with the same
 * bodies, at the same concurrency. The load generator runs in its own
 * process (bench/http-load.mjs) so the server process does only server work.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startNodeHttpServer } from '../examples/node-http/server.js'
import { createFacilitator } from '../src/index.js'
import { exactEvm, signExactEvmPayment } from '../src/evm/index.js'
import { startEvmFixture } from '../test/support/evm-fixture.js'
import { check, progress, row, runConcurrent, type Row } from './measure.js'

export const HTTP_COUNTS = { bodies: 200, rounds: 3, perRound: 500, concurrency: 32 }

const LOAD = fileURLToPath(new URL('./http-load.mjs', import.meta.url))

export async function benchHttp(): Promise<Row[]> {
  const c = HTTP_COUNTS
  progress(`HTTP: ${c.rounds} rounds of ${c.perRound} EVM verifies at concurrency ${c.concurrency}, in-process vs POST /verify`)
  const world = await startEvmFixture()
  const dir = mkdtempSync(join(tmpdir(), 'x402-bench-'))
  const server = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  const bare = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  let load: ChildProcess | undefined
  try {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const requirements = world.requirementsV2()
    const payer = await world.newPayer(10n ** 15n)
    const bodies = await Promise.all(
      Array.from({ length: c.bodies }, async () => ({
        x402Version: 2,
        paymentPayload: await signExactEvmPayment({ signer: payer, requirements, validForSeconds: 3_600 }),
        paymentRequirements: requirements,
      })),
    )
    const bodiesFile = join(dir, 'bodies.json')
    writeFileSync(bodiesFile, JSON.stringify(bodies))
    Object.assign(server, await startNodeHttpServer(facilitator))
    // Baseline: the least plumbing node:http allows (read, JSON.parse, verify, JSON.stringify), so the
    // handler's own cost can be told from what any HTTP server costs.
    const plain = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        facilitator.verify(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then(
          (answer) => {
            res.writeHead(200, { 'content-type': 'application/json' })
            res.end(JSON.stringify(answer))
          },
          () => {
            res.writeHead(500)
            res.end()
          },
        )
      })
    })
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
    Object.assign(bare, {
      url: `http://127.0.0.1:${(plain.address() as AddressInfo).port}`,
      close: () => new Promise<void>((resolve) => plain.close(() => resolve())),
    })
    const generator = fork(LOAD, [bodiesFile], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    load = generator
    await new Promise<void>((resolve) => generator.once('message', () => resolve()))
    const send = (url: string) =>
      new Promise<{ elapsedMs: number; ok: number; failed: number }>((resolve) => {
        generator.once('message', (answer) => resolve(answer as { elapsedMs: number; ok: number; failed: number }))
        generator.send({ url, count: c.perRound, concurrency: c.concurrency })
      })
    // CPU of this process (the server) per call: on a small machine the wall-clock rate over HTTP also pays
    // for the load generator's own process, which is no overhead of the handler.
    const cpu = { inProcessMs: 0, httpMs: 0, bareMs: 0 }
    const cpuMsSince = (start: NodeJS.CpuUsage) => {
      const used = process.cpuUsage(start)
      return (used.user + used.system) / 1000
    }
    const inProcess = async () => {
      const start = process.cpuUsage()
      const result = await runConcurrent(c.perRound, c.concurrency, async (i) => {
        const answer = await facilitator.verify(bodies[i % bodies.length])
        if (!answer.isValid) throw new Error(answer.invalidReason)
      })
      cpu.inProcessMs += cpuMsSince(start)
      return result
    }
    const overHttp = async (url: string, into: 'httpMs' | 'bareMs') => {
      const start = process.cpuUsage()
      const result = await send(url)
      cpu[into] += cpuMsSince(start)
      check(result.failed === 0, `every POST /verify answers 200 isValid:true (${result.failed} did not)`)
      return (result.ok * 1000) / result.elapsedMs
    }
    // Warm-up of both paths, then alternating rounds.
    await inProcess()
    await overHttp(server.url!, 'httpMs')
    await overHttp(bare.url!, 'bareMs')
    cpu.inProcessMs = 0
    cpu.httpMs = 0
    cpu.bareMs = 0
    let inMs = 0
    const httpRates: number[] = []
    const bareRates: number[] = []
    for (let round = 0; round < c.rounds; round++) {
      const r = await inProcess()
      check(r.errors.length === 0, `every in-process verify is valid (${String(r.errors[0])})`)
      inMs += r.elapsedMs
      httpRates.push(await overHttp(server.url!, 'httpMs'))
      bareRates.push(await overHttp(bare.url!, 'bareMs'))
    }
    const inRate = (c.rounds * c.perRound * 1000) / inMs
    const harmonic = (rates: number[]) => rates.length / rates.reduce((sum, rate) => sum + 1 / rate, 0)
    const httpRate = harmonic(httpRates)
    const bareRate = harmonic(bareRates)
    const calls = c.rounds * c.perRound
    const inCpu = cpu.inProcessMs / calls
    const httpCpu = cpu.httpMs / calls
    const bareCpu = cpu.bareMs / calls
    return [
      row('HTTP', `EVM verify/s, concurrency ${c.concurrency}: POST /verify (node:http example) vs verify() in-process`, 'verify/s', 'higher', httpRate, inRate, 'theirs = our own verify() in-process'),
      row('HTTP', 'handler overhead (1 - http / in-process)', '%', 'lower', (1 - httpRate / inRate) * 100, null, 'wall clock: the load generator\'s process shares the cores'),
      row('HTTP', 'server CPU per verify: POST /verify (node:http example) vs verify() in-process', 'ms', 'lower', httpCpu, inCpu, 'theirs = our own verify() in-process'),
      row('HTTP', 'handler overhead in server CPU (http / in-process - 1)', '%', 'lower', (httpCpu / inCpu - 1) * 100, null, 'target < 10 %'),
      row('HTTP', 'server CPU per verify: POST /verify (node:http example) vs bare node:http plumbing', 'ms', 'lower', httpCpu, bareCpu, 'theirs = JSON.parse + verify() + JSON.stringify on node:http'),
      row('HTTP', 'EVM verify/s: bare node:http plumbing vs verify() in-process', 'verify/s', 'higher', bareRate, inRate, 'what any HTTP server costs here'),
    ]
  } finally {
    load?.send('exit')
    await bare.close()
    await server.close()
    await world.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
