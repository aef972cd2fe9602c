import type { SchemeAdapter } from '../core/adapter.js'
import { dispatch } from '../core/context.js'
import type { Registry } from '../core/registry.js'
import type { PaymentRequest, SettleResponse } from '../schemas/messages.js'
import { parsePaymentRequest } from '../schemas/parse-request.js'

/** The settle answer's `errorReason` when an unauthenticated caller settles a payment whose settle request sets the amount. */
export const SETTLE_REQUIRES_AUTHENTICATION = 'settle_requires_authentication'

/**
 * The refusal of a settle that only an authenticated caller may ask for, when the caller is not
 * authenticated, or `undefined` for any other request: a request that decides what is charged (an
 * adapter with `settleSetsAmount`, e.g. `upto`), or a payload the adapter names in
 * `settleNeedsAuthentication` (a refund signed by our delegated receiver authorizer). Routed as
 * the core routes it, so every such scheme, present or added later, is covered. A body that does
 * not parse or dispatch is left to settle, which refuses it before anything is sent.
 */
export function settleAmountRefusal(registry: Registry, body: unknown, guardAmounts = true): SettleResponse | undefined {
  const parsed = parsePaymentRequest(body)
  if (!parsed.ok) return undefined
  const { paymentRequirements } = parsed.request
  const adapter = registry.find(parsed.request.paymentPayload.x402Version, paymentRequirements.scheme, paymentRequirements.network)?.adapter
  if (!adapter) return undefined
  if (adapter.settleSetsAmount && guardAmounts) {
    return {
      success: false,
      errorReason: SETTLE_REQUIRES_AUTHENTICATION,
      errorMessage:
        `a "${adapter.scheme}" settle request chooses the amount charged, so only an authenticated caller may settle it (a payer could otherwise settle its own payment for nothing): ` +
        'give the handler an authenticate hook (the command: API_TOKENS), or set allowUnauthenticatedSettleAmount when only trusted servers can reach /settle',
      transaction: '',
      network: paymentRequirements.network,
      // As every answer of such a scheme: what was charged.
      amount: '0',
    }
  }
  if (!adapter.settleNeedsAuthentication || !needsAuthentication(registry, parsed.request, adapter)) return undefined
  return {
    success: false,
    errorReason: SETTLE_REQUIRES_AUTHENTICATION,
    errorMessage: `settling this "${adapter.scheme}" payload makes the facilitator sign on the service's behalf, so only an authenticated caller may settle it: give the handler an authenticate hook (the command: API_TOKENS)`,
    transaction: '',
    network: paymentRequirements.network,
  }
}

/** The adapter's own answer on the parsed payload; a request that does not dispatch or parse is left to settle. */
function needsAuthentication(registry: Registry, request: PaymentRequest, adapter: SchemeAdapter): boolean {
  const dispatched = dispatch(registry, request, AbortSignal.timeout(1_000))
  if ('rejection' in dispatched) return false
  try {
    const parsed = adapter.parse(dispatched.context)
    return 'payload' in parsed && adapter.settleNeedsAuthentication!(dispatched.context, parsed.payload)
  } catch {
    return false
  }
}
