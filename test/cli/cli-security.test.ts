/**
 * The command's service surface under abuse, as a child process against anvil (the real Permit2 and
 * the x402 proxies at their canonical addresses): upto served only with API tokens and settled only
 * by them; operators' tokens apart from payment clients' (shop-b cannot read shop-a's ledger rows);
 * TRUST_PROXY behind a real forwarding proxy with spoofed chains; warnings when the service is open.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { x402Client } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import type { LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { requestFrom, startForwardingProxy } from '../support/forwarding-proxy.js'
import { installPermit2, newPermit2Payer } from '../support/permit2-contracts.js'
import { evmCliEnv, killCliProcesses, refusedCli, startCli } from './cli-process.js'

let world: EvmFixture
let evmKey: `0x${string}`
const dataDir = mkdtempSync(join(tmpdir(), 'x402-cli-security-'))

beforeAll(async () => {
  world = await startEvmFixture()
  await installPermit2(world.node)
  evmKey = generatePrivateKey()
  await world.node.testClient.setBalance({ address: privateKeyToAccount(evmKey).address, value: 10n ** 20n })
}, 120_000)
afterAll(async () => {
  killCliProcesses()
  await world?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

const SHOP_A = 'shop-a:aaaaaaaaaaaaaaaaaaaaaaaa'
const SHOP_B = 'shop-b:bbbbbbbbbbbbbbbbbbbbbbbb'
const OPS = 'ops:cccccccccccccccccccccccc'
const bearer = (entry: string) => ({ authorization: `Bearer ${entry.slice(entry.indexOf(':') + 1)}` })

const env = (extra: Record<string, string>) => evmCliEnv(world, evmKey, extra)

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const answer = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return { status: answer.status, json: (await answer.json()) as Record<string, unknown> }
}

async function officialPayload(payer: LocalAccount, requirements: PaymentRequirementsV2, scheme: 'upto' | 'exact'): Promise<PaymentPayload> {
  const client = new x402Client().setSpendControls(false).register('eip155:84532', scheme === 'upto' ? new UptoEvmScheme(payer) : new ExactEvmScheme(payer))
  return (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://shop-a.example/metered', description: 'metered', mimeType: 'application/json' },
    accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }],
  })) as PaymentPayload
}

const sentBy = (address: `0x${string}`) => world.node.publicClient.getTransactionCount({ address, blockTag: 'pending' })

describe('x402-facilitator command: who may do what', () => {
  it('refuses to start with upto and no API_TOKENS, naming the variable', async () => {
    const { code, stderr } = await refusedCli(env({ SCHEMES: 'exact,upto' }))
    expect(code).toBe(1)
    expect(stderr).toContain('x402-facilitator: SCHEMES includes upto, which needs API_TOKENS')
  })

  it('serves upto and Permit2 exact to its API clients; a payer without a token cannot fix the charge; only ADMIN_TOKENS read the ledger and metrics', async () => {
    const running = await startCli(env({ SCHEMES: 'exact,upto', API_TOKENS: `${SHOP_A},${SHOP_B}`, ADMIN_TOKENS: OPS, STORE_URL: `sqlite:${join(dataDir, 'facilitator.db')}` }))
    try {
      const signer = privateKeyToAccount(evmKey).address
      const supported = (await (await fetch(`${running.url}/supported`, { headers: bearer(SHOP_A) })).json()) as { kinds: { scheme: string; network: string; extra?: Record<string, unknown> }[] }
      expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: 'upto', network: 'eip155:84532', extra: { facilitatorAddress: signer } })

      // upto: the payer races the resource server with its own payload for 0, without a token.
      const payer = await newPermit2Payer(world)
      const upto = world.requirementsV2({ scheme: 'upto', amount: '5000', extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2', facilitatorAddress: signer } })
      const paymentPayload = await officialPayload(payer, upto, 'upto')
      const sent = await sentBy(signer)
      const grab = await post(`${running.url}/settle`, { x402Version: 2, paymentPayload, paymentRequirements: { ...upto, amount: '0' } })
      expect(grab.status).toBe(401)
      expect(grab.json).toMatchObject({ success: false, errorReason: 'unauthorized' })
      expect(await sentBy(signer)).toBe(sent)
      const payee = await tokenBalance(world.node, world.token, upto.payTo as `0x${string}`)
      const charged = await post(`${running.url}/settle`, { x402Version: 2, paymentPayload, paymentRequirements: { ...upto, amount: '3000' } }, bearer(SHOP_A))
      expect(charged.json).toMatchObject({ success: true, amount: '3000' })
      expect(await tokenBalance(world.node, world.token, upto.payTo as `0x${string}`)).toBe(payee + 3000n)

      // Permit2 exact through the same command.
      const exactPayer = await newPermit2Payer(world)
      const permit2 = world.requirementsV2({ amount: '1000', extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' } })
      const exact = await post(`${running.url}/settle`, { x402Version: 2, paymentPayload: await officialPayload(exactPayer, permit2, 'exact'), paymentRequirements: permit2 }, bearer(SHOP_A))
      expect(exact.json).toMatchObject({ success: true })

      // shop-a's rows: shop-b's token (and shop-a's own) get 401; the operator reads them.
      await new Promise((resolve) => setTimeout(resolve, 200))
      for (const client of [SHOP_B, SHOP_A]) {
        const denied = await fetch(`${running.url}/ledger`, { headers: bearer(client) })
        expect(denied.status).toBe(401)
        expect(await denied.text()).not.toContain(payer.address.slice(2).toLowerCase())
        expect((await fetch(`${running.url}/metrics`, { headers: bearer(client) })).status).toBe(401)
      }
      const ledger = (await (await fetch(`${running.url}/ledger`, { headers: bearer(OPS) })).json()) as { entries: { transaction?: string }[] }
      expect(ledger.entries.map((entry) => entry.transaction)).toEqual(expect.arrayContaining([charged.json.transaction, exact.json.transaction]))
      expect((await fetch(`${running.url}/metrics`, { headers: bearer(OPS) })).status).toBe(200)
      // The operator's token is not a payment client's.
      expect((await post(`${running.url}/verify`, { x402Version: 2, paymentPayload, paymentRequirements: upto }, bearer(OPS))).status).toBe(401)
    } finally {
      running.child.kill('SIGKILL')
    }
  })

  it('open on every interface: warns at start; TRUST_PROXY=1 behind a proxy counts the address the proxy saw, however the client rotates X-Forwarded-For', async () => {
    const running = await startCli(env({ HOST: '0.0.0.0', TRUST_PROXY: '1', RATE_LIMIT_VERIFY: '2' }))
    const proxy = await startForwardingProxy(running.url, { append: 'x-forwarded-for' })
    try {
      const warnings = running.logs().filter((line) => line.level === 40)
      expect(warnings).toContainEqual(expect.objectContaining({ event: 'settle_open', variable: 'API_TOKENS', msg: expect.stringMatching(/POST \/verify and \/settle are open to anyone/) }))
      expect(warnings).toContainEqual(expect.objectContaining({ event: 'listening_open', host: '0.0.0.0', variable: 'API_TOKENS' }))

      const verify = (from: string, forwardedFor: string) =>
        requestFrom(from, `${proxy.url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor }, body: '{}' })
      const statuses: number[] = []
      for (let i = 0; i < 8; i++) statuses.push((await verify('127.0.0.2', `198.51.100.${i}`)).status)
      expect(statuses).toEqual([400, 400, 429, 429, 429, 429, 429, 429])
      // Another client naming the first in its chain has its own limit, and spends nothing of the first's.
      expect((await verify('127.0.0.3', '127.0.0.2')).status).toBe(400)
      expect((await verify('127.0.0.3', '127.0.0.2')).status).toBe(400)
      expect((await verify('127.0.0.3', '127.0.0.2')).status).toBe(429)
    } finally {
      await proxy.close()
      running.child.kill('SIGKILL')
    }
  })
})
