/**
 * HTTP: requests per second of POST /verify through the node:http example
 * against calling verify() in-process, on the same anvil, with the same
 * bodies, at the same concurrency. The load generator runs in its own
 * process (bench/http-load.ts) so the server process does only server work.
 */
import diagnostics from 'node:diagnostics_channel'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNodeHttpServer } from '../examples/node-http/server.js'
import { createFacilitator, type Facilitator } from '../src/index.js'
import { parsePaymentRequest } from '../src/schemas/parse-request.js'
import { exactEvm, signExactEvmPayment } from '../src/evm/index.js'
import { RPC_REQUEST_CHANNEL } from '../src/transport/keep-alive-post.js'
import { startEvmFixture } from '../test/support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../test/support/fault-proxy.js'
import { listen } from '../test/support/listen.js'
import { check, ownCpuMs, percentile, progress, row, runConcurrent, startLoadGenerator, type LoadGenerator, type Row } from './measure.js'

export const HTTP_COUNTS = { bodies: 200, rounds: 8, perRound: 1_000, concurrency: 32, instantRounds: 20, instantPerRound: 5_000, rpcDelayMs: 20, farRounds: 4, farSequential: 100 }

export async function benchHttp(): Promise<Row[]> {
  const c = HTTP_COUNTS
  progress(`HTTP: ${c.rounds} rounds of ${c.perRound} EVM verifies at concurrency ${c.concurrency}, in-process vs POST /verify`)
  const world = await startEvmFixture()
  const dir = mkdtempSync(join(tmpdir(), 'x402-bench-'))
  const server = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  const bare = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  const instantServer = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  const instantBare = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  const farServer = { close: async () => undefined } as { url?: string; close(): Promise<void> }
  let proxy: FaultProxy | undefined
  let load: LoadGenerator | undefined
  // Requests to anvil, as our transport publishes them (the load generator's process publishes none here).
  let rpcRequests = 0
  const countRpc = () => void rpcRequests++
  diagnostics.subscribe(RPC_REQUEST_CHANNEL, countRpc)
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
    Object.assign(bare, await startBareServer(facilitator))
    // The handler's own cost, apart from verify's: the same two servers over a facilitator
    // whose verify only parses the body (as ours does first) and answers at once.
    const instant: Pick<Facilitator, 'supported' | 'verify' | 'settle'> = {
      supported: facilitator.supported,
      settle: facilitator.settle,
      verify: async (body) => {
        const parsed = parsePaymentRequest(body)
        return parsed.ok ? { isValid: true, payer: payer.address } : { isValid: false, invalidReason: 'invalid_payload', invalidMessage: 'malformed' }
      },
    }
    Object.assign(instantServer, await startNodeHttpServer(instant as Facilitator))
    Object.assign(instantBare, await startBareServer(instant))
    const generator = await startLoadGenerator(bodiesFile)
    load = generator
    // One round of POST /verify from the load generator; every answer must be 200 isValid:true.
    const post = (url: string, count = c.perRound, concurrency = c.concurrency) => generator.run({ url, count, concurrency })
    // The same round in this process, straight through verify(); every answer must be valid.
    const verifyAll = async (target: Pick<Facilitator, 'verify'>, count = c.perRound, concurrency = c.concurrency) => {
      const result = await runConcurrent(count, concurrency, async (i) => {
        const answer = await target.verify(bodies[i % bodies.length])
        if (!answer.isValid) throw new Error(answer.invalidReason)
      })
      check(result.errors.length === 0, `every in-process verify is valid (${String(result.errors[0])})`)
      return result
    }
    // CPU of this process (the server) per call: on a small machine the wall-clock rate over HTTP also pays
    // for the load generator's own process, which is no overhead of the handler.
    const cpu = { inProcessMs: 0, httpMs: 0, bareMs: 0 }
    const rpc = { inProcess: 0, http: 0 }
    const inProcess = async () => {
      const start = ownCpuMs()
      const requestsBefore = rpcRequests
      const result = await verifyAll(facilitator)
      cpu.inProcessMs += ownCpuMs() - start
      rpc.inProcess += rpcRequests - requestsBefore
      return result
    }
    const overHttp = async (url: string, into: 'httpMs' | 'bareMs') => {
      const start = ownCpuMs()
      const requestsBefore = rpcRequests
      const result = await post(url)
      cpu[into] += ownCpuMs() - start
      if (into === 'httpMs') rpc.http += rpcRequests - requestsBefore
      return (result.ok * 1000) / result.elapsedMs
    }
    // Warm-up of both paths, then alternating rounds.
    await inProcess()
    await overHttp(server.url!, 'httpMs')
    await overHttp(bare.url!, 'bareMs')
    for (const key of Object.keys(cpu) as (keyof typeof cpu)[]) cpu[key] = 0
    rpc.inProcess = 0
    rpc.http = 0
    let inMs = 0
    const httpRates: number[] = []
    const bareRates: number[] = []
    for (let round = 0; round < c.rounds; round++) {
      inMs += (await inProcess()).elapsedMs
      // Which server goes first alternates, so warm-up and garbage left behind fall on both alike.
      if (round % 2 === 0) {
        httpRates.push(await overHttp(server.url!, 'httpMs'))
        bareRates.push(await overHttp(bare.url!, 'bareMs'))
      } else {
        bareRates.push(await overHttp(bare.url!, 'bareMs'))
        httpRates.push(await overHttp(server.url!, 'httpMs'))
      }
    }
    const inRate = (c.rounds * c.perRound * 1000) / inMs
    const harmonic = (rates: number[]) => rates.length / rates.reduce((sum, rate) => sum + 1 / rate, 0)
    const httpRate = harmonic(httpRates)
    const bareRate = harmonic(bareRates)
    const calls = c.rounds * c.perRound
    const inCpu = cpu.inProcessMs / calls
    const httpCpu = cpu.httpMs / calls
    const bareCpu = cpu.bareMs / calls

    // The handler's own cost: server CPU a request with a verify that answers at once, our handler
    // against bare node:http, in alternating rounds. The figure is the median of the rounds' differences,
    // as a busy neighbour on a shared machine moves both servers of a round alike but not every round.
    progress(`HTTP: ${c.instantRounds} rounds of ${c.instantPerRound} requests answered at once, our handler vs bare node:http`)
    const instantCpuUs = async (url: string) => {
      const start = ownCpuMs()
      await post(url, c.instantPerRound)
      return ((ownCpuMs() - start) * 1000) / c.instantPerRound
    }
    await instantCpuUs(instantServer.url!)
    await instantCpuUs(instantBare.url!)
    const instantRounds: { ours: number; bare: number }[] = []
    for (let round = 0; round < c.instantRounds; round++) {
      const figures = { ours: 0, bare: 0 }
      for (const side of round % 2 === 0 ? (['ours', 'bare'] as const) : (['bare', 'ours'] as const)) {
        figures[side] = await instantCpuUs((side === 'ours' ? instantServer : instantBare).url!)
      }
      instantRounds.push(figures)
    }
    const median = (values: number[]) => percentile(values, 50)
    const instantHttpUs = median(instantRounds.map((r) => r.ours))
    const instantBareUs = median(instantRounds.map((r) => r.bare))
    const handlerExtraUs = median(instantRounds.map((r) => r.ours - r.bare))

    // A hosted RPC is tens of ms away: there a verify waits on the network, not on the CPU, and the
    // same comparison says what HTTP costs a deployment. A proxy holds every request to anvil 20 ms.
    progress(`HTTP: ${c.rpcDelayMs} ms to the RPC, ${c.farRounds} rounds of ${c.perRound} verifies at concurrency ${c.concurrency} and ${c.farSequential} one at a time`)
    proxy = await startFaultProxy(world.node.rpcUrl)
    proxy.setMode({ kind: 'delay', ms: c.rpcDelayMs })
    const far = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset] }] }))],
    })
    Object.assign(farServer, await startNodeHttpServer(far))
    const farInProcess = async (count: number, concurrency: number) => (await verifyAll(far, count, concurrency)).elapsedMs
    const farOverHttp = async (count: number, concurrency: number) => (await post(farServer.url!, count, concurrency)).elapsedMs
    await farInProcess(c.farSequential, c.concurrency)
    await farOverHttp(c.farSequential, c.concurrency)
    const farMs = { inProcess: 0, http: 0, inProcessOne: 0, httpOne: 0 }
    for (let round = 0; round < c.farRounds; round++) {
      const order = round % 2 === 0 ? (['inProcess', 'http'] as const) : (['http', 'inProcess'] as const)
      for (const side of order) farMs[side] += side === 'http' ? await farOverHttp(c.perRound, c.concurrency) : await farInProcess(c.perRound, c.concurrency)
    }
    farMs.inProcessOne = await farInProcess(c.farSequential, 1)
    farMs.httpOne = await farOverHttp(c.farSequential, 1)
    const farRate = (ms: number) => (c.farRounds * c.perRound * 1000) / ms
    const far1 = (ms: number) => ms / c.farSequential

    return [
      row('HTTP', `EVM verify/s, concurrency ${c.concurrency}: POST /verify (node:http example) vs verify() in-process`, 'verify/s', 'higher', httpRate, inRate, 'theirs = our own verify() in-process'),
      row('HTTP', 'handler overhead (1 - http / in-process)', '%', 'lower', (1 - httpRate / inRate) * 100, null, 'wall clock: the load generator\'s process shares the cores'),
      row('HTTP', 'server CPU per verify: POST /verify (node:http example) vs verify() in-process', 'ms', 'lower', httpCpu, inCpu, 'theirs = our own verify() in-process'),
      row('HTTP', 'handler overhead in server CPU (http / in-process - 1)', '%', 'lower', (httpCpu / inCpu - 1) * 100, null, 'target < 10 %'),
      row('HTTP', `RPC requests per verify, concurrency ${c.concurrency}: POST /verify (node:http example) vs verify() in-process`, 'requests', 'lower', rpc.http / calls, rpc.inProcess / calls, 'HTTP requests to anvil: verifies read in one event-loop turn share a batch; in-process ones start in lockstep'),
      row('HTTP', 'server CPU per verify: POST /verify (node:http example) vs bare node:http plumbing', 'ms', 'lower', httpCpu, bareCpu, 'theirs = JSON.parse + verify() + JSON.stringify on node:http'),
      row('HTTP', 'EVM verify/s: bare node:http plumbing vs verify() in-process', 'verify/s', 'higher', bareRate, inRate, 'what any HTTP server costs here'),
      row('HTTP', 'server CPU per request, verify answered at once: our handler vs bare node:http', 'µs', 'lower', instantHttpUs, instantBareUs, `medians of ${c.instantRounds} rounds each`),
      row('HTTP', 'our handler\'s extra CPU per request (vs bare node:http), verify answered at once', 'µs', 'lower', handlerExtraUs, null, 'median of the rounds\' differences'),
      row('HTTP', 'our handler\'s extra CPU per verify (vs bare node:http), share of an in-process verify', '%', 'lower', (handlerExtraUs / (inCpu * 1000)) * 100, null, 'target < 10 %'),
      row('HTTP', `${c.rpcDelayMs} ms to the RPC: EVM verify/s, concurrency ${c.concurrency}: POST /verify (node:http example) vs verify() in-process`, 'verify/s', 'higher', farRate(farMs.http), farRate(farMs.inProcess), 'theirs = our own verify() in-process; every RPC request held 20 ms by a proxy'),
      row('HTTP', `${c.rpcDelayMs} ms to the RPC: time per verify, one at a time: POST /verify (node:http example) vs verify() in-process`, 'ms', 'lower', far1(farMs.httpOne), far1(farMs.inProcessOne), 'theirs = our own verify() in-process'),
    ]
  } finally {
    diagnostics.unsubscribe(RPC_REQUEST_CHANNEL, countRpc)
    load?.close()
    await Promise.all([bare.close(), server.close(), instantServer.close(), instantBare.close(), farServer.close()])
    await proxy?.close()
    await world.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** JSON.parse + verify() + JSON.stringify on plain node:http: what any HTTP server costs. */
function startBareServer(facilitator: Pick<Facilitator, 'verify'>) {
  return listen((req, res) => {
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
}
