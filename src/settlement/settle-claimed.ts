import type { BroadcastRecord } from '../core/adapter.js'
import { withDeadline } from '../core/deadline.js'
import { settleFailure } from '../core/settle-answers.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { isPendingSettlement, REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'
import { boundedStoreCall } from './bounded-store-call.js'
import { indexInFlight, inFlightMinute } from './in-flight.js'
import { SENDER_SLOT_TTL_MS, slotKey } from './sender-slots.js'
import { accountNow, answerAs, closeSpend, holdSpend, pendingAnswer, sleep, verifyNow, type SettleCall } from './settle-call.js'
import { journalRecord, leaseFromNow, releaseClaim, writeRecord } from './settle-record-writes.js'
import { schemeAnswerFields } from './settlement-record.js'

// How long a payment the holds refused waits before each fresh verify (see settleClaimed).
const HOLD_RETRY_WAITS_MS = [50, 200, 800]

/**
 * Settles the payment this call holds the claim of, after a verify of this call that answered
 * valid: holds its spend against the payer's balance, has the adapter send it (journaling the
 * transaction before it leaves), and records the outcome.
 */
export async function settleClaimed(call: SettleCall, payer: string | undefined): Promise<SettleResponse> {
  const { context, deadline, storeTimeoutMs, recordTtlMs, keeper } = call
  call.spend = call.verdict?.spend
  let refusal: SettleResponse | undefined
  try {
    refusal = await holdSpend(call, payer)
    let invalid = false
    const verifyAndHold = async (): Promise<SettleResponse | undefined> => {
      const again = await verifyNow(call)
      if (!again.response.isValid) {
        invalid = true
        return settleFailure(context, again.response.invalidReason ?? REJECTION.invalidPayload, again.response.invalidMessage, again.response.payer)
      }
      call.spend = again.spend
      return holdSpend(call, payer)
    }
    // A floor (no balance read) refused for anything else held on the account, such as the hold of the
    // payer's previous settlement closed in the millisecond this verify began, reads the balance at once.
    if (refusal && call.spend?.floor && deadline - Date.now() >= storeTimeoutMs) refusal = await verifyAndHold()
    // A settlement mined but not yet seen confirmed (its hold still open), or seen after this
    // verify began, counts against a balance that may already show it: near the edge of a
    // balance that double count refuses a payment that fits. So a refused payment waits a
    // little for the settlements in flight to finish and is verified again (a new balance)
    // before the refusal stands. A payment the balance really cannot cover then usually fails
    // that verify itself, once the others have landed.
    for (const waitMs of HOLD_RETRY_WAITS_MS) {
      if (invalid || !refusal || !call.spend || deadline - Date.now() < waitMs + storeTimeoutMs) break
      await sleep(waitMs)
      refusal = await verifyAndHold()
    }
  } catch (error) {
    await releaseClaim(call)
    throw error
  }
  if (refusal) {
    await releaseClaim(call)
    return answerAs(call, 'refused', refusal)
  }
  let sent: BroadcastRecord | undefined
  let journaling: Promise<void> | undefined
  // Why the journal could not be written: the adapter then sent nothing, and this is the answer.
  let journalFault: unknown
  // Set once this call has given up (time budget spent): the adapter may still be
  // running, but it must not send anything any more.
  let abandoned = false
  // Every path to here passed a verify of this call that answered valid.
  const work = call.adapter.settle(context, call.verdict!.payment, {
    async broadcasting(record) {
      if (abandoned) throw new FacilitatorError('timeout', 'the settle ran out of its time budget before sending; nothing was sent')
      // A call that lost its claim (it stalled past its lease and another call took over) sends nothing.
      if (!(await keeper.stillOwned())) throw new FacilitatorError('timeout', 'this call lost its claim on the payment to another call while stalled; nothing was sent')
      call.journaledMinute = inFlightMinute(Date.now())
      const broadcast = journalRecord(call, record, leaseFromNow(call))
      keeper.hold(broadcast, recordTtlMs)
      // The sender's sequence number points at this record (see journaledTransactions), and the minute's
      // in-flight index names it: both written beside the journal, not after it, and best effort (without
      // the slot a restart re-checks and sends anew; without the index only a caller's retry finishes it).
      const slot = record.slot
      if (slot) void boundedStoreCall(() => call.store.set(slotKey(slot), call.storeKey, { ttlMs: Math.min(recordTtlMs, SENDER_SLOT_TTL_MS) }), call.bound(), 'indexing the sender slot').catch(() => undefined)
      void indexInFlight(call.store, call.journaledMinute, call.storeKey, 1, call.bound())
      const writing = keeper.serial(() => writeRecord(call, broadcast, recordTtlMs)).then(
        () => {
          sent = record
        },
        (error: unknown) => {
          journalFault = error
          throw error
        },
      )
      journaling = writing
      await writing
    },
  }, call.reservation)
  try {
    // A hung RPC inside the adapter must not hold the caller past the budget.
    const result = await withDeadline(work, context.signal)
    if (!sent && result.success) {
      // Settled with nothing to send (an upto payment whose usage is zero): the claim stays, as a
      // settlement, so the same authorization is never charged later with another amount.
      closeSpend(call, false)
      keeper.letGo()
      await keeper.serial(() => writeRecord(call, { state: 'settled', transaction: '', payer: result.payer, answer: schemeAnswerFields(result) }, recordTtlMs)).catch(() => undefined)
      return answerAs(call, 'sent', result)
    }
    if (!sent) {
      // Nothing left the process: free the claim so the payer may retry.
      closeSpend(call, false)
      await releaseClaim(call)
      return answerAs(call, 'refused', result)
    }
    // A pending transaction may still land: its hold stays open until it expires.
    if (!isPendingSettlement(result.errorReason)) closeSpend(call, result.success)
    // Awaited here so that a failing store write still answers with the transaction id.
    return answerAs(call, 'sent', await finishSafely(call, result, sent))
  } catch (error) {
    abandoned = true
    // A journal write in flight decides whether the transaction may be out (it is bounded, so this wait is too).
    if (!sent && journaling) await (journaling as Promise<void>).catch(() => undefined)
    // The budget may be spent: this bookkeeping runs behind the answer, with its own bound.
    if (!sent) {
      closeSpend(call, false)
      void releaseClaim(call, storeTimeoutMs)
      throw journalFault ?? error
    }
    // The transaction may be on its way: keep its id and let a later call resume it.
    keeper.letGo()
    const left = sent
    void keeper.serial(() => writeRecord(call, journalRecord(call, left, 0), recordTtlMs, storeTimeoutMs)).catch(() => undefined)
    return answerAs(call, 'sent', pendingAnswer(call, sent.transaction, payer))
  }
}

