import { resourceId } from '../catalog/resource-name.js'
import { chargedAmount, type FacilitatorHooks, type SettleEvent } from '../core/hooks.js'
import { isPendingSettlement, REJECTION } from '../errors/reasons.js'
import type { LedgerStatus, NewLedgerEntry, SettlementLedger } from './settlement-ledger.js'

/** Options of the ledger recorder. */
export interface LedgerRecorderOptions {
  ledger: SettlementLedger
  /** Clock in milliseconds. @default Date.now */
  now?: () => number
  /**
   * How long the row of a success answered from the record waits before its append: the call that
   * settled it, when alive, appends its own row first (with its cost and `resumed` flag), and this one
   * is skipped. A process that exits within it loses that row (a later retry writes it). @default 1_000
   */
  recordedDelayMs?: number
}

// Messages are ours (never secrets), but a row should stay a row.
const MAX_MESSAGE = 500

/**
 * An after-settle hook that appends every settle outcome to a ledger: settled,
 * failed (refused before sending, failed on chain, or a fault, with its code) and
 * pending, and marks the rows of settlements this call resumed. Requests that never
 * reached an adapter (an unsupported network, a malformed payment) are not rows.
 *
 * A success answered from another call's record (a retry of a settled payment, a wait
 * for a racing call) is appended too: the call that settled it may have died between
 * writing its record and its own append, and the retry writes the row it lost. The
 * ledger keeps one settled row per transaction, so the first append stands and the
 * others are skipped; a row from the record waits `recordedDelayMs` first, so that a
 * live settling call's own row (with its cost) is the one kept. Such a row is the
 * retry's view: the same payment (amount, payer, payTo, asset, resource), `resumed:
 * false`, its own times, and `cost: null` (the retry sent nothing and does not know what
 * the settling call paid). Failures answered from a record (`duplicate_settlement`, a
 * failed payment asked again) stay no rows, as does a settlement without a transaction
 * (an `upto` usage of zero: nothing to key its one row on).
 *
 * Like every after-hook it runs after the answer, never delaying it; a ledger that
 * fails reports to `onError`.
 *
 * @example
 * // partial
 * const store = createSqliteStore({ path: './data/facilitator.sqlite' })
 * const facilitator = createFacilitator({ schemes, store, hooks: [createLedgerRecorder({ ledger: store.ledger })] })
 */
export function createLedgerRecorder(options: LedgerRecorderOptions): FacilitatorHooks {
  const { ledger } = options
  const now = options.now ?? Date.now
  const recordedDelayMs = options.recordedDelayMs ?? 1_000
  return {
    async afterSettle(event: SettleEvent) {
      const entry = ledgerEntryOf(event, now())
      if (!entry) return
      if (event.origin === 'recorded' && recordedDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, recordedDelayMs))
      await ledger.append(entry)
    },
  }
}

/** The ledger row of a settle event, or `undefined` when it is not one (see `createLedgerRecorder`). */
export function ledgerEntryOf(event: SettleEvent, recordedAt: number): NewLedgerEntry | undefined {
  const { context, result } = event
  if (!context) return undefined
  // From the record: only a settlement with its transaction (the ledger's key for one row per settlement).
  if (event.origin === 'recorded' && !(result.success && result.transaction)) return undefined
  // Events from callers that do not say their origin: a duplicate answer is still not a row.
  if (event.origin === undefined && !event.fault && result.errorReason === REJECTION.duplicateSettlement) return undefined
  const status: LedgerStatus = event.fault ? 'failed' : result.success ? 'settled' : isPendingSettlement(result.errorReason) ? 'pending' : 'failed'
  const message = status === 'settled' ? undefined : result.errorMessage
  return {
    recordedAt,
    startedAt: Math.round(recordedAt - event.durationMs),
    status,
    resumed: event.origin === 'resumed',
    errorReason: status === 'settled' ? null : (event.fault?.code ?? result.errorReason ?? null),
    errorMessage: message === undefined ? null : message.slice(0, MAX_MESSAGE),
    network: context.network,
    scheme: context.scheme,
    x402Version: context.x402Version,
    payer: result.payer ?? null,
    payTo: context.payTo,
    asset: context.asset,
    amount: chargedAmount(result, context).toString(),
    transaction: result.transaction || null,
    // Origin and path only: a query string may carry a customer's token.
    resourceUrl: (context.resource?.url && resourceId(context.resource.url)) || null,
    // What this call's transactions cost, once the chain showed their outcome (see PaymentContext.cost).
    cost: typeof context.cost === 'bigint' ? context.cost.toString() : null,
  }
}
