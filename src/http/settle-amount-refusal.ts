import type { Registry } from '../core/registry.js'
import type { SettleResponse } from '../schemas/messages.js'
import { parsePaymentRequest } from '../schemas/parse-request.js'

/** The settle answer's `errorReason` when an unauthenticated caller settles a payment whose settle request sets the amount. */
export const SETTLE_REQUIRES_AUTHENTICATION = 'settle_requires_authentication'

/**
 * The refusal of a settle whose request decides what is charged (an adapter with
 * `settleSetsAmount`, e.g. `upto`) when the caller is not authenticated, or
 * `undefined` for any other request. Routed as the core routes it (version, scheme and
 * network of the parsed request), so every such scheme, present or added later, is covered.
 * A body that does not parse is left to settle, which refuses it before anything is sent.
 */
export function settleAmountRefusal(registry: Pick<Registry, 'find'>, body: unknown): SettleResponse | undefined {
  const parsed = parsePaymentRequest(body)
  if (!parsed.ok) return undefined
  const { paymentPayload, paymentRequirements } = parsed.request
  const adapter = registry.find(paymentPayload.x402Version, paymentRequirements.scheme, paymentRequirements.network)?.adapter
  if (!adapter?.settleSetsAmount) return undefined
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
