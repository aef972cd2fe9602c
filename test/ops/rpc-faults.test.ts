/**
 * What an operator reads when an RPC fails: the fault says how the connection failed, the
 * rpc-response channel carries node's code, and readiness checks keep one name per network
 * (`rpc <network>`) whether the RPC refuses connections or hangs. Real adapters over real
 * sockets: a closed port, and a server that accepts and never answers.
 */
import diagnostics from 'node:diagnostics_channel'
import { createServer, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { generateKeyPairSigner } from '@solana/kit'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm, privateKeySigner } from '../../src/evm/index.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { exactSvm } from '../../src/svm/index.js'
import { createHttpRpcTransport } from '../../src/svm/rpc/solana-rpc.js'
import { RPC_RESPONSE_CHANNEL, type RpcResponseEvent } from '../../src/transport/keep-alive-post.js'

const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1'
const USDC_BASE_SEPOLIA = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'

let closedUrl: string
let hangingUrl: string
let hanging: Server
const sockets: Socket[] = []

beforeAll(async () => {
  // A port that was just free: nothing listens there.
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  closedUrl = `http://user:SECRET-PASSWORD@127.0.0.1:${(probe.address() as AddressInfo).port}/v2/SECRET-KEY-0123456789?key=SECRET-QUERY`
  await new Promise((resolve) => probe.close(resolve))
  hanging = createServer((socket) => void sockets.push(socket))
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
  hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`
})
afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await new Promise((resolve) => hanging.close(resolve))
})

// The adapters' own RPC timeouts (several seconds) are longer than the readiness budget of these tests: a hung RPC meets the deadline.
const evm = (url: string) => createFacilitator({ schemes: [exactEvm({ networks: [{ network: 'eip155:84532', rpcUrls: [url] }], signers: [privateKeySigner(generatePrivateKey())] })] })
const svm = async (url: string) => createFacilitator({ schemes: [exactSvm({ networks: [{ network: 'solana-devnet', rpcUrls: [url] }], feePayers: [await generateKeyPairSigner()] })] })

describe('RPC faults', () => {
  it('readiness names the rpc check of each network the same whether the RPC refuses or hangs', async () => {
    const facilitators = [evm(closedUrl), evm(hangingUrl), await svm(closedUrl), await svm(hangingUrl)]
    try {
      const [evmRefused, evmHung, svmRefused, svmHung] = await Promise.all(facilitators.map((f) => f.readiness(1_500)))
      const names = (report: { checks: { name: string; ok: boolean }[] }) => report.checks.filter((check) => check.name !== 'store').map((check) => [check.name, check.ok])
      expect(names(evmRefused!)).toEqual([['rpc eip155:84532', false]])
      expect(names(evmHung!)).toEqual([['rpc eip155:84532', false]])
      expect(names(svmRefused!)).toEqual([[`rpc ${SOLANA_DEVNET}`, false]])
      expect(names(svmHung!)).toEqual([[`rpc ${SOLANA_DEVNET}`, false]])
      expect(JSON.stringify([evmRefused, svmRefused])).not.toMatch(/SECRET/)
    } finally {
      await Promise.all(facilitators.map((f) => f.close()))
    }
  })

  it('a refused connection is named in the fault and on the rpc-response channel (host only, node code)', async () => {
    const events: RpcResponseEvent[] = []
    const onEvent = (message: unknown) => void events.push(message as RpcResponseEvent)
    diagnostics.subscribe(RPC_RESPONSE_CHANNEL, onEvent)
    const facilitator = evm(closedUrl)
    try {
      const payer = privateKeyToAccount(generatePrivateKey())
      const requirements = {
        scheme: 'exact' as const,
        network: 'eip155:84532' as const,
        amount: '1000',
        asset: USDC_BASE_SEPOLIA,
        payTo: privateKeyToAccount(generatePrivateKey()).address,
        maxTimeoutSeconds: 60,
        extra: { name: 'USDC', version: '2' },
      }
      const body = { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements }
      const fault = await facilitator.verify(body).then(
        () => undefined,
        (error: unknown) => error as { code: string; message: string },
      )
      expect(fault?.code).toBe('rpc_unavailable')
      expect(fault?.message).toMatch(/unreachable \(connection refused\)/)
      expect(fault?.message).not.toMatch(/SECRET/)
      const failed = events.filter((event) => event.outcome === 'error')
      expect(failed.length).toBeGreaterThan(0)
      expect(failed[0]).toMatchObject({ host: new URL(closedUrl).host, code: 'ECONNREFUSED' })
      expect(JSON.stringify(events)).not.toMatch(/SECRET/)
    } finally {
      diagnostics.unsubscribe(RPC_RESPONSE_CHANNEL, onEvent)
      await facilitator.close()
    }
  })

  it('the Solana RPC fault says how the connection failed, without the URL', async () => {
    const rpc = createHttpRpcTransport({ urls: [closedUrl], timeoutMs: 500 })
    const fault = await rpc.request([{ method: 'getSlot', params: [] }]).then(
      () => undefined,
      (error: unknown) => error as { code: string; message: string },
    )
    expect(fault).toMatchObject({ code: 'rpc_unavailable', message: 'the Solana RPC is unreachable (connection refused)' })
  })
})