/** `finish`, but a store failure answers the outcome (with its transaction) instead of throwing it away. */
export async function finishSafely(call: SettleCall, result: SettleResponse, sent: BroadcastRecord): Promise<SettleResponse> {
  try {
    return await finish(call, result, sent)
  } catch {
    return result.success ? { ...result, transaction: result.transaction || sent.transaction } : pendingAnswer(call, sent.transaction, result.payer)
  }
}

/** Stores the outcome of a broadcast transaction and returns the answer. */
async function finish(call: SettleCall, result: SettleResponse, sent: BroadcastRecord): Promise<SettleResponse> {
  const { keeper, recordTtlMs } = call
  const transaction = result.transaction || sent.transaction
  keeper.letGo()
  if (result.errorReason === REJECTION.settlementPending) {
    await keeper.serial(() => writeRecord(call, journalRecord(call, sent, 0), recordTtlMs))
    return { ...result, transaction }
  }
  if (result.success) {
    await keeper.serial(() => writeRecord(call, { state: 'settled', transaction, payer: result.payer, answer: schemeAnswerFields(result) }, recordTtlMs))
  } else {
    void call.failures.count(result, result.payer ?? call.verdict?.response.payer, accountNow(call))
    await keeper.serial(() =>
      writeRecord(
        call,
        { state: 'failed', transaction, errorReason: result.errorReason ?? REJECTION.transactionFailed, errorMessage: result.errorMessage, payer: result.payer },
        recordTtlMs,
      ),
    )
  }
  // The outcome is recorded: the in-flight index no longer names it.
  if (call.journaledMinute !== undefined) void indexInFlight(call.store, call.journaledMinute, call.storeKey, -1, call.storeTimeoutMs)
  return { ...result, transaction }
}
