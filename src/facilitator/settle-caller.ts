import type { PaymentContext, SchemeAdapter } from '../core/adapter.js'
import type { SettleResponse } from '../schemas/messages.js'

/** The settle answer's `errorReason` when an unauthenticated caller settles a payment only an authenticated one may. */
export const SETTLE_REQUIRES_AUTHENTICATION = 'settle_requires_authentication'

/**
 * Who asks for a settle, as far as the facilitator can tell. A call in the same process (a
 * resource server embedding the facilitator) is trusted; the HTTP handler names a caller that no
 * `authenticate` hook admitted.
 */
export interface SettleCaller {
  /** False for a caller nobody authenticated. @default true */
  authenticated?: boolean
  /**
   * Lets an unauthenticated caller settle payments whose settle request sets the amount charged
   * (`upto`): only when nothing but trusted servers can reach the route. @default false
   */
  mayChooseAmount?: boolean
}

/**
 * The refusal of a settle that only an authenticated caller may ask for, or `undefined`: a request
 * that decides what is charged (an adapter with `settleSetsAmount`), or a payload the adapter names
 * in `settleNeedsAuthentication` (a refund signed by our delegated receiver authorizer). Asked by
 * the core on the payload it already parsed, so every scheme and every route is held to it.
 */
export function callerRefusal<P>(adapter: SchemeAdapter<P>, ctx: PaymentContext, payload: P, caller: SettleCaller | undefined): SettleResponse | undefined {
  if (caller === undefined || caller.authenticated !== false) return undefined
  if (adapter.settleSetsAmount && caller.mayChooseAmount !== true) {
    return {
      success: false,
      errorReason: SETTLE_REQUIRES_AUTHENTICATION,
      errorMessage:
        `a "${adapter.scheme}" settle request chooses the amount charged, so only an authenticated caller may settle it (a payer could otherwise settle its own payment for nothing): ` +
        'give the handler an authenticate hook (the command: API_TOKENS), or set allowUnauthenticatedSettleAmount when only trusted servers can reach /settle',
      transaction: '',
      network: ctx.wireNetwork,
    }
  }
  if (adapter.settleNeedsAuthentication?.(ctx, payload) !== true) return undefined
  return {
    success: false,
    errorReason: SETTLE_REQUIRES_AUTHENTICATION,
    errorMessage: `settling this "${adapter.scheme}" payload makes the facilitator sign on the service's behalf, so only an authenticated caller may settle it: give the handler an authenticate hook (the command: API_TOKENS)`,
    transaction: '',
    network: ctx.wireNetwork,
  }
}
