import type { PaymentContext } from './adapter.js'
import { REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'

/** A `success:false` settle answer on the context's wire network; the payer and message only when known. */
export function settleFailure(
  context: PaymentContext,
  errorReason: string,
  errorMessage: string | undefined,
  payer: string | undefined,
  transaction = '',
): SettleResponse {
  return {
    success: false,
    errorReason,
    ...(errorMessage ? { errorMessage } : {}),
    transaction,
    network: context.wireNetwork,
    ...(payer ? { payer } : {}),
  }
}

/** The answer for a transaction that was sent but is not confirmed yet: it keeps the transaction id. */
export function settlementPending(context: PaymentContext, transaction: string, payer: string | undefined): SettleResponse {
  return settleFailure(context, REJECTION.settlementPending, 'the transaction was sent but is not confirmed yet; settle again later to learn its outcome', payer, transaction)
}
