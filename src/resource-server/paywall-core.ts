/**
 * The paywall's logic, whatever the transport: the 402 challenge, the payment header, matching an
 * offer, verify, the work, the charge and the settlement. It reads a small request view and answers
 * through an `AnswerKit`, so the web paywall (`Request → Response`) and the node one
 * (`IncomingMessage → ServerResponse`) are thin adapters over one core.
 */
import { differingAcceptedField } from '../core/context.js'
import { FacilitatorError, toFacilitatorError } from '../errors/facilitator-error.js'
import { isPermit2Payload } from '../evm/permit2/permit2-payload-kind.js'
import type { SettleResponse, SupportedResponse } from '../schemas/messages.js'
import type { PaymentPayload } from '../schemas/payload.js'
import type { PaymentRequirements } from '../schemas/requirements.js'
import { encodePaymentResponseHeader, readPaymentHeader } from './payment-headers.js'
import { isMeteredOffer, type PaymentChallengeInput, type PaymentOffer, paymentRequiredAnswer, toRequirementsV1, toRequirementsV2 } from './payment-required.js'
import { noStoreJson, type AnswerKit, type PlainAnswer } from './paywall-answer.js'
import type { PaywallOptions, VerifiedPayment } from './paywall.js'

/** A request as the paywall reads it. */
export interface PaywallRequestView {
  /** The full request URL (the challenge's default `resource.url`): asked only when a challenge is written. */
  url(): string
  /** A header's value (name case-insensitive), or null when absent. */
  header(name: string): string | null
}

/** What paid work answers on a transport: its answer, or the answer and the usage to charge. */
export type WorkAnswer<R> = R | { readonly response: R; readonly usage: bigint }
export type Work<R> = (payment: VerifiedPayment) => Promise<WorkAnswer<R>>

/** One paid request on any transport. */
export type PaywallCore = <R>(view: PaywallRequestView, work: Work<R>, kit: AnswerKit<R>) => Promise<R>

/** The paywall's core for these options: offers checked now (throws `misconfigured`), resolved on the first request. */
export function createPaywallCore(options: PaywallOptions): PaywallCore {
  checkOffers(options.offers)
  if (!options.batchSettlement && options.offers.some(isBatchOffer)) {
    throw new FacilitatorError('misconfigured', 'createPaywall: a batch-settlement offer needs `batchSettlement: createBatchSettlementServer(...)` to keep its channels')
  }
  let resolved: Promise<readonly PaymentOffer[]> | undefined
  let ready: readonly PaymentOffer[] | undefined
  const offers = () => {
    resolved ??= resolveOffers(options).then(
      (list) => (ready = list),
      (error: unknown) => {
        resolved = undefined // a later request asks again
        throw error
      },
    )
    return resolved
  }
  return async (view, work, kit) => {
    if (!ready) {
      try {
        await offers()
      } catch (error) {
        const fault = toFacilitatorError(error)
        return kit.fromPlain(fault.code === 'misconfigured' ? mistakeAnswer(fault.message) : faultAnswer(fault))
      }
    }
    return servePaid(view, options, ready!, work, kit)
  }
}

/** A mistake of the paid work or of the paywall's configuration: the server's bug, answered without a stack. */
export function mistakeAnswer(message: string): PlainAnswer {
  return noStoreJson(500, new FacilitatorError('misconfigured', message).toBody())
}

