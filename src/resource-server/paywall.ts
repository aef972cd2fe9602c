import { differingAcceptedField } from '../core/context.js'
import type { Facilitator } from '../facilitator/facilitator.js'
import { FacilitatorError, toFacilitatorError } from '../errors/facilitator-error.js'
import { isPermit2Payload } from '../evm/permit2/permit2-payload-kind.js'
import type { SettleResponse, SupportedResponse } from '../schemas/messages.js'
import type { PaymentPayload } from '../schemas/payload.js'
import type { PaymentRequirements, ResourceInfo } from '../schemas/requirements.js'
import type { BatchSettlementServer } from './batch/batch-settlement-server.js'
import { decodePaymentHeader, encodePaymentResponseHeader, withSettlementHeaders } from './payment-headers.js'
import {
  isMeteredOffer,
  type PaymentChallengeInput,
  type PaymentOffer,
  paymentRequiredResponse,
  toRequirementsV1,
  toRequirementsV2,
} from './payment-required.js'

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
  checkOffers(options.offers)
  if (!options.batchSettlement && options.offers.some(isBatchOffer)) {
    throw new FacilitatorError('misconfigured', 'createPaywall: a batch-settlement offer needs `batchSettlement: createBatchSettlementServer(...)` to keep its channels')
  }
  let resolved: Promise<readonly PaymentOffer[]> | undefined
  const offers = () => {
    resolved ??= resolveOffers(options).catch((error: unknown) => {
      resolved = undefined // a later request asks again
      throw error
    })
    return resolved
  }
  return async (request, work) => {
    let ready: readonly PaymentOffer[]
    try {
      ready = await offers()
    } catch (error) {
      const fault = toFacilitatorError(error)
      return fault.code === 'misconfigured' ? workMistake(fault.message) : faultResponse(fault)
    }
    return servePaid(request, options, ready, work)
  }
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
    if (fault.code === 'misconfigured') return workMistake(fault.message)
    throw error
  }
  return paywall(request, work)
}

/**
 * Refuses offers that no payment could satisfy or that would pay nobody, naming the offer: the
 * fields every offer needs, non-empty and without surrounding blanks, and an amount in the
 * asset's smallest unit.
 */
function checkOffers(offers: readonly PaymentOffer[]): void {
  if (!Array.isArray(offers) || offers.length === 0) throw new FacilitatorError('misconfigured', 'createPaywall: offers is empty; list at least one offer')
  offers.forEach((offer, index) => {
    const name = `offers[${index}] (${String(offer?.scheme)} on ${String(offer?.network)})`
    for (const field of ['scheme', 'network', 'asset', 'payTo'] as const) {
      const value: unknown = offer?.[field]
      if (typeof value !== 'string' || value.trim() === '') {
        const what = field === 'payTo' ? ': set the address the payment goes to' : ''
        throw new FacilitatorError('misconfigured', `createPaywall: ${name} has no ${field} (${value === undefined ? 'missing' : JSON.stringify(value)})${what}`)
      }
      if (value.trim() !== value) throw new FacilitatorError('misconfigured', `createPaywall: ${name} has ${field} ${JSON.stringify(value)} with blanks around it`)
    }
    if (typeof offer.amount !== 'string' || !/^\d{1,78}$/.test(offer.amount)) {
      throw new FacilitatorError('misconfigured', `createPaywall: ${name} has amount ${JSON.stringify(offer.amount)}: write it in the asset's smallest unit, as a decimal integer string`)
    }
  })
}

