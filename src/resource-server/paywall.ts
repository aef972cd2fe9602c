import type { Facilitator } from '../facilitator/facilitator.js'
import { toFacilitatorError } from '../errors/facilitator-error.js'
import type { PaymentPayload } from '../schemas/payload.js'
import type { PaymentRequirements, ResourceInfo } from '../schemas/requirements.js'
import type { BatchSettlementServer } from './batch/batch-settlement-server.js'
import { withSettlementHeaders } from './payment-headers.js'
import type { PaymentOffer } from './payment-required.js'
import type { AnswerKit } from './paywall-answer.js'
import { createPaywallCore, mistakeAnswer, type PaywallRequestView } from './paywall-core.js'

export interface PaywallOptions {
  /**
   * A facilitator in the same process: verify and settle without an HTTP hop. Its `supported()`
   * is asked (once per paywall) for the `extra.facilitatorAddress` of `upto` offers that lack it.
   */
  facilitator: Pick<Facilitator, 'verify' | 'settle'> & Partial<Pick<Facilitator, 'supported'>>
  offers: readonly PaymentOffer[]
  /** Describes the resource; `url` defaults to the request URL. */
  resource?: Omit<ResourceInfo, 'url'> & { url?: string }
  extensions?: Record<string, unknown>
  outputSchema?: unknown
  /**
   * The channel side of `batch-settlement` offers (`createBatchSettlementServer()`): required when
   * an offer's scheme is `batch-settlement`.
   */
  batchSettlement?: BatchSettlementServer
}

/** The verified payment handed to the paid work. */
export interface VerifiedPayment {
  readonly x402Version: 1 | 2
  readonly payer: string | undefined
  readonly payload: PaymentPayload
  /** The requirements the payment was verified against (for `upto`, `amount` is the maximum). */
  readonly requirements: PaymentRequirements
  /**
   * True for an `upto` payment: the work must answer {@link MeteredResponse} with its usage.
   * False for a fixed price (`exact`), which charges `maxAmount`.
   */
  readonly metered: boolean
  /** The most this payment can charge, in the asset's smallest unit: the price, or the `upto` maximum. */
  readonly maxAmount: bigint
}

/**
 * What paid work answers for a metered (`upto`) payment: its response and the usage to charge, in
 * the asset's smallest unit, from `0n` (settles without a transaction) to `payment.maxAmount`.
 */
export interface MeteredResponse {
  readonly response: Response
  readonly usage: bigint
}

/**
 * The paid work: runs only for a verified payment. A plain `Response` charges a fixed-price
 * payment its price; a metered (`upto`) payment must answer `{ response, usage }`.
 */
export type PaidWork = (payment: VerifiedPayment) => Promise<Response | MeteredResponse>

/** A paid endpoint: `Request → Response`, the work running once a payment is verified. */
export type Paywall = (request: Request, work: PaidWork) => Promise<Response>

/**
 * A paid endpoint in-process, configured once: answers the 402 challenge, verifies the payment
 * header, runs the work, settles what it charges, and adds the settlement header
 * (`PAYMENT-RESPONSE`, with `amount` for `upto`).
 *
 * Fixed-price offers (`exact`, with EIP-3009 or `extra.assetTransferMethod: "permit2"`) charge
 * their `amount`. An `upto` offer's `amount` is the maximum the payer authorizes; the work answers
 * `{ response, usage }` and exactly `usage` is settled (`0n` settles with no transaction).
 * `extra.facilitatorAddress` of an `upto` offer is taken from the facilitator's `supported()`
 * (asked once, on the first request) unless the offer sets it.
 *
 * A `batch-settlement` offer (v2 only) needs `batchSettlement` (`createBatchSettlementServer()`):
 * the payer deposits into a channel once, then each request carries a voucher for what was charged
 * plus `amount`; the work may answer `{ response, usage }` to charge less than `amount`. Its
 * `extra.receiverAuthorizer` is the server's own key or the facilitator's (from `supported()`), and
 * `extra.withdrawDelay` the server's.
 *
 * The offers are checked at once: an offer without a `payTo` (missing, empty or blank, as an unset
 * environment variable leaves it), `asset`, `network` or `scheme`, or with an `amount` that is not
 * a decimal integer string, throws `FacilitatorError('misconfigured')` naming the offer, instead of
 * serving a 402 nobody can pay (or that pays nobody).
 *
 * Nothing is charged when the work answers an error status (>= 400). Mistakes of the work are
 * answered 500 `{code: "misconfigured"}`, with nothing charged and its response withheld: a usage
 * above the maximum or below zero, a usage reported for a fixed price that differs from it, and a
 * metered payment answered without a usage (neither the maximum nor zero is a safe guess: the
 * first overcharges the payer, the second gives the work away, and both go unnoticed). A failed
 * settlement answers 402 and the work's response is withheld.
 *
 * @example
 * // partial
 * const paywall = createPaywall({ facilitator, offers: [{ scheme: 'upto', network: 'eip155:8453', amount: '50000', asset: usdc, payTo: shop }] })
 * const handler = (request: Request) =>
 *   paywall(request, async (payment) => {
 *     const answer = await runModel(request, payment.maxAmount)
 *     return { response: Response.json(answer), usage: answer.cost }
 *   })
 */
export function createPaywall(options: PaywallOptions): Paywall {
  const core = createPaywallCore(options)
  return (request, work) => core(webView(request), work, webAnswers)
}

/**
 * Guards a paid resource in-process: answers the 402 challenge, verifies the
 * payment header, runs the work, settles, and adds the settlement header.
 * The one-call form of {@link createPaywall} (same rules); an `upto` offer without
 * `extra.facilitatorAddress` asks the facilitator's `supported()` on every call,
 * which `createPaywall` does once. A misconfigured offer (no `payTo`, ...) is answered
 * 500 `{code: "misconfigured"}` naming it, the work never run.
 *
 * @example
 * // partial
 * const paid = (request: Request) =>
 *   withPayment(request, { facilitator, offers: [offer] }, async () => Response.json({ weather: 'sunny' }))
 */
export async function withPayment(request: Request, options: PaywallOptions, work: PaidWork): Promise<Response> {
  let paywall: Paywall
  try {
    paywall = createPaywall(options)
  } catch (error) {
    const fault = toFacilitatorError(error)
    if (fault.code === 'misconfigured') return webAnswers.fromPlain(mistakeAnswer(fault.message))
    throw error
  }
  return paywall(request, work)
}

/** The web request as the paywall core reads it. */
function webView(request: Request): PaywallRequestView {
  return { url: () => request.url, header: (name) => request.headers.get(name) }
}

/** Web `Response`s: the paywall's plain answers made into them, the settlement header set on the work's. */
const webAnswers: AnswerKit<Response> = {
  fromPlain: (answer) => new Response(answer.body, { status: answer.status, headers: answer.headers }),
  statusOf: (response) => response.status,
  withHeaders: withSettlementHeaders,
}
