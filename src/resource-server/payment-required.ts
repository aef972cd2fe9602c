import { describeNetwork } from '../networks/networks.js'
import type { PaymentRequirementsV1, PaymentRequirementsV2, ResourceInfo } from '../schemas/requirements.js'
import { encodeJsonHeader, PAYMENT_HEADERS } from './payment-headers.js'
import type { PlainAnswer } from './paywall-answer.js'

/** What a paid resource asks for, written once in v2 form. */
export interface PaymentOffer {
  readonly scheme: string
  /** CAIP-2 id; v1 clients are offered the v1 name when the network has one. */
  readonly network: string
  /** Smallest token unit, decimal string: the price, or for `upto` the maximum the payer authorizes. */
  readonly amount: string
  readonly asset: string
  readonly payTo: string
  /** @default 60 */
  readonly maxTimeoutSeconds?: number
  /**
   * Scheme data: EIP-712 `{name, version}` on EVM (with `assetTransferMethod: "permit2"` to be paid
   * through Permit2), `{feePayer}` on Solana. `upto` also carries `facilitatorAddress`, which
   * `createPaywall` reads from the facilitator when it is left out.
   */
  readonly extra?: Record<string, unknown>
}

export interface PaymentChallengeInput {
  readonly resource: ResourceInfo
  readonly offers: readonly PaymentOffer[]
  /** Why payment is asked for again (e.g. a failed verification). */
  readonly error?: string
  /** v2 extensions (e.g. bazaar discovery metadata). */
  readonly extensions?: Record<string, unknown>
  /** Schema of the resource's output, shown to v1 clients. */
  readonly outputSchema?: unknown
}

/** The v2 form of an offer, as listed in `PAYMENT-REQUIRED` and expected back in `accepted`. */
export function toRequirementsV2(offer: PaymentOffer): PaymentRequirementsV2 {
  return {
    scheme: offer.scheme,
    network: offer.network,
    amount: offer.amount,
    asset: offer.asset,
    payTo: offer.payTo,
    maxTimeoutSeconds: offer.maxTimeoutSeconds ?? 60,
    ...(offer.extra ? { extra: offer.extra } : {}),
  }
}

/** True for an offer that charges the usage the work reports, up to its `amount` (scheme `upto`). */
export function isMeteredOffer(offer: PaymentOffer): boolean {
  return offer.scheme === 'upto'
}

/** The v1 form of an offer, or `undefined` when its network has no v1 name or it is `upto` or `batch-settlement` (v2 only). */
export function toRequirementsV1(offer: PaymentOffer, input: PaymentChallengeInput): PaymentRequirementsV1 | undefined {
  if (isMeteredOffer(offer) || offer.scheme === 'batch-settlement') return undefined
  const v1Name = describeNetwork(offer.network)?.v1Name
  if (!v1Name) return undefined
  return {
    scheme: offer.scheme,
    network: v1Name,
    maxAmountRequired: offer.amount,
    resource: input.resource.url,
    description: input.resource.description ?? '',
    mimeType: input.resource.mimeType ?? '',
    maxTimeoutSeconds: offer.maxTimeoutSeconds ?? 60,
    asset: offer.asset,
    payTo: offer.payTo,
    ...(input.outputSchema === undefined ? {} : { outputSchema: input.outputSchema }),
    ...(offer.extra ? { extra: offer.extra } : {}),
  }
}

/**
 * A 402 challenge that both protocol versions understand: the v2 challenge in
 * the `PAYMENT-REQUIRED` header and the v1 challenge as the JSON body.
 *
 * @example
 * // partial
 * return paymentRequiredResponse({ resource: { url: request.url }, offers: [usdcOnBase] })
 */
export function paymentRequiredResponse(input: PaymentChallengeInput): Response {
  const answer = paymentRequiredAnswer(input)
  return new Response(answer.body, { status: answer.status, headers: answer.headers })
}

/** The 402 challenge of {@link paymentRequiredResponse} as a plain answer (any transport). */
export function paymentRequiredAnswer(input: PaymentChallengeInput): PlainAnswer {
  const v2 = {
    x402Version: 2,
    ...(input.error ? { error: input.error } : {}),
    resource: input.resource,
    accepts: input.offers.map(toRequirementsV2),
    ...(input.extensions ? { extensions: input.extensions } : {}),
  }
  const v1Accepts = input.offers.map((offer) => toRequirementsV1(offer, input)).filter((r) => r !== undefined)
  const body = { x402Version: 1, error: input.error ?? 'payment required', accepts: v1Accepts }
  return {
    status: 402,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      [PAYMENT_HEADERS.v2Required]: encodeJsonHeader(v2),
      'access-control-expose-headers': `${PAYMENT_HEADERS.v2Required}, ${PAYMENT_HEADERS.v2Response}, ${PAYMENT_HEADERS.v1Response}`,
    },
    body: JSON.stringify(body),
  }
}
