import { differingAcceptedField } from '../core/context.js'
import type { Facilitator } from '../core/facilitator.js'
import { toFacilitatorError } from '../errors/facilitator-error.js'
import type { SettleResponse } from '../schemas/messages.js'
import type { PaymentPayload } from '../schemas/payload.js'
import type { PaymentRequirements, ResourceInfo } from '../schemas/requirements.js'
import { decodePaymentHeader, encodePaymentResponseHeader } from './payment-headers.js'
import {
  type PaymentChallengeInput,
  type PaymentOffer,
  paymentRequiredResponse,
  toRequirementsV1,
  toRequirementsV2,
} from './payment-required.js'

export interface PaywallOptions {
  /** A facilitator in the same process: verify and settle without an HTTP hop. */
  facilitator: Pick<Facilitator, 'verify' | 'settle'>
  offers: readonly PaymentOffer[]
  /** Describes the resource; `url` defaults to the request URL. */
  resource?: Omit<ResourceInfo, 'url'> & { url?: string }
  extensions?: Record<string, unknown>
  outputSchema?: unknown
}

/** The verified payment handed to the paid work. */
export interface VerifiedPayment {
  readonly x402Version: 1 | 2
  readonly payer: string | undefined
  readonly payload: PaymentPayload
  readonly requirements: PaymentRequirements
}

/**
 * Guards a paid resource in-process: answers the 402 challenge, verifies the
 * payment header, runs the work, settles, and adds the settlement header.
 * Work that answers an error status is not charged. A failed settlement
 * answers 402 and the work's response is withheld.
 *
 * @example
 * // partial
 * const paid = (request: Request) =>
 *   withPayment(request, { facilitator, offers: [offer] }, async () => Response.json({ weather: 'sunny' }))
 */
export async function withPayment(
  request: Request,
  options: PaywallOptions,
  work: (payment: VerifiedPayment) => Promise<Response>,
): Promise<Response> {
  const input: PaymentChallengeInput = {
    resource: { ...options.resource, url: options.resource?.url ?? request.url },
    offers: options.offers,
    ...(options.extensions ? { extensions: options.extensions } : {}),
    ...(options.outputSchema === undefined ? {} : { outputSchema: options.outputSchema }),
  }
  const challenge = (error?: string): Response => paymentRequiredResponse(error ? { ...input, error } : input)

  const decoded = decodePaymentHeader(request.headers)
  if (!decoded.ok) return challenge(decoded.reason === 'missing_payment' ? undefined : decoded.message)
  const payload = decoded.payload
  const requirements = matchOffer(payload, input)
  if (!requirements) return challenge('the payment matches none of the offered payment requirements')

  const body = { x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements: requirements }
  let payer: string | undefined
  try {
    const verdict = await options.facilitator.verify(body)
    if (!verdict.isValid) return challenge(verdict.invalidReason ?? 'invalid_payment')
    payer = verdict.payer
  } catch (error) {
    return faultResponse(error)
  }

  const response = await work({ x402Version: payload.x402Version, payer, payload, requirements })
  if (response.status >= 400) return response

  let settlement: SettleResponse
  try {
    settlement = await options.facilitator.settle(body)
  } catch (error) {
    return faultResponse(error)
  }
  if (!settlement.success) return challenge(settlement.errorReason ?? 'settlement_failed')
  const headers = new Headers(response.headers)
  for (const [name, value] of Object.entries(encodePaymentResponseHeader(payload.x402Version, settlement))) headers.set(name, value)
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

/** The offer the client paid for, in the requirements form of its version. */
function matchOffer(payload: PaymentPayload, input: PaymentChallengeInput): PaymentRequirements | undefined {
  for (const offer of input.offers) {
    if (payload.x402Version === 2) {
      const wanted = toRequirementsV2(offer)
      if (differingAcceptedField(payload.accepted, wanted) === undefined) return wanted
    } else {
      const wanted = toRequirementsV1(offer, input)
      if (wanted && wanted.scheme === payload.scheme && wanted.network === payload.network) return wanted
    }
  }
  return undefined
}

function faultResponse(error: unknown): Response {
  const fault = toFacilitatorError(error)
  // The payer did nothing wrong: a facilitator fault is a gateway error here.
  const status = fault.status >= 500 ? 502 : fault.status
  return Response.json(fault.toBody(), { status, headers: { 'cache-control': 'no-store' } })
}
