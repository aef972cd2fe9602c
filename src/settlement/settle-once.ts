import type { BroadcastRecord, PaymentContext, SchemeAdapter, SettleReservation } from '../core/adapter.js'
import { withDeadline } from '../core/deadline.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { REJECTION } from '../errors/reasons.js'
import type { SettleResponse, VerifyResponse } from '../schemas/messages.js'
import type { Store } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'
import { paymentFingerprint } from './payment-fingerprint.js'
import { decodeSettlementRecord, type SettlementRecord } from './settlement-record.js'
import { settleFailure, settlementPending } from './settle-answers.js'

/** Tuning of at-most-once settlement. */
export interface SettlementOptions {
  /** How long a settled or failed payment is remembered. @default 7 days */
  recordTtlMs?: number
  /** How often a call waiting for another call's settlement looks again. @default 25 */
  pollIntervalMs?: number
  /**
   * Longest wait for one store call; the settle's remaining budget bounds it
   * too. A store that fails or does not answer in time makes a settle that
   * has sent nothing answer the fault `store_unavailable` (503), and one that
   * has sent its transaction answer with the transaction id. @default 5_000
   */
  storeTimeoutMs?: number
}

interface SettleOnceInput {
  adapter: SchemeAdapter
  context: PaymentContext
  store: Store
  /** Time budget of the whole settle call, in ms. */
  budgetMs: number
  options: SettlementOptions
  /** Runs the adapter's verify (with the before-hooks) so a bad payment is never claimed. */
  verify: () => Promise<VerifyResponse>
  /**
   * Takes a signer slot before a new payment is verified and claimed; throws
   * `signer_busy` when none is free. Not asked for payments that already have
   * a record (they are answered or waited for, never sent again).
   */
  reserve?: () => SettleReservation
}

const DAY_MS = 86_400_000

/**
 * Settles a payment at most once, also across processes sharing the store:
 *
 * 1. A payment with a record is answered from it: a settled payment with
 *    `duplicate_settlement` and its transaction, a failed one with its
 *    transaction; a broadcast whose owner is gone is resumed (by one caller,
 *    under an atomic resume lock), one still owned is waited for. A record
 *    written by a different payment that shares the key (see
 *    payment-fingerprint.ts) is never answered as this payment's.
 * 2. Otherwise it is verified, then claimed with an atomic set-if-absent. The
 *    loser of a race waits for the winner, then gets `duplicate_settlement`
 *    with the winner's transaction.
 * 3. The winner's adapter records the transaction id before sending it, so no
 *    crash or timeout after that point loses it.
 *
 * So exactly one call per payment answers `success: true`: the one that saw
 * it confirmed. A resource server serves once per payment, however many
 * times a client replays the payment header at once.
 *
 * Every store call is bounded by `storeTimeoutMs` and the remaining budget. A
 * store outage before the journal write is a `store_unavailable` fault and
 * nothing is sent; after it, the answer keeps the transaction id.
 */
