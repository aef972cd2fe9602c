import { REJECTION } from '../errors/reasons.js'
import type { PaymentRequest } from '../schemas/messages.js'
import type { ResourceInfo } from '../schemas/requirements.js'
import type { PaymentContext } from './adapter.js'
import type { Registry, RegistryMatch } from './registry.js'

/** A request that cannot reach an adapter, with the reason to answer. */
export interface DispatchRejection {
  reason: string
  message: string
}

/**
 * Finds the adapter for a request and builds its context, or says why the
 * request cannot be served. Cross-field checks every scheme needs live here:
 * the payload must name the same scheme and network as the requirements, and
 * in v2 `accepted` must equal the requirements on every field that moves money. `operation` says
 * which request it is: only a settle request may name a lower amount (an upto usage).
 */
export function dispatch(
  registry: Registry,
  request: PaymentRequest,
  signal: AbortSignal,
  operation: 'verify' | 'settle' = 'verify',
): { match: RegistryMatch; context: PaymentContext } | { rejection: DispatchRejection } {
  const requirements = request.paymentRequirements
  const payload = request.paymentPayload
  const version = payload.x402Version
  const scheme = requirements.scheme
  const network = requirements.network

  const match = registry.find(version, scheme, network)
  if (!match) {
    if (!registry.servesScheme(scheme)) {
      return { rejection: { reason: REJECTION.unsupportedScheme, message: `scheme "${scheme}" is not supported` } }
    }
    return {
      rejection: {
        reason: REJECTION.invalidNetwork,
        message: `x402 v${version} "${scheme}" payments on network "${network}" are not supported`,
      },
    }
  }

  let resource: ResourceInfo | undefined
  if (payload.x402Version === 1) {
    if (payload.scheme !== scheme) {
      return { rejection: { reason: REJECTION.schemeMismatch, message: 'payload scheme differs from the requirements' } }
    }
    if (payload.network !== network) {
      return { rejection: { reason: REJECTION.networkMismatch, message: 'payload network differs from the requirements' } }
    }
    const v1 = request.paymentRequirements as { resource?: string; description?: string; mimeType?: string }
    resource = v1.resource ? { url: v1.resource, description: v1.description, mimeType: v1.mimeType } : undefined
  } else {
    // A scheme whose settle request sets the charge (`upto`) is the one exception: the client accepted a
    // maximum, and a settle request carries the usage in `amount`, which may be lower (the adapter
    // refuses more than the permitted maximum). A verify request carries the maximum, as accepted.
    const usageMayDiffer = match.adapter.settleSetsAmount === true && operation === 'settle'
    const differing = differingAcceptedField(payload.accepted, requirements as Record<string, unknown>, usageMayDiffer ? ['amount'] : [])
    if (differing) {
      return {
        rejection: {
          reason: REJECTION.acceptedMismatch,
          message: `paymentPayload.accepted.${differing} differs from paymentRequirements.${differing}`,
        },
      }
    }
    resource = payload.resource ?? undefined
  }

  // By version, not by which field is present: loose v1 requirements may also carry a stray
  // `amount`. The version's own schema has already checked that field is an integer string.
  const amountField = version === 1 ? 'maxAmountRequired' : 'amount'
  const amount = String((requirements as Record<string, unknown>)[amountField])
  return {
    match,
    context: {
      x402Version: version,
      scheme,
      network: match.network.caip2,
      wireNetwork: network,
      amount: BigInt(amount),
      asset: requirements.asset,
      payTo: requirements.payTo,
      requirements,
      payload,
      resource,
      signal,
      timings: {},
    },
  }
}

/**
 * The first field on which a v2 payload's `accepted` differs from the
 * requirements (scheme, network, asset, payTo, amount), or `undefined` when it
 * names exactly these requirements. EVM addresses compare case-insensitively.
 */
export function differingAcceptedField(
  accepted: Record<'scheme' | 'network' | 'asset' | 'payTo' | 'amount', unknown>,
  requirements: Record<string, unknown>,
  exempt: readonly ('scheme' | 'network' | 'asset' | 'payTo' | 'amount')[] = [],
): 'scheme' | 'network' | 'asset' | 'payTo' | 'amount' | undefined {
  return (['scheme', 'network', 'asset', 'payTo', 'amount'] as const).find((field) => !exempt.includes(field) && !sameValue(field, accepted[field], requirements[field]))
}

// EVM addresses are case-insensitive (checksum casing varies between clients).
function sameValue(field: string, a: unknown, b: unknown): boolean {
  if (typeof a === 'string' && typeof b === 'string' && (field === 'asset' || field === 'payTo') && a.startsWith('0x')) {
    return a.toLowerCase() === b.toLowerCase()
  }
  return a === b
}
