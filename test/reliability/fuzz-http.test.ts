import {
  createSolanaRpc,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  type TransactionMessageBytes,
} from '@solana/kit'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createHandler, type FetchHandler } from '../../src/http/handler.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { errorBodySchema } from '../../src/schemas/messages.js'
import { buildExactSvmTransaction } from '../../src/svm/exact/build-transaction.js'
import { exactSvm } from '../../src/svm/exact/exact-svm.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, startSolanaTestRpc } from '../support/svm-fixtures.js'

// Property-based fuzzing of the HTTP surface: 100,000 generated requests in
// all, none may produce a 5xx, an unhandled rejection, or a 4xx without an
// `{error, code}` body. Most run over the in-memory ledger adapter (fast);
// EVM_RUNS + SVM_RUNS run mutated exactEvm / exactSvm payments through the
// real adapters, so valid-shaped payloads reach anvil and the LiteSVM RPC.
const EVM_RUNS = 10_000
const SVM_RUNS = 10_000
const LEDGER_MUTATION_RUNS = 60_000 - EVM_RUNS - SVM_RUNS

const adapter = createLedgerAdapter({ network: 'eip155:8453', v1Name: 'base' })
adapter.balances.set('0xpayer', 10n ** 30n)
const facilitator = createFacilitator({ schemes: [adapter] })
const handle = createHandler(facilitator, { maxBodyBytes: 16_384 })
const valid = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'fuzz' }, 'eip155:8453')

let unhandled = 0
const onUnhandled = () => void unhandled++
beforeAll(() => void process.on('unhandledRejection', onUnhandled))
afterAll(() => void process.off('unhandledRejection', onUnhandled))

async function check(request: Request, handler: FetchHandler = handle) {
  const response = await handler(request)
  const text = await response.text()
  expect(response.status, text).toBeLessThan(500)
  if (response.status >= 400) {
    const parsed = errorBodySchema.safeParse(JSON.parse(text))
    expect(parsed.success, text).toBe(true)
  }
  expect(text).not.toMatch(/\n\s+at |\.ts:\d+/)
}

const post = (path: string, body: string, contentType = 'application/json') =>
  new Request(`http://fuzz.test${path}`, { method: 'POST', headers: { 'content-type': contentType }, body })

/** Replaces the value at a random path of a valid body by an arbitrary JSON value. */
const mutationOf = (base: unknown) => fc
  .tuple(fc.nat(), fc.jsonValue({ maxDepth: 3 }), fc.boolean())
  .map(([pick, replacement, drop]) => {
    const body = structuredClone(base) as Record<string, unknown>
    const paths: (string[])[] = []
    const walk = (value: unknown, path: string[]) => {
      paths.push(path)
      if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k])
    }
    walk(body, [])
    const path = paths[pick % paths.length] ?? []
    if (path.length === 0) return replacement
    let parent = body as Record<string, unknown>
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>
    const last = path[path.length - 1] as string
    if (drop) delete parent[last]
    else parent[last] = replacement
    return body
  })
const mutatedBody = mutationOf(valid)

/** Changes one character of a random string leaf (a hex digit of a signature, a base64 char of a transaction). */
const tweakOf = (base: unknown) =>
  fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(...'0123456789abcdefABCDEF+/xyz=')).map(([pick, at, char]) => {
    const body = structuredClone(base) as Record<string, unknown>
    const leaves: [Record<string, unknown>, string][] = []
    const walk = (value: unknown) => {
      if (!value || typeof value !== 'object') return
      for (const [k, v] of Object.entries(value)) {
        if (typeof v === 'string' && v.length > 0) leaves.push([value as Record<string, unknown>, k])
        else walk(v)
      }
    }
    walk(body)
    const [parent, key] = leaves[pick % leaves.length]!
    const text = parent[key] as string
    const i = at % text.length
    parent[key] = text.slice(0, i) + char + text.slice(i + 1)
    return body
  })

