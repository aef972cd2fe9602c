/**
 * No private key or RPC credential in a response, a log line or a thrown
 * error. Recognisable secrets (an RPC URL with user, password and API key, an
 * RPC header, the facilitator keys) are searched for in every HTTP body, every
 * thrown error (message, JSON, and the full inspected cause chain a logger
 * would print) and everything written to the console meanwhile.
 */
import { inspect } from 'node:util'
import { createKeyPairSignerFromPrivateKeyBytes, getBase58Decoder } from '@solana/kit'
import { bytesToHex, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createFacilitator, type Facilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { createHandler } from '../../src/http/handler.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { exactSvm } from '../../src/svm/exact/exact-svm.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { createPaymentScenario, startSolanaTestRpc } from '../support/svm-fixtures.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { body, deadPort } from './support.js'

let world: EvmFixture
let chain: LiteSvmRpc
let proxy: FaultProxy
const evmKey = generatePrivateKey()
const svmKeyBytes = crypto.getRandomValues(new Uint8Array(32))
const SECRETS = ['SECRET-PASS', 'SECRET-KEY', 'SECRET-HEADER', evmKey.slice(2).toLowerCase(), bytesToHex(svmKeyBytes).slice(2), getBase58Decoder().decode(svmKeyBytes), Buffer.from(svmKeyBytes).toString('base64')]

const seen: string[] = []
const leaks = () => SECRETS.filter((secret) => seen.some((text) => text.toLowerCase().includes(secret.toLowerCase())))

beforeAll(async () => {
  ;[world, chain] = await Promise.all([startEvmFixture(), startSolanaTestRpc()])
  proxy = await startFaultProxy(world.node.rpcUrl)
  await world.node.testClient.setBalance({ address: privateKeyToAccount(evmKey).address, value: parseEther('10') })
})
beforeEach(() => {
  seen.length = 0
})
afterAll(async () => {
  await proxy?.close()
  await Promise.all([world?.stop(), chain?.close()])
})

/** Runs `work` with console and process output captured into `seen` (and still printed). */
async function capturing(work: () => Promise<void>) {
  const restore: (() => void)[] = []
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream)
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      seen.push(String(chunk))
      return (original as (...args: unknown[]) => boolean)(chunk, ...rest)
    }) as typeof stream.write
    restore.push(() => (stream.write = original as typeof stream.write))
  }
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[level]
    console[level] = (...args: unknown[]) => {
      seen.push(args.map((arg) => (typeof arg === 'string' ? arg : inspect(arg, { depth: 10 }))).join(' '))
    }
    restore.push(() => (console[level] = original))
  }
  try {
    await work()
  } finally {
    for (const undo of restore) undo()
  }
}

/** Calls the facilitator directly and through the handler; records every answer and error. */
async function exercise(facilitator: Facilitator, request: unknown) {
  // A user who logs faults the obvious way: the whole error, cause chain included.
  const handle = createHandler(facilitator, { onError: (error) => console.error('facilitator fault', error) })
  const statuses: number[] = []
  for (const route of ['verify', 'settle'] as const) {
    try {
      seen.push(JSON.stringify(await facilitator[route](request)))
    } catch (error) {
      seen.push(String(error), JSON.stringify(error), inspect(error, { depth: 10 }), JSON.stringify((error as { toBody?: () => unknown }).toBody?.()))
    }
    const response = await handle(new Request(`http://facilitator.test/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request) }))
    statuses.push(response.status)
    seen.push(await response.text())
  }
  seen.push(await (await handle(new Request('http://facilitator.test/supported'))).text())
  return statuses
}

describe('secrets never leave the library', () => {
  it('EVM: a dead credentialed RPC URL, a failing one, then a working one; no secret anywhere', async () => {
    const dead = await deadPort()
    const secretUrl = (port: number) => `http://user:SECRET-PASS@127.0.0.1:${port}/?apikey=SECRET-KEY`
    const signer = privateKeyToAccount(evmKey)
    const requirements = world.requirementsV2()
    const request = body(await signExactEvmPayment({ signer: await world.newPayer(), requirements }), requirements)
    const proxyPort = Number(new URL(proxy.url).port)
    const statuses: number[][] = []
    await capturing(async () => {
      const down = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [secretUrl(dead)] }], signers: [signer] }))] })
      statuses.push(await exercise(down, request))
      const failing = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [secretUrl(proxyPort)] }], signers: [signer] }))] })
      proxy.setMode({ kind: 'error', status: 503 })
      statuses.push(await exercise(failing, request))
      proxy.setMode({ kind: 'cut' })
      statuses.push(await exercise(failing, request))
      proxy.setMode({ kind: 'pass' })
      statuses.push(await exercise(failing, request))
    })
    // The scenarios did reach the faults and the chain: 503s first, then a real settle.
    expect(statuses[0]).toEqual([503, 503])
    expect(statuses[1]).toEqual([503, 503])
    expect(statuses[3]).toEqual([200, 200])
    expect(seen.some((text) => text.includes('"success":true'))).toBe(true)
    expect(seen.some((text) => text.includes('facilitator fault'))).toBe(true)
    expect(leaks()).toEqual([])
  })

  it('Solana: a dead credentialed RPC URL with an API-key header, then a working chain; no secret anywhere', async () => {
    const dead = await deadPort()
    const feePayer = await createKeyPairSignerFromPrivateKeyBytes(svmKeyBytes)
    const s = await createPaymentScenario(chain.svm, { feePayer })
    chain.svm.airdrop(feePayer.address, 10_000_000_000n as never)
    const { buildExactSvmTransaction } = await import('../../src/svm/exact/build-transaction.js')
    const { createSolanaRpc } = await import('@solana/kit')
    const requirements = { scheme: 'exact', network: SOLANA_DEVNET, amount: '5', asset: s.mint, payTo: s.payTo, maxTimeoutSeconds: 60, extra: { feePayer: feePayer.address } }
    const { value: blockhash } = await createSolanaRpc(chain.url).getLatestBlockhash().send()
    const transaction = await buildExactSvmTransaction({ payer: s.payer, feePayer: feePayer.address, mint: s.mint, payTo: s.payTo, amount: 5n, decimals: s.decimals, tokenProgram: s.tokenProgram, blockhash })
    const request = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements }
    const statuses: number[][] = []
    await capturing(async () => {
      const config = (url: string) => ({
        networks: [{ network: SOLANA_DEVNET, rpcUrls: [url], rpcHeaders: { authorization: 'Bearer SECRET-HEADER' } }],
        feePayers: [feePayer],
        pollIntervalMs: 10,
        confirmTimeoutMs: 2_000,
      })
      statuses.push(await exercise(createFacilitator({ schemes: [exactSvm(config(`http://user:SECRET-PASS@127.0.0.1:${dead}/?apikey=SECRET-KEY`))] }), request))
      statuses.push(await exercise(createFacilitator({ schemes: [exactSvm(config(`${chain.url}/?apikey=SECRET-KEY`))] }), request))
    })
    expect(statuses[0]).toEqual([503, 503])
    expect(statuses[1]).toEqual([200, 200])
    expect(seen.some((text) => text.includes('"success":true'))).toBe(true)
    expect(leaks()).toEqual([])
  })
})