export async function settleOnce(input: SettleOnceInput): Promise<SettleResponse> {
  const { adapter, context, store, budgetMs, options } = input
  const key = adapter.settlementKey(context)
  const deadline = Date.now() + budgetMs
  const pollMs = options.pollIntervalMs ?? 25
  const recordTtlMs = options.recordTtlMs ?? 7 * DAY_MS
  const lease = () => Date.now() + budgetMs
  const storeTimeoutMs = options.storeTimeoutMs ?? 5_000
  // A call past the deadline still gets 1 ms: it then fails as unavailable instead of never being tried.
  const bound = () => Math.min(storeTimeoutMs, deadline - Date.now())

  if (key === undefined) {
    // No identity means the payload is malformed: verify says why.
    const verdict = await input.verify()
    return settleFailure(context, verdict.invalidReason ?? REJECTION.invalidPayload, verdict.invalidMessage, verdict.payer)
  }
  const storeKey = `settlement:${adapter.scheme}:${key}`
  const fingerprint = await paymentFingerprint(context)
  const write = (record: SettlementRecord, ttlMs: number, boundMs = bound()) =>
    boundedStoreCall(() => store.set(storeKey, JSON.stringify({ ...record, fingerprint }), { ttlMs }), boundMs, `recording a ${record.state} settlement`)
  const read = async () => decodeSettlementRecord(await boundedStoreCall(() => store.get(storeKey), bound(), 'reading the settlement record'))
  const claim = () =>
    boundedStoreCall(
      () => store.set(storeKey, JSON.stringify({ state: 'claimed', leaseUntil: lease(), fingerprint }), { ifAbsent: true, ttlMs: budgetMs * 2 }),
      bound(),
      'claiming the payment',
    )
  // Best effort: a claim left behind expires after twice the budget.
  const release = (boundMs = bound()) => boundedStoreCall(() => store.delete(storeKey), boundMs, 'releasing the claim').catch(() => undefined)
  // Only the caller holding this lock resumes an orphaned broadcast; it expires with the budget.
  const resumeLockKey = `${storeKey}:resume`
  const lockResume = () =>
    boundedStoreCall(() => store.set(resumeLockKey, '1', { ifAbsent: true, ttlMs: budgetMs }), bound(), 'locking the resume')
  const unlockResume = () => boundedStoreCall(() => store.delete(resumeLockKey), storeTimeoutMs, 'unlocking the resume').catch(() => undefined)

  let verified: VerifyResponse | undefined
  let reservation: SettleReservation | undefined
  try {
    return await claimAndSettle()
  } finally {
    reservation?.release()
  }

  async function claimAndSettle(): Promise<SettleResponse> {
    // The transaction of another call's broadcast, once seen: a store failing later still answers it.
    let seenTransaction: string | undefined
    for (;;) {
      let record: SettlementRecord | undefined
      try {
        record = await read()
      } catch (error) {
        if (seenTransaction) return pending(seenTransaction, undefined)
        throw error
      }
      if (record) {
        if (record.state === 'broadcast') seenTransaction = record.transaction
        // Someone else owns this payment: no signer slot is needed to wait for or resume it.
        reservation?.release()
        reservation = undefined
        const answer = await answerFromRecord(record)
        if (answer) return answer
        if (Date.now() >= deadline) {
          const transaction = record.state === 'broadcast' ? record.transaction : ''
          return settleFailure(context, REJECTION.settlementInProgress, 'another call is settling this payment', undefined, transaction)
        }
        await sleep(pollMs)
        continue
      }

      // Before any work on a new payment: a saturated signer set answers signer_busy, nothing claimed.
      reservation ??= input.reserve?.()
      if (!verified) {
        verified = await input.verify()
        if (!verified.isValid) {
          // A racing call may have settled it meanwhile (the nonce is then "used"): prefer its answer.
          if (await read()) continue
          return settleFailure(context, verified.invalidReason ?? REJECTION.invalidPayload, verified.invalidMessage, verified.payer)
        }
      }
      // A claim that fails or times out counts as not taken: nothing is sent, the caller gets store_unavailable.
      if (await claim()) return settleClaimed(verified.payer)
    }
  }

  /** Answers from a record, or `undefined` to wait for its owner. */
  async function answerFromRecord(record: SettlementRecord): Promise<SettleResponse | undefined> {
    if (record.fingerprint !== undefined && record.fingerprint !== fingerprint) {
      return settleFailure(context, REJECTION.duplicateSettlement, 'this authorization was already used for a different payment', undefined)
    }
    switch (record.state) {
      case 'settled':
        // Already confirmed for an earlier call: the payment buys one answer, not one per replay.
        return settleFailure(
          context,
          REJECTION.duplicateSettlement,
          'this payment was already settled by an earlier call; transaction is its settlement',
          record.payer,
          record.transaction,
        )
      case 'failed':
        return settleFailure(context, record.errorReason, record.errorMessage, record.payer, record.transaction)
      case 'claimed':
        return undefined
      case 'broadcast': {
        if (record.leaseUntil > Date.now()) return undefined
        // One caller resumes (the lock is an atomic set-if-absent); the others wait for its
        // outcome. A store that cannot lock or take the lease answers the known transaction.
        try {
          if (!(await lockResume())) return undefined
          await write({ ...record, leaseUntil: lease() }, recordTtlMs)
        } catch {
          return pending(record.transaction, undefined)
        }
        try {
          return await finishSafely(await resumeSafely(record), record)
        } finally {
          void unlockResume()
        }
      }
    }
  }

  async function settleClaimed(payer: string | undefined): Promise<SettleResponse> {
    let sent: BroadcastRecord | undefined
    let journaling: Promise<void> | undefined
    // Why the journal could not be written: the adapter then sent nothing, and this is the answer.
    let journalFault: unknown
    // Set once this call has given up (time budget spent): the adapter may still be
    // running, but it must not send anything any more.
    let abandoned = false
    const work = adapter.settle(context, {
      async broadcasting(record) {
        if (abandoned) throw new FacilitatorError('timeout', 'the settle ran out of its time budget before sending; nothing was sent')
        const writing = write({ state: 'broadcast', ...record, leaseUntil: lease() }, recordTtlMs).then(
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
    })
    try {
      // A hung RPC inside the adapter must not hold the caller past the budget.
      const result = await withDeadline(work, context.signal)
      if (!sent) {
        // Nothing left the process: free the claim so the payer may retry.
        await release()
        return result
      }
      // Awaited here so that a failing store write still answers with the transaction id.
      return await finishSafely(result, sent)
    } catch (error) {
      abandoned = true
      // A journal write in flight decides whether the transaction may be out (it is bounded, so this wait is too).
      if (!sent && journaling) await (journaling as Promise<void>).catch(() => undefined)
      // The budget may be spent: this bookkeeping runs behind the answer, with its own bound.
      if (!sent) {
        void release(storeTimeoutMs)
        throw journalFault ?? error
      }
      // The transaction may be on its way: keep its id and let a later call resume it.
      void write({ state: 'broadcast', ...sent, leaseUntil: 0 }, recordTtlMs, storeTimeoutMs).catch(() => undefined)
      return pending(sent.transaction, payer)
    }
  }

  /** `finish`, but a store failure answers the outcome (with its transaction) instead of throwing it away. */
  async function finishSafely(result: SettleResponse, sent: BroadcastRecord): Promise<SettleResponse> {
    try {
      return await finish(result, sent)
    } catch {
      return result.success ? { ...result, transaction: result.transaction || sent.transaction } : pending(sent.transaction, result.payer)
    }
  }

  async function resumeSafely(record: BroadcastRecord): Promise<SettleResponse> {
    try {
      return await adapter.resume(context, record)
    } catch {
      return pending(record.transaction, undefined)
    }
  }

  /** Stores the outcome of a broadcast transaction and returns the answer. */
  async function finish(result: SettleResponse, sent: BroadcastRecord): Promise<SettleResponse> {
    const transaction = result.transaction || sent.transaction
    if (result.success) {
      await write({ state: 'settled', transaction, payer: result.payer }, recordTtlMs)
    } else if (result.errorReason === REJECTION.settlementPending) {
      await write({ state: 'broadcast', ...sent, leaseUntil: 0 }, recordTtlMs)
    } else {
      await write(
        { state: 'failed', transaction, errorReason: result.errorReason ?? REJECTION.transactionFailed, errorMessage: result.errorMessage, payer: result.payer },
        recordTtlMs,
      )
    }
    return { ...result, transaction }
  }

  function pending(transaction: string, payerHint: string | undefined): SettleResponse {
    return settlementPending(context, transaction, payerHint ?? verified?.payer)
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