/** Fills in what the facilitator knows: `extra.facilitatorAddress` (and Permit2 on EVM) of `upto` offers. */
async function resolveOffers(options: PaywallOptions): Promise<readonly PaymentOffer[]> {
  const needsAddress = (offer: PaymentOffer) => isMeteredOffer(offer) && typeof offer.extra?.facilitatorAddress !== 'string'
  // A batch-settlement offer names a receiver authorizer: the server's own, or the facilitator's.
  const needsAuthorizer = (offer: PaymentOffer) => isBatchOffer(offer) && options.batchSettlement?.needsSupported === true && typeof offer.extra?.receiverAuthorizer !== 'string'
  let kinds: SupportedResponse['kinds'] = []
  if (options.offers.some(needsAddress) || options.offers.some(needsAuthorizer)) {
    if (!options.facilitator.supported) {
      throw new FacilitatorError('misconfigured', 'an upto offer without extra.facilitatorAddress (or a batch-settlement offer without a receiver authorizer) needs a facilitator with supported() to read it from')
    }
    kinds = (await options.facilitator.supported()).kinds
  }
  return options.offers.map((offer) => {
    if (isBatchOffer(offer)) {
      return options.batchSettlement!.resolveOffer(offer, kinds)
    }
    if (!isMeteredOffer(offer)) return offer
    let extra: Record<string, unknown> = { ...offer.extra }
    if (needsAddress(offer)) {
      const kind = kinds.find((k) => k.x402Version === 2 && k.scheme === offer.scheme && k.network === offer.network)
      const address = kind?.extra?.facilitatorAddress
      if (typeof address !== 'string') {
        throw new FacilitatorError('misconfigured', `the facilitator lists no v2 "${offer.scheme}" kind with extra.facilitatorAddress on ${offer.network} (configure evmSchemes, or set the offer's extra.facilitatorAddress)`)
      }
      extra = { ...extra, facilitatorAddress: address }
    }
    // EVM upto pays only through Permit2; the official resource server writes this too.
    if (offer.network.startsWith('eip155:')) extra = { ...extra, assetTransferMethod: 'permit2' }
    return { ...offer, extra }
  })
}

async function servePaid(request: Request, options: PaywallOptions, offers: readonly PaymentOffer[], work: PaidWork): Promise<Response> {
  const input: PaymentChallengeInput = {
    resource: { ...options.resource, url: options.resource?.url ?? request.url },
    offers,
    ...(options.extensions ? { extensions: options.extensions } : {}),
    ...(options.outputSchema === undefined ? {} : { outputSchema: options.outputSchema }),
  }
  const challenge = (error?: string): Response => {
    const response = paymentRequiredResponse(error ? { ...input, error } : input)
    // As the official resource server: a payer who has not approved Permit2 yet gets 412, so its
    // client can approve (or sign an EIP-2612 permit) and pay again, instead of a plain 402.
    return error === 'permit2_allowance_required' ? new Response(response.body, { status: 412, headers: response.headers }) : response
  }

  const decoded = decodePaymentHeader(request.headers)
  if (!decoded.ok) return challenge(decoded.reason === 'missing_payment' ? undefined : decoded.message)
  const payload = decoded.payload
  if (payload.x402Version === 2 && payload.accepted.scheme === 'batch-settlement' && options.batchSettlement) {
    const offer = offers.find((o) => isBatchOffer(o) && differingAcceptedField(payload.accepted, toRequirementsV2(o)) === undefined)
    if (!offer) return challenge('the payment matches none of the offered payment requirements')
    // A corrective 402 carries the channel's state in the paid offer's extra.
    const corrective = (error: string, correction?: Record<string, unknown>) =>
      paymentRequiredResponse({ ...input, error, offers: offers.map((o) => (o === offer && correction ? { ...o, extra: { ...o.extra, ...correction } } : o)) })
    return options.batchSettlement.serve({
      payload,
      offer,
      requirements: toRequirementsV2(offer),
      challenge: corrective,
      fault: faultResponse,
      mistake: workMistake,
      work,
    })
  }
  const matched = matchOffer(payload, input)
  if (!matched) return challenge('the payment matches none of the offered payment requirements')
  const { requirements, offer } = matched

  const body = { x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements: requirements }
  let payer: string | undefined
  try {
    const verdict = await options.facilitator.verify(body)
    if (!verdict.isValid) return challenge(verdict.invalidReason ?? 'invalid_payment')
    payer = verdict.payer
  } catch (error) {
    return faultResponse(error)
  }

  const metered = isMeteredOffer(offer)
  const maxAmount = BigInt(offer.amount)
  const answer = await work({ x402Version: payload.x402Version, payer, payload, requirements, metered, maxAmount })
  const response = isMeteredResponse(answer) ? answer.response : answer
  if (response.status >= 400) return response

  const charge = chargeOf(answer, metered, maxAmount)
  if (typeof charge === 'string') return workMistake(charge)

  const settleBody = metered ? { ...body, paymentRequirements: { ...requirements, amount: charge.toString() } } : body
  let settlement: SettleResponse
  try {
    settlement = await options.facilitator.settle(settleBody)
  } catch (error) {
    return faultResponse(error)
  }
  if (!settlement.success) return challenge(settlement.errorReason ?? 'settlement_failed')
  return withSettlementHeaders(response, encodePaymentResponseHeader(payload.x402Version, settlement))
}

