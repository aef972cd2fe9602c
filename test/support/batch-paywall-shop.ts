/**
 * A shop for batch-settlement paywall tests: our paywall over one batch-settlement offer (reached
 * through a fetch function, no HTTP), the official batch-settlement client paying it, and the
 * payment headers it sent (so a test can replay or tamper with them).
 */
import { x402Client } from '@x402/core/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import { BatchSettlementEvmScheme as BatchClient } from '@x402/evm/batch-settlement/client'
import type { Address, LocalAccount } from 'viem'
import type { Facilitator } from '../../src/facilitator/facilitator.js'
import { createBatchSettlementServer, type BatchSettlementServerOptions } from '../../src/resource-server/batch/index.js'
import { createPaywall, PAYMENT_HEADERS, type Paywall } from '../../src/resource-server/index.js'
import type { EvmFixture } from './evm-fixture.js'

export const BATCH_NETWORK = 'eip155:84532'
export const SHOP_URL = 'http://shop.test/call'

export interface ShopFetch {
  (input: RequestInfo | URL, init?: RequestInit): Promise<Response>
  /** Statuses of the requests that carried a payment. */
  readonly seen: number[]
  /** Their payment headers, in order. */
  readonly headers: string[]
  /** How many times the paid work ran. */
  readonly worked: () => number
}

export function batchShop(world: EvmFixture, facilitator: Facilitator, receiver: Address, price: bigint, options: Partial<BatchSettlementServerOptions> = {}) {
  const batch = createBatchSettlementServer({ facilitator, claimPolicy: false, ...options })
  const paywall = createPaywall({
    facilitator,
    batchSettlement: batch,
    offers: [{ scheme: 'batch-settlement', network: BATCH_NETWORK, amount: price.toString(), asset: world.token.address, payTo: receiver, extra: { name: world.token.name, version: world.token.version } }],
  })
  return { batch, paywall, fetch: shopFetch(paywall) }
}

export function shopFetch(paywall: Paywall): ShopFetch {
  const seen: number[] = []
  const headers: string[] = []
  let worked = 0
  const fetcher = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init)
    const response = await paywall(request, async () => {
      worked++
      return Response.json({ ok: true })
    })
    const header = request.headers.get(PAYMENT_HEADERS.v2Payment)
    if (header) {
      seen.push(response.status)
      headers.push(header)
    }
    return response
  }
  return Object.assign(fetcher, { seen, headers, worked: () => worked })
}

/** The official client for `payer` (its own channel state), and a paying fetch over `target`. */
export function payingClient(payer: LocalAccount | ConstructorParameters<typeof BatchClient>[0], target: ShopFetch, options?: ConstructorParameters<typeof BatchClient>[1]) {
  const client = new BatchClient(payer, options)
  return { client, pay: payVia(client, target) }
}

export function payVia(client: BatchClient, target: ShopFetch) {
  return wrapFetchWithPayment(target as typeof fetch, new x402Client().setSpendControls(false).register(BATCH_NETWORK, client))
}

/** The `PAYMENT-REQUIRED` challenge of a 402. */
export function challengeOf(response: Response): { error?: string; accepts: { extra: Record<string, any> }[] } {
  return JSON.parse(atob(response.headers.get(PAYMENT_HEADERS.v2Required)!))
}

/** A payment header with its payload changed by `edit`. */
export function tamper(header: string, edit: (payload: Record<string, any>) => void): string {
  const decoded = JSON.parse(atob(header)) as { payload: Record<string, any> }
  edit(decoded.payload)
  return btoa(JSON.stringify(decoded))
}
