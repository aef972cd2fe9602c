/**
 * One asset policy and one payee proof for every EVM transfer method, on anvil: EIP-3009, Permit2
 * `exact`, the `eip2612GasSponsoring` path (Permit2 exact with the payer's EIP-2612 permit) and `upto`.
 * Permit2 and our x402 proxies sit at their canonical addresses; payloads come from the official
 * @x402/evm clients (EIP-3009 ones from our signer). The hostile token is a real fee-on-transfer
 * ERC-20 (test/support/contracts/TestFeeOnTransferToken.sol: burns 10 % of every transfer).
 */
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { x402Client } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { encodeFunctionData, type Address, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError } from '../../src/index.js'
import type { SchemeAdapter } from '../../src/core/adapter.js'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import { EIP2612_GAS_SPONSORING, evmSchemes, EVM_REJECTION } from '../../src/evm/index.js'
import { PAYEE_PROBE_CODE } from '../../src/evm/chain/payee-probe.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { deployFeeOnTransferToken, deployTestToken, fundPayer, tokenBalance, type TestToken } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { noJournal, verifyDirectly } from '../support/adapter-steps.js'
import { requestsDuring, startFaultProxy } from '../support/fault-proxy.js'
import { approvePermit2, installPermit2 } from '../support/permit2-contracts.js'

const require = createRequire(import.meta.url)
const NETWORK = 'eip155:84532'
const METHODS = ['eip3009', 'permit2', 'eip2612', 'upto'] as const
type Method = (typeof METHODS)[number]

let world: EvmFixture
/** Outside the known table: a token that burns 10 % of each transfer, and a plain EIP-3009 token. */
let feeToken: TestToken
let plainToken: TestToken
let signer: Address
let open: ReturnType<typeof createFacilitator>
let restricted: ReturnType<typeof createFacilitator>

const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirementsV2) => ({ x402Version: 2, paymentPayload, paymentRequirements })
const figures: string[] = []

/** The configuration of the fixture's chain, through `rpcUrl` (the node by default), the fixture's token known. */
const config = (overrides: { rpcUrl?: string; restrictAssets?: boolean } & Partial<ExactEvmConfig> = {}): ExactEvmConfig => {
  const { rpcUrl, restrictAssets, ...rest } = overrides
  return world.adapterConfig({
    networks: [{ network: NETWORK, rpcUrls: [rpcUrl ?? world.node.rpcUrl], assets: [world.knownAsset], ...(restrictAssets ? { restrictAssets } : {}) }],
    ...rest,
  })
}

/** Requirements of `method` in `token` for `amount` (upto: the maximum). */
function requirementsOf(method: Method, token: TestToken, amount = 1000n): PaymentRequirementsV2 {
  const extra = { name: token.name, version: token.version }
  return world.requirementsV2({
    asset: token.address,
    amount: amount.toString(),
    ...(method === 'upto'
      ? { scheme: 'upto', extra: { ...extra, assetTransferMethod: 'permit2', facilitatorAddress: signer } }
      : { extra: method === 'eip3009' ? extra : { ...extra, assetTransferMethod: 'permit2' } }),
  })
}

/**
 * A new payer holding 1,000,000 of `token` and a payment of `method` from it: EIP-3009 signed here,
 * the others by the official clients (Permit2 approved beforehand, except on the EIP-2612 path, whose
 * client signs the token's permit to Permit2 because the 402 declares the extension and the allowance is 0).
 */
async function paymentOf(method: Method, token: TestToken, amount = 1000n): Promise<{ payer: LocalAccount; paymentPayload: PaymentPayload; requirements: PaymentRequirementsV2 }> {
  const payer = privateKeyToAccount(generatePrivateKey())
  await fundPayer(world.node, token, payer.address, 1_000_000n)
  const requirements = requirementsOf(method, token, amount)
  if (method === 'eip3009') return { payer, requirements, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }) }
  await world.node.testClient.setBalance({ address: payer.address, value: 10n ** 18n })
  if (method !== 'eip2612') await approvePermit2(world.node, token, payer, 2n ** 256n - 1n)
  const scheme = method === 'upto' ? new UptoEvmScheme(payer) : new ExactEvmScheme(payer, { rpcUrl: world.node.rpcUrl })
  const client = new x402Client().setSpendControls(false).register(NETWORK, scheme)
  const extensions = method === 'eip2612' ? { [EIP2612_GAS_SPONSORING]: { info: { description: 'gasless permit to Permit2', version: '1' }, schema: {} } } : undefined
  const paymentPayload = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://example.test/paid', description: 'paid', mimeType: 'application/json' },
    accepts: [{ ...requirements, network: NETWORK, maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }],
    ...(extensions ? { extensions } : {}),
  })) as PaymentPayload
  if (method === 'eip2612') expect(paymentPayload).toHaveProperty(['extensions', EIP2612_GAS_SPONSORING, 'info', 'signature'])
  return { payer, requirements, paymentPayload }
}

