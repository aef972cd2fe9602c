/**
 * Small helpers shared by the reliability tests: a facilitator behind a real
 * node:http server, JSON POSTs with timings, a dead loopback port, and the
 * on-chain facts the races and crash tests count.
 */
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { parseEventLogs, type Address, type Hex } from 'viem'
import type { Facilitator } from '../../src/facilitator/facilitator.js'
import { createHandler, type HandlerOptions } from '../../src/http/handler.js'
import { createNodeListener } from '../../src/http/node-listener.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirements } from '../../src/schemas/requirements.js'
import type { EvmFixture } from '../support/evm-fixture.js'
import { listen } from '../support/listen.js'

export const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements) => ({
  x402Version: paymentPayload.x402Version,
  paymentPayload,
  paymentRequirements,
})

/** A facilitator served by the library's node:http listener on a loopback port. */
export function serve(facilitator: Pick<Facilitator, 'supported' | 'verify' | 'settle'>, options: HandlerOptions = {}) {
  return listen(createNodeListener(createHandler(facilitator, options)))
}

export interface Posted {
  status: number
  headers: Headers
  text: string
  json: Record<string, unknown>
  ms: number
}

/** POSTs JSON and reads the whole answer, with the time it took. */
export async function postJson(url: string, payload: unknown): Promise<Posted> {
  const started = performance.now()
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) })
  const text = await response.text()
  let json: Record<string, unknown> = {}
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    // left empty: the assertions on status say what went wrong
  }
  return { status: response.status, headers: response.headers, text, json, ms: performance.now() - started }
}

/** A loopback port nobody listens on. */
export async function deadPort(): Promise<number> {
  const server = createTcpServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Time a promise takes, with its outcome (value or error). */
export async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = performance.now()
  try {
    const value = await work
    return { ms: performance.now() - started, value }
  } catch (error) {
    return { ms: performance.now() - started, error }
  }
}

/** EIP-3009 authorizations of `payer` used on chain since `fromBlock` (one per transfer). */
export async function authorizationsUsed(world: EvmFixture, payer: Address, fromBlock: bigint) {
  const logs = await world.node.publicClient.getContractEvents({
    address: world.token.address,
    abi: world.token.abi,
    eventName: 'AuthorizationUsed',
    fromBlock,
  })
  return logs.filter((log) => (log.args as { authorizer?: string }).authorizer?.toLowerCase() === payer.toLowerCase())
}

/** The AuthorizationUsed events of one transaction. */
export async function authorizationsIn(world: EvmFixture, hash: Hex) {
  const receipt = await world.node.publicClient.getTransactionReceipt({ hash })
  return parseEventLogs({ abi: world.token.abi, logs: receipt.logs, eventName: 'AuthorizationUsed' })
}

/** Sum of the confirmed transaction counts of `addresses`. */
export async function nonceSum(world: EvmFixture, addresses: readonly Address[]): Promise<number> {
  const counts = await Promise.all(addresses.map((address) => world.node.publicClient.getTransactionCount({ address })))
  return counts.reduce((a, b) => a + b, 0)
}
