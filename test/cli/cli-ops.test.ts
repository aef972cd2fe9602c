/**
 * Operating the x402-facilitator command, as a child process against anvil, a real Redis and
 * a real PostgreSQL: --version, every missing package named at once, the start-up checks (a
 * wrong chain or a missing database ends the start with one line naming the variable; an
 * outage is a warning and a red /readyz until it clears), every line JSON while Redis or
 * PostgreSQL is unreachable, request ids in the lines a request causes, RPC faults that name
 * network, host and cause. Outages are real closed ports; a TCP gate opens them later.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, connect, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startPostgresServer, type PostgresServer } from '../support/postgres-server.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'
import { evmCliEnv, killCliProcesses, refusedCli, startCli, type RunningCli } from './cli-process.js'

let world: EvmFixture
let redis: RedisServer
let postgres: PostgresServer
let evmKey: `0x${string}`
const gates: Gate[] = []

beforeAll(async () => {
  ;[world, redis, postgres] = await Promise.all([startEvmFixture(), startRedisServer(), startPostgresServer()])
  evmKey = generatePrivateKey()
  await world.node.testClient.setBalance({ address: privateKeyToAccount(evmKey).address, value: 10n ** 20n })
})
afterAll(async () => {
  killCliProcesses()
  await Promise.all(gates.map((gate) => gate.close()))
  await Promise.all([world?.stop(), redis?.stop(), postgres?.stop()])
})

/** A loopback port that refuses connections until `open` forwards it, byte for byte, to a real server. */
interface Gate {
  readonly port: number
  open(targetPort: number): Promise<void>
  close(): Promise<void>
}

async function closedGate(): Promise<Gate> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  let server: Server | undefined
  const sockets = new Set<Socket>()
  const gate: Gate = {
    port,
    async open(targetPort) {
      server = createServer((client) => {
        const upstream = connect(targetPort, '127.0.0.1')
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on('close', () => sockets.delete(socket))
          socket.on('error', () => undefined)
        }
        client.pipe(upstream).pipe(client)
      })
      await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve))
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      if (server) await new Promise((resolve) => server!.close(resolve))
    },
  }
  gates.push(gate)
  return gate
}

const SECRETS = ['SECRET-PASS-123', 'SECRET-QUERY-123', 'SECRET-PG-PASS-123']

const env = (extra: Record<string, string>) => evmCliEnv(world, evmKey, extra)

/** A signed v2 payment in the fixture's token. */
async function paymentBody() {
  const payer = await world.newPayer(10_000n)
  const requirements = world.requirementsV2({ amount: '1000' })
  return { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements }
}

async function readyz(running: RunningCli): Promise<{ status: number; checks: { name: string; ok: boolean; detail?: string }[] }> {
  const answer = await fetch(`${running.url}/readyz`)
  const body = (await answer.json()) as { checks: { name: string; ok: boolean; detail?: string }[] }
  return { status: answer.status, checks: body.checks }
}

/** Until /readyz answers 200 (its answer is cached up to 5 s). */
async function readyWithin(running: RunningCli, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if ((await readyz(running)).status === 200) return true
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  return false
}

function everyLineIsJson(running: RunningCli): void {
  expect(running.notJson()).toEqual([])
  expect(running.stderr()).toBe('')
  const everything = JSON.stringify(running.logs())
  for (const secret of [...SECRETS, evmKey.slice(2)]) expect(everything).not.toContain(secret)
}

