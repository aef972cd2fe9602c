import type { PaymentContext } from '../core/adapter.js'
import { settleFailure } from '../core/settle-answers.js'
import { isPendingSettlement, REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'
import type { SettlementStore } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'
import { identity } from './identity.js'
import type { PayerFailureBudget } from './settlement-options.js'

const DEFAULT_MAX_PAYER_FAILURES = 3
const DEFAULT_PAYER_FAILURE_WINDOW_MS = 3_600_000

interface PayerFailuresInput {
  store: SettlementStore
  context: PaymentContext
  /** `false` turns the budget off. @default { maxFailures: 3, windowMs: 3_600_000 } */
  budget: PayerFailureBudget | false | undefined
  /** The bound of a call that answers the payer (the settle's remaining budget within the store timeout). */
  bound(): number
  storeTimeoutMs: number
}

/**
 * The failure budget of one settle's payer (see `SettlementOptions.payerFailures`), counted under its
 * address and, when the adapter names it, the balance it pays from (`account`).
 */
export function payerFailures(input: PayerFailuresInput) {
  const { store, context, bound, storeTimeoutMs } = input
  const budget = input.budget === false ? undefined : {
    maxFailures: input.budget?.maxFailures ?? DEFAULT_MAX_PAYER_FAILURES,
    windowMs: input.budget?.windowMs ?? DEFAULT_PAYER_FAILURE_WINDOW_MS,
  }
  const keysOf = (payer: string | undefined, account: string | undefined): string[] => {
    const keys = payer ? [`payer-failures:${context.network}:${identity(payer)}`] : []
    if (account) keys.push(`payer-failures:${identity(account)}`)
    return keys
  }
  return {
    /** The refusal of a payer past its failure budget, or `undefined`. */
    async suspension(payer: string | undefined, account: string | undefined): Promise<SettleResponse | undefined> {
      if (!budget) return undefined
      // Read together: each is a round trip on a store with a server.
      const counts = await Promise.all(keysOf(payer, account).map((key) => boundedStoreCall(() => store.readFields(key), bound(), 'reading the payer\'s failures')))
      for (const { failures = 0 } of counts) {
        if (failures >= budget.maxFailures) {
          return settleFailure(
            context,
            REJECTION.payerSuspended,
            `${failures} settlements of this payer were refused or reverted by the chain after passing verify; it is refused for up to ${Math.round(budget.windowMs / 1000)} s after the last one`,
            payer,
          )
        }
      }
      return undefined
    },
    /** Counts a settlement the chain refused after it passed verify against the payer (best effort). */
    async count(result: SettleResponse, payer: string | undefined, account: string | undefined): Promise<void> {
      if (!budget || result.success || isPendingSettlement(result.errorReason) || result.errorReason?.endsWith('transaction_expired')) return
      await Promise.all(
        keysOf(payer, account).map((key) =>
          boundedStoreCall(() => store.incrementFields(key, { failures: 1 }, { ttlMs: budget.windowMs }), storeTimeoutMs, 'counting the payer\'s failure').catch(() => undefined),
        ),
      )
    },
  }
}
