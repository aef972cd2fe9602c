import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Facilitator } from 'x402-facilitator'
import { withPayment, type PaymentOffer } from 'x402-facilitator/server'
import { createNodeListener } from 'x402-facilitator/http'

/** Options of {@link startPaidResourceServer}. */
export interface PaidResourceServerOptions {
  /** A facilitator in this process: payments are verified and settled without an HTTP hop. */
  facilitator: Pick<Facilitator, 'verify' | 'settle'>
  /** What `GET /weather` costs, one offer per accepted network and token. */
  offers: readonly PaymentOffer[]
  /** @default 0 (a free port) */
  port?: number
}

/**
 * A paid API on plain node:http that is its own facilitator: `GET /weather`
 * answers 402 with a challenge both protocol versions read, then serves and
 * settles payments from v1 (`X-PAYMENT`) and v2 (`PAYMENT-SIGNATURE`) clients.
 *
 * @example
 * const shop = await startPaidResourceServer({ facilitator, offers: [usdcOnBase] })
 * // GET `${shop.url}/weather` with @x402/fetch or x402-fetch
 */
export async function startPaidResourceServer(options: PaidResourceServerOptions) {
  const handler = async (request: Request): Promise<Response> => {
    if (new URL(request.url).pathname !== '/weather') return Response.json({ error: 'not found', code: 'not_found' }, { status: 404 })
    return withPayment(
      request,
      { facilitator: options.facilitator, offers: options.offers, resource: { description: 'Weather', mimeType: 'application/json' } },
      // Runs only for a verified payment; settlement follows once it answers 2xx.
      async (payment) => Response.json({ weather: 'sunny', paidBy: payment.payer ?? null }),
    )
  }
  const server = createServer(createNodeListener(handler))
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Paying clients keep their sockets alive; close must not wait for them.
        server.closeAllConnections()
      }),
  }
}