describe('x402-facilitator command, operated', () => {
  it('--version prints the package version and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    const answer = await refusedCli({ PATH: process.env.PATH ?? '' }, ['--version'])
    expect(answer).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
  })

  it('one start names every missing package of the configuration, with one npm install line for all of them', async () => {
    const hidden = ['pino', 'viem', 'better-sqlite3', '@solana/kit', '@solana-program/token']
    const answer = await refusedCli(
      {
        PATH: process.env.PATH ?? '',
        X402_TEST_HIDE_PACKAGES: hidden.join(','),
        NETWORKS: 'base,solana-devnet',
        RPC_URL_BASE: 'https://base.example',
        RPC_URL_SOLANA_DEVNET: 'https://solana.example',
        EVM_PRIVATE_KEYS: evmKey,
        SOLANA_FEE_PAYER_KEYS: JSON.stringify(Array.from({ length: 64 }, (_, i) => i)),
      },
      [],
      { nodeArgs: ['--import', './test/cli/hide-packages.mjs'] },
    )
    expect(answer.code).toBe(1)
    expect(answer.stderr.trim().split('\n')).toEqual([
      'x402-facilitator: this configuration needs packages that are not installed: pino (logging), viem (EVM networks), @solana/kit @solana-program/token (Solana networks), better-sqlite3 (STORE_URL=sqlite:…, the default store)',
      'x402-facilitator: install them all with: npm install pino viem @solana/kit @solana-program/token better-sqlite3',
    ])
    expect(answer.stdout).toBe('')
  })

  it('a wrong chain or a missing database ends the start with one line naming the variable', async () => {
    const wrongChain = await refusedCli(env({ NETWORKS: 'base', RPC_URL_BASE: world.node.rpcUrl, RPC_URL_EIP155_84532: '', ASSETS_EIP155_84532: '' }))
    expect(wrongChain.code).toBe(1)
    expect(wrongChain.stderr).toBe('x402-facilitator: RPC_URL_BASE points at the wrong chain for base: the RPC serves chain 84532, not 8453\n')

    const noDatabase = await refusedCli(env({ STORE_URL: `postgres://postgres:SECRET-PG-PASS-123@127.0.0.1:${postgres.port}/nosuchdb` }))
    expect(noDatabase.code).toBe(1)
    expect(noDatabase.stderr).toBe('x402-facilitator: STORE_URL names a PostgreSQL database that does not exist: create it (createdb) or fix the name\n')
    // What it wrote before refusing is JSON, without the password.
    for (const line of [...wrongChain.stdout.split('\n'), ...noDatabase.stdout.split('\n')].filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow()
    expect(noDatabase.stdout + noDatabase.stderr).not.toContain('SECRET-PG-PASS-123')
  })

  it('a SIGTERM while the start-up checks wait on a hung RPC ends the start at once, exit 0', async () => {
    const held: Socket[] = []
    const hung = createServer((socket) => void held.push(socket))
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/cli.ts'], {
      env: env({ RPC_URL_EIP155_84532: `http://127.0.0.1:${(hung.address() as AddressInfo).port}/` }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    try {
      const lines: Record<string, unknown>[] = []
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
      await new Promise<void>((resolve) => {
        let buffered = ''
        child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          buffered += chunk
          let at: number
          while ((at = buffered.indexOf('\n')) >= 0) {
            const line = JSON.parse(buffered.slice(0, at)) as Record<string, unknown>
            buffered = buffered.slice(at + 1)
            lines.push(line)
            // Configured: the start-up checks run now, for up to 5 s.
            if (line.event === 'configured') resolve()
          }
        })
      })
      const signalled = Date.now()
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
      expect(Date.now() - signalled).toBeLessThan(2_000)
      expect(lines.map((line) => line.event)).not.toContain('listening')
      expect(lines.at(-1)).toMatchObject({ event: 'stopped', signal: 'SIGTERM' })
    } finally {
      child.kill('SIGKILL')
      for (const socket of held) socket.destroy()
      await new Promise((resolve) => hung.close(resolve))
    }
  })

  it('Redis and the RPC unreachable at start: it starts, warns, writes only JSON lines, names each request and RPC fault, and is ready once they answer', async () => {
    const [redisGate, rpcGate] = await Promise.all([closedGate(), closedGate()])
    const running = await startCli(
      env({
        STORE_URL: `redis://127.0.0.1:${redisGate.port}`,
        RPC_URL_EIP155_84532: `http://operator:SECRET-PASS-123@127.0.0.1:${rpcGate.port}/?key=SECRET-QUERY-123`,
      }),
    )
    try {
      const failed = running.logs().filter((line) => line.event === 'startup_check_failed')
      expect(failed.map((line) => [line.check, line.variable])).toEqual(
        expect.arrayContaining([
          ['store', 'STORE_URL'],
          ['rpc eip155:84532', 'RPC_URL_EIP155_84532'],
        ]),
      )
      expect(failed.every((line) => line.level === 40)).toBe(true)
      const report = await readyz(running)
      expect(report.status).toBe(503)
      expect(report.checks.filter((check) => !check.ok).map((check) => check.name)).toEqual(['store', 'rpc eip155:84532'])

      // A request's lines carry its id; the RPC fault names the network, the host (no path, query or credentials) and the cause.
      const answer = await fetch(`${running.url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'ops-test-42' }, body: JSON.stringify(await paymentBody()) })
      expect(answer.headers.get('x-request-id')).toBe('ops-test-42')
      expect(answer.status).toBe(503)
      const generated = await fetch(`${running.url}/healthz`)
      expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      // Reconnect attempts go on meanwhile (ioredis tries about once a second).
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      const ofRequest = running.logs().filter((line) => line.requestId === 'ops-test-42')
      expect(ofRequest.map((line) => line.event)).toEqual(expect.arrayContaining(['rpc_failed']))
      const rpcFailed = ofRequest.find((line) => line.event === 'rpc_failed')!
      expect(rpcFailed).toMatchObject({ network: 'eip155:84532', host: `127.0.0.1:${rpcGate.port}`, cause: 'connection refused', level: 40 })
      const storeErrors = running.logs().filter((line) => line.event === 'store_connection_error')
      expect(storeErrors.length).toBeGreaterThanOrEqual(1)
      // At most one a 30 s, however often ioredis retries.
      expect(storeErrors.length).toBeLessThanOrEqual(1)
      expect(storeErrors[0]).toMatchObject({ store: 'redis', variable: 'STORE_URL', code: 'ECONNREFUSED' })
      everyLineIsJson(running)

      // The outage passes: /readyz turns green without a restart.
      await Promise.all([redisGate.open(redis.port), rpcGate.open(world.node.port)])
      expect(await readyWithin(running, 15_000)).toBe(true)
      running.child.kill('SIGTERM')
      expect(await running.exited).toBe(0)
      everyLineIsJson(running)
    } finally {
      running.child.kill('SIGKILL')
    }
  })

  it('PostgreSQL unreachable at start: it starts, warns, writes only JSON lines, a settle that needs the store fails with its id in the log, and it is ready once PostgreSQL answers', async () => {
    const pgGate = await closedGate()
    const running = await startCli(env({ STORE_URL: `postgres://postgres:SECRET-PG-PASS-123@127.0.0.1:${pgGate.port}/postgres`, API_TOKENS: 'shop:0123456789abcdef0123' }))
    try {
      expect(running.logs().find((line) => line.event === 'startup_check_failed')).toMatchObject({ check: 'store', variable: 'STORE_URL', detail: 'ECONNREFUSED' })
      expect((await readyz(running)).status).toBe(503)
      // A settle is claimed in the store before anything is sent: it cannot be served while the store is down.
      const answer = await fetch(`${running.url}/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer 0123456789abcdef0123', 'x-request-id': 'pg-down-7' },
        body: JSON.stringify(await paymentBody()),
      })
      expect(answer.status, await answer.clone().text()).toBeGreaterThanOrEqual(500)
      expect(answer.headers.get('x-request-id')).toBe('pg-down-7')
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      const ofRequest = running.logs().filter((line) => line.requestId === 'pg-down-7')
      expect(ofRequest.map((line) => line.event), JSON.stringify(running.logs())).toEqual(expect.arrayContaining(['fault', 'http_fault']))
      everyLineIsJson(running)

      await pgGate.open(postgres.port)
      expect(await readyWithin(running, 15_000)).toBe(true)
      const served = await fetch(`${running.url}/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer 0123456789abcdef0123' },
        body: JSON.stringify(await paymentBody()),
      })
      expect(await served.json()).toMatchObject({ isValid: true })
      running.child.kill('SIGTERM')
      expect(await running.exited).toBe(0)
      everyLineIsJson(running)
    } finally {
      running.child.kill('SIGKILL')
    }
  })
})
