import type { Logger } from '../core/logger.js'
import { chargedAmount, type FacilitatorHooks, type SettleEvent, type VerifyEvent } from '../core/hooks.js'


// Settle outcomes an operator should hear of: money may be moving, or a payer is misbehaving.
const NOTABLE_SETTLE_REASONS = new Set(['settlement_pending', 'transaction_failed', 'payer_suspended', 'invalid_exact_svm_transaction_expired'])

/**
 * After-hooks that log what an operator acts on, once per event: each settlement
 * that landed (`info`, event `settled`: network, payer, amount in base units, asset,
 * transaction), faults (5xx as errors, others as warnings), settlements left pending
 * or failed on chain, and payers refused after failures. Fields are public data only
 * (network, scheme, codes, payer and transaction ids, amounts, durations): never a
 * signature, a payload or an RPC URL.
 *
 * @example
 * // partial
 * createFacilitator({ schemes, hooks: [loggingHooks(pino())] }) // or simply { logger: pino() }
 */
export type { Logger }

export function loggingHooks(logger: Logger): FacilitatorHooks {
  const fieldsOf = (event: VerifyEvent | SettleEvent) => ({
    operation: event.operation,
    network: event.context?.network ?? event.request.paymentRequirements.network,
    scheme: event.context?.scheme ?? event.request.paymentRequirements.scheme,
    durationMs: Math.round(event.durationMs),
  })
  const logFault = (event: VerifyEvent | SettleEvent): boolean => {
    if (!event.fault) return false
    const fields = { ...fieldsOf(event), event: 'fault', code: event.fault.code, status: event.fault.status, reason: event.fault.message }
    if ((event.fault.status ?? 500) >= 500) logger.error(fields, `${event.operation} failed: ${event.fault.code}`)
    else logger.warn(fields, `${event.operation} refused: ${event.fault.code}`)
    return true
  }
  return {
    afterVerify(event) {
      logFault(event)
    },
    afterSettle(event) {
      if (logFault(event)) return
      const { result } = event
      // Landed by this call (sent, or resumed after a restart); a repeat answered from the record was logged when it landed.
      if (result.success && event.context && (event.origin === 'sent' || event.origin === 'resumed')) {
        logger.info(
          {
            ...fieldsOf(event),
            event: 'settled',
            payer: result.payer,
            amount: chargedAmount(result, event.context).toString(),
            asset: event.context.asset,
            transaction: result.transaction,
            ...(event.origin === 'resumed' ? { resumed: true } : {}),
          },
          'settlement landed',
        )
        return
      }
      if (result.success || !result.errorReason || !NOTABLE_SETTLE_REASONS.has(result.errorReason)) return
      logger.warn(
        { ...fieldsOf(event), event: 'settlement_not_landed', code: result.errorReason, payer: result.payer, transaction: result.transaction || undefined, reason: result.errorMessage },
        `settle answered ${result.errorReason}`,
      )
    },
  }
}