/** Transactions the facilitator's signer has sent, pending included: unchanged means nothing was sent. */
const sent = () => world.node.publicClient.getTransactionCount({ address: signer, blockTag: 'pending' })

/** The context the core hands `adapter` (its routing checks passed), to drive verify then settle directly. */
function contextOf(adapter: SchemeAdapter, paymentPayload: PaymentPayload, requirements: PaymentRequirementsV2) {
  const parsed = parsePaymentRequest(body(paymentPayload, requirements))
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(createRegistry([adapter]), parsed.request, AbortSignal.timeout(30_000))
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  return routed.context
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 1 })
  signer = world.signers[0]!.address
  await installPermit2(world.node)
  feeToken = await deployFeeOnTransferToken(world.node)
  plainToken = await deployTestToken(world.node)
  open = createFacilitator({ schemes: evmSchemes(config()) })
  restricted = createFacilitator({ schemes: evmSchemes(config({ restrictAssets: true })) })
  await world.warmUp(open)
  await world.warmUp(restricted)
}, 120_000)
afterAll(async () => {
  await open?.close?.()
  await restricted?.close?.()
  await world?.stop()
  if (figures.length > 0) console.info(`[payee-credit]\n${figures.join('\n')}`)
})

describe('the asset policy holds for every transfer method', () => {
  it('with restrictAssets, an unlisted token is refused by EIP-3009, Permit2 exact, the EIP-2612 path and upto with one code and message; nothing is sent', async () => {
    const before = await sent()
    for (const method of METHODS) {
      const { payer, paymentPayload, requirements } = await paymentOf(method, plainToken)
      const refusal = { reason: 'invalid_exact_evm_payload_asset_not_allowed', message: `asset ${plainToken.address} is not accepted on ${NETWORK}` }
      expect(await restricted.verify(body(paymentPayload, requirements)), method).toEqual({ isValid: false, invalidReason: refusal.reason, invalidMessage: refusal.message, payer: payer.address })
      expect(await restricted.settle(body(paymentPayload, requirements)), method).toMatchObject({ success: false, errorReason: refusal.reason, transaction: '' })
      // The same payment passes where the policy is off: the refusal is the policy's.
      expect(await open.verify(body(paymentPayload, requirements)), method).toEqual({ isValid: true, payer: payer.address })
      expect(await tokenBalance(world.node, plainToken, payer.address)).toBe(1_000_000n)
    }
    expect(await sent()).toBe(before)
    expect(await tokenBalance(world.node, plainToken, world.payTo)).toBe(0n)
  })

  it('with restrictAssets, the known token still passes every method', async () => {
    for (const method of METHODS) {
      const { payer, paymentPayload, requirements } = await paymentOf(method, world.token)
      expect(await restricted.verify(body(paymentPayload, requirements)), method).toEqual({ isValid: true, payer: payer.address })
    }
  })
})

