/**
 * HTTP: requests per second of POST /verify through the node:http example
 * against calling verify() in-process, on the same anvil, with the same
 * bodies, at the same concurrency. The load generator runs in its own
 * process (bench/http-load.mjs) so the server process does only server work.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startNodeHttpServer } from '../examples/node-http/server.js'
import { createFacilitator } from '../src/index.js'
import { exactEvm, signExactEvmPayment } from '../src/evm/index.js'
import { startEvmFixture } from '../test/support/evm-fixture.js'
import { check, progress, row, runConcurrent, type Row } from './measure.js'

export const HTTP_COUNTS = { bodies: 200, rounds: 3, perRound: 500, concurrency: 32 }

const run = promisify(execFile)
const LOAD = fileURLToPath(new URL('./http-load.mjs', import.meta.url))

export async function benchHttp(): Promise<Row[]> {
  const c = HTTP_COUNTS
  progress(`HTTP: ${c.rounds} rounds of ${c.perRound} EVM verifies at concurrency ${c.concurrency}, in-process vs POST /verify`)
  const world = await startEvmFixture()
  const dir = mkdtempSync(join(tmpdir(), 'x402-bench-'))
  const server = { close: async () => undefined } as { url?: string; close(): Promise<void> }
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
    // CPU of this process (the server) per call: on a small machine the wall-clock rate over HTTP also pays
    // for the load generator's own process, which is no overhead of the handler.
    const cpu = { inProcessMs: 0, httpMs: 0 }
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
    const overHttp = async () => {
      const start = process.cpuUsage()
      const { stdout } = await run(process.execPath, [LOAD, server.url!, String(c.perRound), String(c.concurrency), bodiesFile])
      cpu.httpMs += cpuMsSince(start)
      const result = JSON.parse(stdout) as { elapsedMs: number; ok: number; failed: number }
      check(result.failed === 0, `every POST /verify answers 200 isValid:true (${result.failed} did not)`)
      return (result.ok * 1000) / result.elapsedMs
    }
    // Warm-up of both paths, then alternating rounds.
    await inProcess()
    await overHttp()
    cpu.inProcessMs = 0
    cpu.httpMs = 0
    let inMs = 0
    const httpRates: number[] = []
    for (let round = 0; round < c.rounds; round++) {
      const r = await inProcess()
      check(r.errors.length === 0, `every in-process verify is valid (${String(r.errors[0])})`)
      inMs += r.elapsedMs
      httpRates.push(await overHttp())
    }
    const inRate = (c.rounds * c.perRound * 1000) / inMs
    const httpRate = httpRates.length / httpRates.reduce((sum, rate) => sum + 1 / rate, 0)
    const calls = c.rounds * c.perRound
    const inCpu = cpu.inProcessMs / calls
    const httpCpu = cpu.httpMs / calls
    return [
      row('HTTP', `EVM verify/s, concurrency ${c.concurrency}: POST /verify (node:http example) vs verify() in-process`, 'verify/s', 'higher', httpRate, inRate, 'theirs = our own verify() in-process'),
      row('HTTP', 'handler overhead (1 - http / in-process)', '%', 'lower', (1 - httpRate / inRate) * 100, null, 'wall clock: the load generator\'s process shares the cores'),
      row('HTTP', 'server CPU per verify: POST /verify (node:http example) vs verify() in-process', 'ms', 'lower', httpCpu, inCpu, 'theirs = our own verify() in-process'),
      row('HTTP', 'handler overhead in server CPU (http / in-process - 1)', '%', 'lower', (httpCpu / inCpu - 1) * 100, null, 'target < 10 %'),
    ]
  } finally {
    await server.close()
    await world.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
