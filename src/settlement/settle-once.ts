import type { BroadcastRecord } from '../core/adapter.js'
import { settleFailure } from '../core/settle-answers.js'
import { REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'
import { paymentFingerprint } from './payment-fingerprint.js'
import { accountNow, answerAs, openSettleCall, pendingAnswer, sleep, verifyNow, type SettleCall, type SettleOnceInput } from './settle-call.js'
import { finishSafely, settleClaimed } from './settle-claimed.js'
import { claimPayment, leaseFromNow, lockResume, readRecord, releaseClaim, unlockResume, writeRecord } from './settle-record-writes.js'
import type { SettlementRecord } from './settlement-record.js'

/** answerFromRecord's word that this call now holds the claim of a caller that is gone. */
const TAKEN_OVER = Symbol('taken over')
/** verifyForClaim's word that a racing call's record appeared while verifying. */
const RACED = Symbol('raced')

/**
 * Settles a payment at most once, also across processes sharing the store:
 *
 * 1. A payment with a record is answered from it: a repeat of a settled or
 *    failed payment gets the answer of the call that settled it (`success`
 *    with its transaction, or its failure); a different payment claiming the
 *    same replay domain is refused `duplicate_settlement` naming the
 *    transaction. A claim or broadcast whose caller is gone (its lease not
 *    renewed) is taken over by one caller, under an atomic lock: a broadcast
 *    is resumed, a claim that sent nothing is settled anew; one still owned
 *    is waited for.
 * 2. Otherwise it is verified, then claimed with an atomic set-if-absent. The
 *    loser of a race waits for the winner and gets its answer.
 * 3. The winner's adapter records the transaction id before sending it, so no
 *    crash or timeout after that point loses it; a journaled transaction that
 *    never reached the chain is checked again and sent anew, never given up.
 *
 * So a payment lands at most once, and every call for it learns how it
 * landed. A resource server serves once per payment by verifying before it
 * does the work, as the x402 flow does: a spent payment no longer verifies.
 *
 * Every store call is bounded by `storeTimeoutMs` and the remaining budget. A
 * store outage before the journal write is a `store_unavailable` fault and
 * nothing is sent; after it, the answer keeps the transaction id.
 */
export async function settleOnce(input: SettleOnceInput): Promise<SettleResponse> {
  const deadline = Date.now() + input.budgetMs
  const call = openSettleCall(input, deadline, await paymentFingerprint(input.context))
  try {
    return await claimAndSettle(call)
  } finally {
    call.keeper.letGo()
    call.reservation?.release()
  }
}

async function claimAndSettle(call: SettleCall): Promise<SettleResponse> {
  const { adapter, context, payload } = call
  // The transaction of another call's broadcast, once seen: a store failing later still answers it.
  let seenTransaction: string | undefined
  for (;;) {
    let record: SettlementRecord | undefined
    try {
      record = await readRecord(call)
    } catch (error) {
      if (seenTransaction) return answerAs(call, 'recorded', pendingAnswer(call, seenTransaction, undefined))
      throw error
    }
    if (record) {
      if (record.state === 'broadcast') seenTransaction = record.transaction
      if (record.fingerprint === call.fingerprint && record.state !== 'claimed' && record.state !== 'failed' && record.amount !== undefined) call.charged = record.amount
      // Someone else owns this payment: no signer slot is needed to wait for or resume it.
      call.reservation?.release()
      call.reservation = undefined
      const answer = await answerFromRecord(call, record)
      if (answer === TAKEN_OVER) return settleAnew(call)
      if (answer) return answer
      if (Date.now() >= call.deadline) {
        const transaction = record.state === 'broadcast' ? record.transaction : ''
        return answerAs(call, 'recorded', settleFailure(context, REJECTION.settlementInProgress, 'another call is settling this payment', undefined, transaction))
      }
      await sleep(call.pollMs)
      continue
    }

    // Before any work on a new payment: a saturated signer set answers signer_busy, nothing claimed.
    call.reservation ??= adapter.reserveSettlement?.(context, payload)
    if (!call.verdict) {
      const refusal = await verifyForClaim(call)
      if (refusal === RACED) continue
      if (refusal) return refusal
    }
    // A claim that fails or times out counts as not taken: nothing is sent, the caller gets store_unavailable.
    if (await claimPayment(call)) return settleClaimed(call, call.verdict!.response.payer)
  }
}

/** Verifies before claiming; answers the refusal, `RACED` when a racing call's record appeared meanwhile, or nothing when valid. */
async function verifyForClaim(call: SettleCall): Promise<SettleResponse | typeof RACED | undefined> {
  const { response } = await verifyNow(call)
  if (!response.isValid) {
    // A racing call may have settled it meanwhile (the nonce is then "used"): prefer its answer.
    if (await readRecord(call)) {
      call.verdict = undefined
      return RACED
    }
    return answerAs(call, 'refused', settleFailure(call.context, response.invalidReason ?? REJECTION.invalidPayload, response.invalidMessage, response.payer))
  }
  return call.failures.suspension(response.payer, accountNow(call)).then((suspended) => suspended && answerAs(call, 'refused', suspended))
}

/**
 * Settles under a claim this call took over (an orphaned claim that sent nothing, or a journaled
 * transaction that never reached the chain): the payment is verified again, so only one still
 * unspent and valid is sent. One that no longer verifies is refused with why, and the claim is
 * freed: nothing of it is on chain, so a later retry is judged afresh (a spent or expired
 * authorization keeps failing verify; a balance topped up passes).
 */
async function settleAnew(call: SettleCall): Promise<SettleResponse> {
  try {
    call.reservation ??= call.adapter.reserveSettlement?.(call.context, call.payload)
    const { response } = await verifyNow(call)
    if (!response.isValid) {
      await releaseClaim(call)
      return answerAs(call, 'refused', settleFailure(call.context, response.invalidReason ?? REJECTION.invalidPayload, response.invalidMessage, response.payer))
    }
    return await settleClaimed(call, response.payer)
  } catch (error) {
    // Nothing was sent by this call: the claim is left to expire for a later retry.
    call.keeper.letGo()
    throw error
  } finally {
    void unlockResume(call)
  }
}

/** Answers from a record, `undefined` to wait for its owner, or `TAKEN_OVER` when this call now holds the claim. */
async function answerFromRecord(call: SettleCall, record: SettlementRecord): Promise<SettleResponse | typeof TAKEN_OVER | undefined> {
  const { context } = call
  const samePayment = record.fingerprint === undefined || record.fingerprint === call.fingerprint
  if (record.state === 'claimed' || record.state === 'broadcast') {
    if (record.leaseUntil > Date.now()) return undefined
    return takeOver(call, record, samePayment)
  }
  if (!samePayment) {
    const transaction = record.transaction
    return answerAs(
      call,
      'recorded',
      settleFailure(
        context,
        REJECTION.duplicateSettlement,
        transaction
          ? 'a different payment already used this authorization; transaction is its settlement'
          : 'a different payment already used this authorization',
        undefined,
        transaction,
      ),
    )
  }
  if (record.state === 'settled') {
    // The same payment again (a retry after a lost answer): the answer of the call that settled it.
    return answerAs(call, 'recorded', { ...record.answer, success: true, transaction: record.transaction, network: context.wireNetwork, ...(record.payer ? { payer: record.payer } : {}) })
  }
  return answerAs(call, 'recorded', settleFailure(context, record.errorReason, record.errorMessage, record.payer, record.transaction))
}

/**
 * Takes over a claim or broadcast whose caller stopped renewing its lease. One caller does (the
 * lock is an atomic set-if-absent); the others wait for its outcome. A store that cannot lock or
 * write answers the known transaction (a broadcast) or waits (a claim).
 */
async function takeOver(call: SettleCall, record: SettlementRecord & { state: 'claimed' | 'broadcast' }, samePayment: boolean): Promise<SettleResponse | typeof TAKEN_OVER | undefined> {
  const { budgetMs, recordTtlMs, keeper } = call
  if (record.state === 'claimed') {
    // Nothing was sent under that claim: whoever comes next settles, after a fresh verify.
    try {
      if (!(await lockResume(call))) return undefined
      const again = await readRecord(call)
      if (again?.state !== 'claimed' || again.leaseUntil > Date.now()) {
        void unlockResume(call)
        return undefined
      }
      const claimed: SettlementRecord = { state: 'claimed', leaseUntil: leaseFromNow(call), fingerprint: call.fingerprint, owner: call.owner }
      await writeRecord(call, claimed, budgetMs * 2)
      keeper.hold(claimed, budgetMs * 2)
      return TAKEN_OVER
    } catch {
      void unlockResume(call)
      return undefined
    }
  }
  if (!samePayment) {
    // Another payment's transaction is out: this one may not land besides it.
    return answerAs(call, 'recorded', settleFailure(call.context, REJECTION.duplicateSettlement, 'a different payment already used this authorization; transaction is its settlement', undefined, record.transaction))
  }
  try {
    if (!(await lockResume(call))) return undefined
    call.journaledMinute = record.minute
    const resumed: SettlementRecord = { ...record, leaseUntil: leaseFromNow(call), owner: call.owner }
    await writeRecord(call, resumed, recordTtlMs)
    keeper.hold(resumed, recordTtlMs)
  } catch {
    return answerAs(call, 'recorded', pendingAnswer(call, record.transaction, undefined))
  }
  let unlock = true
  try {
    const result = await resumeSafely(call, record)
    if (result.errorReason === REJECTION.transactionDropped) {
      // The transaction never reached the chain: the payment is checked and sent anew (settleAnew unlocks).
      unlock = false
      return TAKEN_OVER
    }
    return answerAs(call, 'resumed', await finishSafely(call, result, record))
  } finally {
    if (unlock) void unlockResume(call)
  }
}

/** The adapter's `resume`, but a throw answers the transaction as pending. */
async function resumeSafely(call: SettleCall, record: BroadcastRecord): Promise<SettleResponse> {
  try {
    return await call.adapter.resume(call.context, call.payload, record)
  } catch {
    return pendingAnswer(call, record.transaction, undefined)
  }
}