describe('hostile input through the HTTP handler', () => {
  it(`survives ${LEDGER_MUTATION_RUNS} mutated payment bodies on /verify and /settle`, async () => {
    await fc.assert(
      fc.asyncProperty(mutatedBody, fc.constantFrom('/verify', '/settle'), async (body, path) => {
        await check(post(path, JSON.stringify(body)))
      }),
      { numRuns: LEDGER_MUTATION_RUNS },
    )
    // 40,000 requests through real HTTP take ~40 s on a quiet 2-core machine: a robustness test, not a timed one.
  }, 180_000)

  it('survives 30,000 arbitrary JSON documents', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom('/verify', '/settle'), async (value, path) => {
        await check(post(path, JSON.stringify(value)))
      }),
      { numRuns: 30_000 },
    )
  })

  it('survives 10,000 raw bodies, methods, paths and content types', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 }), fc.constant('['.repeat(2000))),
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
        fc.oneof(fc.constantFrom('/verify', '/settle', '/supported', '/', '//verify', '/verify/'), fc.webPath()),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', '', 'application/json; charset=utf-16'),
        async (body, method, path, contentType) => {
          const hasBody = method !== 'GET' && method !== 'HEAD'
          const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {}
          let request: Request
          try {
            request = new Request(`http://fuzz.test${path.startsWith('/') ? path : `/${path}`}`, { method, headers, ...(hasBody ? { body } : {}) })
          } catch {
            return // the URL itself is not representable: nothing reaches a server
          }
          await check(request)
        },
      ),
      { numRuns: 10_000 },
    )
  })

  describe('real adapters behind the handler (anvil and LiteSVM)', () => {
    let world: EvmFixture
    let chain: LiteSvmRpc
    // In pass mode: only counts the JSON-RPC requests that reach anvil.
    let anvilCounter: FaultProxy
    let chainHandle: FetchHandler
    let evmBody: unknown
    let svmBody: unknown
    const statuses = new Map<number, number>()
    beforeAll(async () => {
      ;[world, chain] = await Promise.all([startEvmFixture(), startSolanaTestRpc()])
      const s = await createPaymentScenario(chain.svm)
      anvilCounter = await startFaultProxy(world.node.rpcUrl)
      const facilitator = createFacilitator({
        schemes: [
          exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [anvilCounter.url] }], receiptTimeoutMs: 2_000 })),
          exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 2_000 }),
        ],
        timeouts: { verifyMs: 5_000, settleMs: 5_000 },
      })
      const handler = createHandler(facilitator, { maxBodyBytes: 16_384, onError: (fault) => console.error('[fuzz] 5xx', fault.code, fault.message, fault.cause) })
      chain.resetStats()
      chainHandle = async (request) => {
        const response = await handler(request)
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
        return response
      }
      const evmRequirements = world.requirementsV2()
      const evmPayload = await signExactEvmPayment({ signer: await world.newPayer(10n ** 12n), requirements: evmRequirements })
      evmBody = { x402Version: 2, paymentPayload: evmPayload, paymentRequirements: evmRequirements }
      const svmRequirements = { scheme: 'exact', network: SOLANA_DEVNET, amount: '1000', asset: s.mint, payTo: s.payTo, maxTimeoutSeconds: 60, extra: { feePayer: s.feePayer.address } }
      const { value: blockhash } = await createSolanaRpc(chain.url).getLatestBlockhash().send()
      const transaction = await buildExactSvmTransaction({ payer: s.payer, feePayer: s.feePayer.address, mint: s.mint, payTo: s.payTo, amount: 1000n, decimals: s.decimals, tokenProgram: s.tokenProgram, blockhash })
      svmBody = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: svmRequirements, payload: { transaction } }, paymentRequirements: svmRequirements }
      // The unmutated payments are valid on the real chains.
      for (const valid of [evmBody, svmBody]) {
        const answer = await (await chainHandle(post('/verify', JSON.stringify(valid)))).json()
        expect(answer).toMatchObject({ isValid: true })
      }
    })
    afterAll(async () => {
      console.info(
        `[fuzz] real-adapter answers by HTTP status: ${JSON.stringify(Object.fromEntries(statuses))}; RPC requests that reached anvil: ${anvilCounter?.requests}, the LiteSVM RPC: ${chain?.stats.requests}`,
      )
      await anvilCounter?.close()
      await Promise.all([world?.stop(), chain?.close()])
    })

    // Found by this fuzzer: both crashed the adapters (HTTP 500) before they were fixed.
    it('a mixed-case address with a wrong checksum is a rejection, not a 500', async () => {
      const bad = structuredClone(evmBody) as { paymentPayload: { accepted: { asset: string } }; paymentRequirements: { asset: string } }
      const asset = bad.paymentRequirements.asset.toLowerCase()
      const i = asset.search(/[a-f]/)
      const broken = `${asset.slice(0, i)}${asset[i]!.toUpperCase()}${asset.slice(i + 1)}`
      bad.paymentRequirements.asset = broken
      bad.paymentPayload.accepted.asset = broken
      const response = await chainHandle(post('/verify', JSON.stringify(bad)))
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ isValid: false, invalidReason: 'invalid_payment_requirements' })
    })

    it('a Solana instruction naming an account index the message does not list is a rejection, not a 500', async () => {
      const bad = structuredClone(svmBody) as { paymentPayload: { payload: { transaction: string } } }
      const transaction = getTransactionDecoder().decode(getBase64Encoder().encode(bad.paymentPayload.payload.transaction))
      const compiled = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes)
      if (compiled.version !== 0 && compiled.version !== 'legacy') throw new Error('the builder makes v0 messages')
      const last = compiled.instructions[compiled.instructions.length - 1]!
      const instructions = [...compiled.instructions.slice(0, -1), { ...last, accountIndices: [200, ...(last.accountIndices ?? []).slice(1)] }]
      const messageBytes = getCompiledTransactionMessageEncoder().encode({ ...compiled, instructions }) as TransactionMessageBytes
      bad.paymentPayload.payload.transaction = getBase64EncodedWireTransaction({ messageBytes, signatures: transaction.signatures })
      for (const path of ['/verify', '/settle']) {
        const response = await chainHandle(post(path, JSON.stringify(bad)))
        expect(response.status).toBe(200)
        const answer = (await response.json()) as { isValid?: boolean; success?: boolean }
        expect(answer.isValid ?? answer.success).toBe(false)
      }
    })

    it(`survives ${EVM_RUNS} mutated exactEvm payments against anvil`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(mutationOf(evmBody), tweakOf(evmBody)), fc.constantFrom('/verify', '/settle'), async (body, path) => {
          await check(post(path, JSON.stringify(body)), chainHandle)
        }),
        { numRuns: EVM_RUNS },
      )
    })

    it(`survives ${SVM_RUNS} mutated exactSvm payments against the LiteSVM RPC`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(mutationOf(svmBody), tweakOf(svmBody)), fc.constantFrom('/verify', '/settle'), async (body, path) => {
          await check(post(path, JSON.stringify(body)), chainHandle)
        }),
        { numRuns: SVM_RUNS },
      )
    })
  })

  it('saw no unhandled rejection', () => {
    expect(unhandled).toBe(0)
  })
})
