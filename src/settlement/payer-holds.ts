import type { PayerSpend, PaymentContext } from '../core/adapter.js'
import { settleFailure } from '../core/settle-answers.js'
import { REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'
import type { SettlementStore } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'
import { identity } from './identity.js'

interface PayerHoldsInput {
  store: SettlementStore
  context: PaymentContext
  /** The settlement record's key: the hold's id within the account's holds. */
  claimKey: string
  budgetMs: number
  bound(): number
  storeTimeoutMs: number
}

const holdKey = (account: string) => `hold:${identity(account)}`

/** Holds of one settle's spend against its payer's balance, shared through the store. */
export function payerHolds(input: PayerHoldsInput) {
  const { store, context, claimKey, budgetMs, bound, storeTimeoutMs } = input
  return {
    /**
     * Holds the payment's amount against the balance its verify read (at `verifiedSince`), so that
     * settlements racing from one payer never send more than it holds: the chain would refuse the rest
     * at the facilitator's cost. Answers the refusal, or `undefined` once held.
     */
    async place(spend: PayerSpend, verifiedSince: number, payer: string | undefined): Promise<SettleResponse | undefined> {
      const placed = await boundedStoreCall(
        () => store.placeHold(holdKey(spend.account), claimKey, { amount: spend.amount.toString(), limit: spend.balance.toString(), since: Math.min(spend.since ?? verifiedSince, verifiedSince), ttlMs: budgetMs * 2 }),
        bound(),
        'holding the payer\'s balance',
      )
      if (placed) return undefined
      return settleFailure(
        context,
        REJECTION.insufficientFunds,
        `the payer's balance ${spend.balance} does not cover ${spend.amount} besides what its settlements in flight hold; nothing was sent`,
        payer,
      )
    },
    /** Ends the hold: kept closed for a budget when the spend landed (balances read before it do not show it), else dropped. */
    close(spend: PayerSpend | undefined, landed: boolean): void {
      if (!spend) return
      const account = spend.account
      void boundedStoreCall(() => store.closeHold(holdKey(account), claimKey, landed ? { keepMs: budgetMs } : {}), storeTimeoutMs, 'closing the hold').catch(() => undefined)
    },
  }
}
