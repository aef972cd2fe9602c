/**
 * The x402-facilitator command as a child process, configured from environment
 * variables only, against anvil, LiteSVM and a real Redis: payments verified and
 * settled through it, its health, metrics and statistics routes, refusals to
 * start, and a SIGTERM in the middle of a settle.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createKeyPairSignerFromBytes, lamports } from '@solana/kit'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'
import { createPaymentScenario, scenarioPaymentBody, startSolanaTestRpc, type PaymentScenario } from '../support/svm-fixtures.js'
import { killCliProcesses, startCli } from './cli-process.js'

let world: EvmFixture
let chain: LiteSvmRpc
let redis: RedisServer
let evmKey: `0x${string}`
let solanaKeypair: number[]
let scenario: PaymentScenario
const children: ChildProcess[] = []

beforeAll(async () => {
  ;[world, chain, redis] = await Promise.all([startEvmFixture(), startSolanaTestRpc(), startRedisServer()])
  evmKey = generatePrivateKey()
  await world.node.testClient.setBalance({ address: privateKeyToAccount(evmKey).address, value: 10n ** 20n })
  // A 64-byte keypair as solana-keygen writes it: the 32-byte seed, then the public key.
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url')
  const pub = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url')
  solanaKeypair = [...seed, ...pub]
  const feePayer = await createKeyPairSignerFromBytes(Uint8Array.from(solanaKeypair))
  chain.svm.airdrop(feePayer.address, lamports(10_000_000_000n))
  scenario = await createPaymentScenario(chain.svm, { feePayer })
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  killCliProcesses()
  await Promise.all([world?.stop(), chain?.close(), redis?.stop()])
})

const TOKEN = 'shop:0123456789abcdef0123456789'
const ADMIN_TOKEN = 'ops:fedcba9876543210fedcba9876'

function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NETWORKS: 'eip155:84532,solana-devnet',
    RPC_URL_EIP155_84532: world.node.rpcUrl,
    RPC_URL_SOLANA_DEVNET: chain.url,
    EVM_PRIVATE_KEYS: evmKey,
    SOLANA_FEE_PAYER_KEYS: JSON.stringify(solanaKeypair),
    ASSETS_EIP155_84532: `${world.token.address}:${world.token.name}:${world.token.version}`,
    ASSETS_SOLANA_DEVNET: scenario.mint,
    HOST: '127.0.0.1',
    PORT: '0',
    STATS_PORT: '0',
    STORE_URL: `${redis.url}`,
    API_TOKENS: TOKEN,
    ADMIN_TOKENS: ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    ...extra,
  }
}

const bearer = (entry: string) => ({ authorization: `Bearer ${entry.slice(entry.indexOf(':') + 1)}` })
const auth = { ...bearer(TOKEN), 'content-type': 'application/json' }
const admin = bearer(ADMIN_TOKEN)
const post = async (url: string, body: unknown) => {
  const answer = await fetch(url, { method: 'POST', headers: auth, body: JSON.stringify(body) })
  return { status: answer.status, json: (await answer.json()) as Record<string, unknown> }
}

describe('x402-facilitator command', () => {
  it('serves payments on EVM and Solana from environment variables, with health, metrics and statistics', async () => {
    const running = await startCli(baseEnv())
    try {
      const supported = (await (await fetch(`${running.url}/supported`, { headers: auth })).json()) as { kinds: { network: string }[] }
      expect(supported.kinds.map((kind) => kind.network)).toEqual(expect.arrayContaining(['eip155:84532', 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1']))

      const payer = await world.newPayer(10_000n)
      const requirements = world.requirementsV2({ amount: '1000' })
      const evmBody = { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements }
      expect((await post(`${running.url}/verify`, evmBody)).json).toMatchObject({ isValid: true })
      // The settle names itself; its landing is logged at info under that id.
      const settleAnswer = await fetch(`${running.url}/settle`, { method: 'POST', headers: { ...auth, 'x-request-id': 'settle-evm-1' }, body: JSON.stringify(evmBody) })
      expect(settleAnswer.headers.get('x-request-id')).toBe('settle-evm-1')
      const settled = (await settleAnswer.json()) as Record<string, unknown>
      expect(settled).toMatchObject({ success: true, network: 'eip155:84532' })

      const svmBody = await scenarioPaymentBody(chain.url, scenario, 1_000n)
      expect((await post(`${running.url}/settle`, svmBody)).json).toMatchObject({ success: true })

      // Without the token: 401.
      expect((await fetch(`${running.url}/verify`, { method: 'POST', body: JSON.stringify(evmBody) })).status).toBe(401)
      expect((await fetch(`${running.url}/healthz`)).status).toBe(200)
      const ready = await fetch(`${running.url}/readyz`)
      expect(ready.status).toBe(200)
      // Rapid calls answer from the one cached check.
      const checkedAt = new Set<string>()
      for (let i = 0; i < 20; i++) checkedAt.add(((await (await fetch(`${running.url}/readyz`)).json()) as { checkedAt: string }).checkedAt)
      expect(checkedAt.size).toBe(1)
      // /metrics takes an operator's token, not a payment client's.
      expect((await fetch(`${running.url}/metrics`, { headers: auth })).status).toBe(401)
      const metrics = await (await fetch(`${running.url}/metrics`, { headers: admin })).text()
      expect(metrics).toMatch(/x402_settle_total\{network="eip155:84532",scheme="exact",outcome="success"\} 1/)
      expect(metrics).toContain("x402_rpc_requests_total")
      expect(metrics).toMatch(/x402_signer_balance\{network="eip155:84532",signer="0x[0-9a-fA-F]{40}"\} \d/)
      // Statistics on their own port, public.
      const stats = (await (await fetch(`${running.url.replace(/:\d+$/, '')}:${new URL(running.statsUrl).port}/public/stats`)).json()) as Record<string, unknown>
      expect(JSON.stringify(stats)).toMatch(/settle/)

      // The page for people at / of the statistics host, beside its JSON.
      const page = await fetch(`${running.statsUrl}/`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toMatch(/^text\/html/)
      expect(page.headers.get('x-request-id')).toMatch(/./)

      running.child.kill('SIGTERM')
      expect(await running.exited).toBe(0)
      const landed = running.logs().filter((line) => line.event === 'settled')
      expect(landed).toContainEqual(
        expect.objectContaining({ level: 30, requestId: 'settle-evm-1', network: 'eip155:84532', payer: payer.address, amount: '1000', asset: world.token.address, transaction: settled.transaction }),
      )
      expect(landed.find((line) => line.network !== 'eip155:84532')).toMatchObject({ network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', amount: '1000' })
      expect(running.notJson()).toEqual([])
      const events = running.logs().map((line) => line.event)
      expect(events).toEqual(expect.arrayContaining(['configured', 'listening', 'shutting_down', 'stopped']))
      const everything = JSON.stringify(running.logs()) + running.stderr()
      expect(everything).not.toContain(evmKey.slice(2))
      expect(everything).not.toContain(TOKEN.slice(5))
      expect(everything).not.toContain(ADMIN_TOKEN.slice(4))
      // Tokens are set and the host is loopback: no warning about an open service.
      expect(events).not.toContain('settle_open')
      expect(events).not.toContain('listening_open')
    } finally {
      running.child.kill('SIGKILL')
    }
  })

  it('refuses to start with one line per missing or malformed variable, no stack trace, no secret', async () => {
    const env = baseEnv({ EVM_PRIVATE_KEYS: 'deadbeef', RPC_URL_SOLANA_DEVNET: '' })
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/cli.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code).toBe(1)
    expect(stderr.trim().split('\n')).toEqual([
      'x402-facilitator: RPC_URL_SOLANA_DEVNET is missing: the JSON-RPC URL of solana-devnet',
      'x402-facilitator: EVM_PRIVATE_KEYS (key 1) is not 0x followed by 64 hex digits',
      'x402-facilitator: not started; run with --help for every variable',
    ])
    expect(stderr).not.toMatch(/\n\s+at /)
    expect(stderr).not.toContain('deadbeef')
  })

  it('--help lists the variables and exits 0', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/cli.ts', '--help'], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    let stdout = ''
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0)
    for (const name of ['NETWORKS', 'RPC_URL_<NETWORK>', 'EVM_PRIVATE_KEYS', 'SOLANA_FEE_PAYER_KEYS', 'STORE_URL', 'API_TOKENS', 'RATE_LIMIT_VERIFY']) expect(stdout).toContain(name)
  })

  it('SIGTERM in the middle of a settle on the default SQLite store: the settle finishes, the process exits 0, and a retry after restart answers its transaction; the ledger has it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'x402-cli-'))
    const sqliteEnv = () => baseEnv({ STORE_URL: `sqlite:${join(dataDir, 'facilitator.db')}` })
    const running = await startCli(sqliteEnv())
    const payer = await world.newPayer(10_000n)
    const requirements = world.requirementsV2({ amount: '1000' })
    const body = { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements }
    // Blocks only when asked: the settle's transaction waits in the pool.
    await world.node.testClient.setAutomine(false)
    let settling: Promise<{ status: number; json: Record<string, unknown> }> | undefined
    try {
      settling = post(`${running.url}/settle`, body)
      // Until the transaction is in the pool (the settle has sent it and waits for the receipt).
      for (let i = 0; i < 200 && (await world.node.publicClient.request({ method: 'txpool_status' as never }) as { pending: string }).pending === '0x0'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      running.child.kill('SIGTERM')
      await new Promise((resolve) => setTimeout(resolve, 200))
      await world.node.testClient.mine({ blocks: 1 })
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    const answer = await settling!
    expect(answer.json).toMatchObject({ success: true })
    expect(await running.exited).toBe(0)

    const again = await startCli(sqliteEnv())
    try {
      const retry = await post(`${again.url}/settle`, body)
      expect(retry.json).toMatchObject({ success: true, transaction: answer.json.transaction })
      // The ledger survived the restart, and is served only with an operator's token.
      expect((await fetch(`${again.url}/ledger`)).status).toBe(401)
      expect((await fetch(`${again.url}/ledger`, { headers: auth })).status).toBe(401)
      const ledger = (await (await fetch(`${again.url}/ledger`, { headers: admin })).json()) as { entries: { transaction?: string; status: string }[] }
      expect(ledger.entries).toContainEqual(expect.objectContaining({ transaction: answer.json.transaction, status: 'settled' }))
    } finally {
      again.child.kill('SIGTERM')
      await again.exited
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