describe('what reaches payTo is proven before anything is sent (tokens outside the known table)', () => {
  it('a fee-on-transfer token (900 of 1,000 would land) is refused by verify for every method with invalid_exact_evm_payee_amount_mismatch; settle sends nothing', async () => {
    const before = await sent()
    for (const method of METHODS) {
      const { payer, paymentPayload, requirements } = await paymentOf(method, feeToken)
      expect(await open.verify(body(paymentPayload, requirements)), method).toEqual({
        isValid: false,
        invalidReason: EVM_REJECTION.payeeAmountMismatch,
        invalidMessage: expect.stringMatching(/would receive 900 of 0x[0-9a-fA-F]{40}, not the 1000 .*fee-on-transfer, rebasing or hook token/),
        payer: payer.address,
      })
      expect(await open.settle(body(paymentPayload, requirements)), method).toMatchObject({ success: false, errorReason: EVM_REJECTION.payeeAmountMismatch, transaction: '' })
      expect(await tokenBalance(world.node, feeToken, payer.address), method).toBe(1_000_000n)
    }
    expect(await sent()).toBe(before)
    expect(await tokenBalance(world.node, feeToken, world.payTo)).toBe(0n)
  })

  it('a token that turns its fee on after verify is refused by settle\'s own simulation (every method runs it again once verify\'s is over 2 s old); nothing sent', async () => {
    const switchable = await deployFeeOnTransferToken(world.node, { feePercent: 0n })
    const [exact, upto] = evmSchemes(config())
    const contexts = []
    for (const method of METHODS) {
      const { paymentPayload, requirements } = await paymentOf(method, switchable)
      const adapter = method === 'upto' ? upto! : exact!
      const ctx = contextOf(adapter, paymentPayload, requirements)
      const verdict = await verifyDirectly(adapter, ctx)
      expect(verdict.response, method).toMatchObject({ isValid: true })
      contexts.push({ method, adapter, ctx, verdict })
    }
    const fee = encodeFunctionData({ abi: switchable.abi, functionName: 'setFeePercent', args: [10n] })
    await world.node.publicClient.waitForTransactionReceipt({ hash: await world.node.walletClient().sendTransaction({ account: world.node.accounts[0]!, chain: world.node.chain, to: switchable.address, data: fee }) })
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    const before = await sent()
    for (const { method, adapter, ctx, verdict } of contexts) {
      expect(await adapter.settle(ctx, verdict.payment, noJournal), method).toMatchObject({
        success: false,
        errorReason: EVM_REJECTION.payeeAmountMismatch,
        errorMessage: expect.stringContaining('would receive 900'),
        transaction: '',
      })
    }
    expect(await sent()).toBe(before)
    expect(await tokenBalance(world.node, switchable, world.payTo)).toBe(0n)
    await exact!.close?.()
  })

  it('a plain token outside the table verifies and settles by every method: payTo receives the whole amount (upto: the amount charged)', async () => {
    for (const method of METHODS) {
      const { payer, paymentPayload, requirements } = await paymentOf(method, plainToken)
      expect(await open.verify(body(paymentPayload, requirements)), method).toEqual({ isValid: true, payer: payer.address })
      const before = await tokenBalance(world.node, plainToken, world.payTo)
      // upto: the resource server settles what it used, 600 of the 1,000 authorized.
      const charged = method === 'upto' ? 600n : 1000n
      const settled = await open.settle(body(paymentPayload, { ...requirements, amount: charged.toString() }))
      expect(settled, method).toMatchObject({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
      expect(await tokenBalance(world.node, plainToken, world.payTo), method).toBe(before + charged)
      expect(await tokenBalance(world.node, plainToken, payer.address), method).toBe(1_000_000n - charged)
    }
  })

  it('a payer paying itself in a token outside the table: payTo\'s balance does not move, and that is what is proven', async () => {
    const payer = privateKeyToAccount(generatePrivateKey())
    await fundPayer(world.node, plainToken, payer.address, 5_000n)
    const requirements = world.requirementsV2({ asset: plainToken.address, payTo: payer.address, extra: { name: plainToken.name, version: plainToken.version } })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    expect(await open.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    // The fee token burns 100 of a self-transfer of 1,000: refused.
    await fundPayer(world.node, feeToken, payer.address, 5_000n)
    const feeRequirements = { ...requirements, asset: feeToken.address }
    const feePayload = await signExactEvmPayment({ signer: payer, requirements: feeRequirements })
    expect(await open.verify(body(feePayload, feeRequirements))).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.payeeAmountMismatch, invalidMessage: expect.stringContaining('would receive -100') })
  })
})

describe('the cost of the proof', () => {
  it('an unlisted token\'s verify is still one HTTP request (the proof rides in its batch); a known token\'s sends exactly what it sent before', async () => {
    const proxy = await startFaultProxy(world.node.rpcUrl)
    const counted = createFacilitator({ schemes: evmSchemes(config({ rpcUrl: proxy.url, feeCacheMs: 600_000 })) })
    try {
      await world.warmUp(counted)
      const isProbe = (call: { method: string; params: unknown }) => call.method === 'eth_call' && Array.isArray(call.params) && call.params.length === 3
      const expected: Record<Method, { unknown: string[]; known: string[] }> = {
        eip3009: { unknown: ['eth_call', 'eth_call', 'eth_call'], known: ['eth_call', 'eth_getCode'] },
        permit2: { unknown: ['eth_call', 'eth_call', 'eth_call'], known: ['eth_call', 'eth_call'] },
        eip2612: { unknown: ['eth_call', 'eth_call', 'eth_call'], known: ['eth_call', 'eth_call'] },
        upto: { unknown: ['eth_call', 'eth_call', 'eth_call'], known: ['eth_call', 'eth_call'] },
      }
      for (const method of METHODS) {
        for (const [kind, token] of [['known', world.token], ['unknown', plainToken]] as const) {
          const timings: number[] = []
          for (let round = 0; round < 7; round++) {
            const { paymentPayload, requirements } = await paymentOf(method, token)
            const { result, requests, elapsedMs } = await requestsDuring(proxy, () => counted.verify(body(paymentPayload, requirements)))
            expect(result, `${method} ${kind}`).toMatchObject({ isValid: true })
            expect(requests, `${method} ${kind}`).toHaveLength(1)
            expect(requests[0]!.map((call) => call.method).sort(), `${method} ${kind}`).toEqual([...expected[method][kind]].sort())
            const probes = requests[0]!.filter(isProbe)
            if (kind === 'known') {
              expect(probes, `${method} known`).toHaveLength(0)
            } else {
              // The proof: an eth_call from the signer to itself, with the probe's code placed there.
              expect(probes, `${method} unknown`).toHaveLength(1)
              const [transaction, , overrides] = probes[0]!.params as [{ from: string; to: string }, string, Record<string, { code: string }>]
              expect(transaction.from.toLowerCase()).toBe(signer.toLowerCase())
              expect(transaction.to.toLowerCase()).toBe(signer.toLowerCase())
              expect(overrides[signer]?.code).toBe(PAYEE_PROBE_CODE)
            }
            timings.push(elapsedMs)
          }
          figures.push(`${method} verify, ${kind} token: 1 HTTP request (${expected[method][kind].length} calls), median ${median(timings).toFixed(1)} ms over ${timings.length}`)
        }
      }
    } finally {
      await counted.close?.()
      await proxy.close()
    }
  })

  it('a node that ignores state overrides cannot prove the credit: a verify of an unlisted token faults (rpc_error) instead of passing, and settle sends nothing', async () => {
    // Fault injection: a loopback proxy that drops eth_call's state override before the node sees it.
    const stripping = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { method: string; params: unknown[] } | { method: string; params: unknown[] }[]
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) if (call.method === 'eth_call' && call.params.length > 2) call.params = call.params.slice(0, 2)
        const forwarded = Buffer.from(JSON.stringify(parsed))
        const target = new URL(world.node.rpcUrl)
        const out = httpRequest({ hostname: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': forwarded.length } }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' })
          answer.pipe(res)
        })
        out.end(forwarded)
      })
    })
    await new Promise<void>((resolve) => stripping.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(stripping.address() as AddressInfo).port}`
    const blind = createFacilitator({ schemes: evmSchemes(config({ rpcUrl: url })) })
    try {
      const before = await sent()
      for (const method of ['eip3009', 'permit2'] as const) {
        const { paymentPayload, requirements } = await paymentOf(method, feeToken)
        const verifying = blind.verify(body(paymentPayload, requirements))
        await expect(verifying, method).rejects.toBeInstanceOf(FacilitatorError)
        await expect(verifying, method).rejects.toMatchObject({ code: 'rpc_error', message: expect.stringContaining('state override') })
        const settled = await blind.settle(body(paymentPayload, requirements)).catch((error: unknown) => error)
        expect(settled instanceof FacilitatorError || (settled as { success?: boolean }).success === false, method).toBe(true)
        // A known token needs no proof: unaffected.
        const known = await paymentOf(method, world.token)
        expect(await blind.verify(body(known.paymentPayload, known.requirements)), method).toMatchObject({ isValid: true })
      }
      expect(await sent()).toBe(before)
      expect(await tokenBalance(world.node, feeToken, world.payTo)).toBe(0n)
    } finally {
      await blind.close?.()
      await new Promise((resolve) => stripping.close(resolve))
    }
  })
})

describe('PayeeProbe', () => {
  it('the runtime code the facilitator embeds is src/evm/chain/payee-probe.sol compiled (solc 0.8.37, paris, optimizer 200, no metadata)', () => {
    const solc = require('solc') as { version(): string; compile(input: string): string }
    const source = readFileSync(new URL('../../src/evm/chain/payee-probe.sol', import.meta.url), 'utf8')
    const settings = { evmVersion: 'paris', optimizer: { enabled: true, runs: 200 }, metadata: { appendCBOR: false }, outputSelection: { '*': { PayeeProbe: ['evm.deployedBytecode.object'] } } }
    const output = JSON.parse(solc.compile(JSON.stringify({ language: 'Solidity', sources: { 'payee-probe.sol': { content: source } }, settings }))) as {
      errors?: { severity: string; formattedMessage: string }[]
      contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string } } }>>
    }
    expect((output.errors ?? []).filter((e) => e.severity === 'error')).toEqual([])
    expect(solc.version()).toMatch(/^0\.8\.37\+/)
    expect(`0x${output.contracts['payee-probe.sol']!.PayeeProbe!.evm.deployedBytecode.object}`).toBe(PAYEE_PROBE_CODE)
  })
})