/** A facilitator fault: the payer did nothing wrong, so a 5xx of the facilitator is a gateway error here. */
export function faultAnswer(error: unknown): PlainAnswer {
  const fault = toFacilitatorError(error)
  return noStoreJson(fault.status >= 500 ? 502 : fault.status, fault.toBody())
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

async function servePaid<R>(view: PaywallRequestView, options: PaywallOptions, offers: readonly PaymentOffer[], work: Work<R>, kit: AnswerKit<R>): Promise<R> {
  // The challenge's input, built only when a challenge is written or a v1 offer is matched (its resource URL).
  let built: PaymentChallengeInput | undefined
  const input = (): PaymentChallengeInput =>
    (built ??= {
      resource: { ...options.resource, url: options.resource?.url ?? view.url() },
      offers,
      ...(options.extensions ? { extensions: options.extensions } : {}),
      ...(options.outputSchema === undefined ? {} : { outputSchema: options.outputSchema }),
    })
  const challenge = (error?: string): R => {
    const answer = paymentRequiredAnswer(error ? { ...input(), error } : input())
    // As the official resource server: a payer who has not approved Permit2 yet gets 412, so its
    // client can approve (or sign an EIP-2612 permit) and pay again, instead of a plain 402.
    return kit.fromPlain(error === 'permit2_allowance_required' ? { ...answer, status: 412 } : answer)
  }

  const decoded = readPaymentHeader(view.header)
  if (!decoded.ok) return challenge(decoded.reason === 'missing_payment' ? undefined : decoded.message)
  const payload = decoded.payload
  if (payload.x402Version === 2 && payload.accepted.scheme === 'batch-settlement' && options.batchSettlement) {
    const offer = offers.find((o) => isBatchOffer(o) && differingAcceptedField(payload.accepted, toRequirementsV2(o)) === undefined)
    if (!offer) return challenge('the payment matches none of the offered payment requirements')
    // A corrective 402 carries the channel's state in the paid offer's extra.
    const corrective = (error: string, correction?: Record<string, unknown>) =>
      kit.fromPlain(paymentRequiredAnswer({ ...input(), error, offers: offers.map((o) => (o === offer && correction ? { ...o, extra: { ...o.extra, ...correction } } : o)) }))
    return options.batchSettlement.serve({
      payload,
      offer,
      requirements: toRequirementsV2(offer),
      challenge: corrective,
      fault: (error) => kit.fromPlain(faultAnswer(error)),
      mistake: (message) => kit.fromPlain(mistakeAnswer(message)),
      work,
      answers: kit,
    })
  }
  const matched = matchOffer(payload, offers, input)
  if (!matched) return challenge('the payment matches none of the offered payment requirements')
  const { requirements, offer } = matched

  const body = { x402Version: payload.x402Version, paymentPayload: payload, paymentRequirements: requirements }
  let payer: string | undefined
  try {
    const verdict = await options.facilitator.verify(body)
    if (!verdict.isValid) return challenge(verdict.invalidReason ?? 'invalid_payment')
    payer = verdict.payer
  } catch (error) {
    return kit.fromPlain(faultAnswer(error))
  }

  const metered = isMeteredOffer(offer)
  const maxAmount = BigInt(offer.amount)
  const answer = await work({ x402Version: payload.x402Version, payer, payload, requirements, metered, maxAmount })
  const response = isMeteredAnswer(answer) ? answer.response : answer
  const problem = kit.problemOf?.(response)
  if (problem !== undefined) return kit.fromPlain(mistakeAnswer(problem))
  if (kit.statusOf(response) >= 400) return response

  const charge = chargeOf(answer, metered, maxAmount)
  if (typeof charge === 'string') return kit.fromPlain(mistakeAnswer(charge))

  const settleBody = metered ? { ...body, paymentRequirements: { ...requirements, amount: charge.toString() } } : body
  let settlement: SettleResponse
  try {
    settlement = await options.facilitator.settle(settleBody)
  } catch (error) {
    return kit.fromPlain(faultAnswer(error))
  }
  if (!settlement.success) return challenge(settlement.errorReason ?? 'settlement_failed')
  return kit.withHeaders(response, encodePaymentResponseHeader(payload.x402Version, settlement))
}

/** The amount to charge for the work's answer, or what the work got wrong. */
function chargeOf<R>(answer: WorkAnswer<R>, metered: boolean, maxAmount: bigint): bigint | string {
  if (!isMeteredAnswer(answer)) {
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

/**
 * Whether the work answered `{ response, usage }`. By shape, not `instanceof Response`: a framework
 * may answer with another fetch implementation's Response.
 */
export function isMeteredAnswer<R>(answer: WorkAnswer<R>): answer is { readonly response: R; readonly usage: bigint } {
  return typeof answer === 'object' && answer !== null && 'response' in answer && 'usage' in answer
}

/** The offer the client paid for, in the requirements form of its version. */
function matchOffer(payload: PaymentPayload, offers: readonly PaymentOffer[], input: () => PaymentChallengeInput): { requirements: PaymentRequirements; offer: PaymentOffer } | undefined {
  // EIP-3009 and Permit2 offers of the same token and price differ only in `extra`: the payload's shape tells them apart.
  const permit2 = isPermit2Payload(payload.payload)
  for (const offer of offers) {
    if ((offer.extra?.assetTransferMethod === 'permit2') !== permit2) continue
    if (payload.x402Version === 2) {
      // For upto the client signed the maximum, which is the offer's amount: all five fields must match.
      const wanted = toRequirementsV2(offer)
      if (differingAcceptedField(payload.accepted, wanted) === undefined) return { requirements: wanted, offer }
    } else {
      const wanted = toRequirementsV1(offer, input())
      if (wanted && wanted.scheme === payload.scheme && wanted.network === payload.network) return { requirements: wanted, offer }
    }
  }
  return undefined
}

function isBatchOffer(offer: PaymentOffer): boolean {
  return offer.scheme === 'batch-settlement'
}