/** The amount to charge for the work's answer, or what the work got wrong. */
function chargeOf(answer: Response | MeteredResponse, metered: boolean, maxAmount: bigint): bigint | string {
  if (!isMeteredResponse(answer)) {
    return metered ? 'the paid work answered an upto (metered) payment without a usage: answer { response, usage }' : maxAmount
  }
  const { usage } = answer
  if (typeof usage !== 'bigint') return `the paid work reported a usage that is not a bigint (${typeof usage})`
  if (!metered) {
    return usage === maxAmount ? usage : `the paid work reported a usage of ${usage} for a fixed-price payment of ${maxAmount}; only upto payments charge their usage`
  }
  if (usage < 0n) return `the paid work reported a negative usage (${usage})`
  if (usage > maxAmount) return `the paid work reported a usage of ${usage}, above the maximum of ${maxAmount} the payer authorized`
  return usage
}

// By shape, not `instanceof Response`: a framework may answer with another fetch implementation's Response.
function isMeteredResponse(answer: Response | MeteredResponse): answer is MeteredResponse {
  return typeof answer === 'object' && answer !== null && 'response' in answer && 'usage' in answer
}

/** The offer the client paid for, in the requirements form of its version. */
function matchOffer(payload: PaymentPayload, input: PaymentChallengeInput): { requirements: PaymentRequirements; offer: PaymentOffer } | undefined {
  // EIP-3009 and Permit2 offers of the same token and price differ only in `extra`: the payload's shape tells them apart.
  const permit2 = isPermit2Payload(payload.payload)
  for (const offer of input.offers) {
    if ((offer.extra?.assetTransferMethod === 'permit2') !== permit2) continue
    if (payload.x402Version === 2) {
      // For upto the client signed the maximum, which is the offer's amount: all five fields must match.
      const wanted = toRequirementsV2(offer)
      if (differingAcceptedField(payload.accepted, wanted) === undefined) return { requirements: wanted, offer }
    } else {
      const wanted = toRequirementsV1(offer, input)
      if (wanted && wanted.scheme === payload.scheme && wanted.network === payload.network) return { requirements: wanted, offer }
    }
  }
  return undefined
}

function isBatchOffer(offer: PaymentOffer): boolean {
  return offer.scheme === 'batch-settlement'
}

/** A mistake of the paid work or of the paywall's configuration: the server's bug, answered without a stack. */
function workMistake(message: string): Response {
  return Response.json(new FacilitatorError('misconfigured', message).toBody(), { status: 500, headers: { 'cache-control': 'no-store' } })
}

function faultResponse(error: unknown): Response {
  const fault = toFacilitatorError(error)
  // The payer did nothing wrong: a facilitator fault is a gateway error here.
  const status = fault.status >= 500 ? 502 : fault.status
  return Response.json(fault.toBody(), { status, headers: { 'cache-control': 'no-store' } })
}
