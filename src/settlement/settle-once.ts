import type { BroadcastRecord, PayerSpend, PaymentContext, SchemeAdapter, SettleReservation, Verdict } from '../core/adapter.js'
import type { SettleOrigin } from '../core/hooks.js'
import { withDeadline } from '../core/deadline.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { isPendingSettlement, REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'
import type { SettlementStore } from '../stores/store.js'
import { boundedStoreCall } from './bounded-store-call.js'
import { paymentFingerprint } from './payment-fingerprint.js'
import { decodeSettlementRecord, recordKey, schemeAnswerFields, type SettlementRecord } from './settlement-record.js'
import { settleFailure, settlementPending } from '../core/settle-answers.js'
import { payerFailures } from './payer-failures.js'
import { payerHolds } from './payer-holds.js'
import { leaseKeeper } from './lease-keeper.js'
import { SENDER_SLOT_TTL_MS, slotKey } from './sender-slots.js'
import { indexInFlight, inFlightMinute } from './in-flight.js'
import type { SettlementOptions } from './settlement-options.js'

interface SettleOnceInput {
  adapter: SchemeAdapter
  context: PaymentContext
  /** The adapter's reading of the payload (`parse`), handed to its verify and resume. */
  payload: unknown
  /** The payment's replay domain (`parse`): its claim and record live under it. */
  key: string
  store: SettlementStore
  /** Time budget of the whole settle call, in ms. */
  budgetMs: number
  options: SettlementOptions
  /** Receives how the answer came about (see `SettleOrigin`), for the after-hooks. */
  trace?: { origin?: SettleOrigin }
}

const DAY_MS = 86_400_000
const DEFAULT_LEASE_MS = 5_000
// Below this a renewal (a store round trip every third of it) would be most of what a store does.
const MIN_LEASE_MS = 300
/** answerFromRecord's word that this call now holds the claim of a caller that is gone. */
const TAKEN_OVER = Symbol('taken over')
/** verifyForClaim's word that a racing call's record appeared while verifying. */
const RACED = Symbol('raced')
// How long a payment the holds refused waits before each fresh verify (see settleClaimed).
const HOLD_RETRY_WAITS_MS = [50, 200, 800]

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
  const { adapter, context, payload, key, store, budgetMs, options } = input
  const deadline = Date.now() + budgetMs
  const pollMs = options.pollIntervalMs ?? 25
  const recordTtlMs = options.recordTtlMs ?? 7 * DAY_MS
  // A retry must be able to take over and still finish within its own budget: at most a third of it.
  const leaseMs = Math.max(Math.min(options.leaseMs ?? DEFAULT_LEASE_MS, budgetMs / 3), MIN_LEASE_MS)
  const lease = () => Date.now() + leaseMs
  const storeTimeoutMs = options.storeTimeoutMs ?? 5_000
  // A call past the deadline still gets 1 ms: it then fails as unavailable instead of never being tried.
  const bound = () => Math.min(storeTimeoutMs, deadline - Date.now())
  // What this payment's transaction charges, where the settle request sets it (`upto`: the usage).
  // A record of another call's broadcast of the same authorization brings its own: a repeat that
  // states another usage is answered with what was sent, never with what it asked.
  let charged = adapter.settleSetsAmount ? context.amount.toString() : undefined
  const as = (origin: SettleOrigin, answer: SettleResponse): SettleResponse => {
    if (input.trace) input.trace.origin = origin
    if (charged !== undefined && (answer.success || answer.errorReason === REJECTION.settlementPending)) return { ...answer, amount: charged }
    return answer
  }

  const storeKey = recordKey(key)
  const fingerprint = await paymentFingerprint(context)
  // This call's id in the records it holds the lease of.
  const owner = randomId()
  const write = (record: SettlementRecord, ttlMs: number, boundMs = bound()) =>
    boundedStoreCall(
      () => store.set(storeKey, JSON.stringify({ ...(charged === undefined || record.state === 'claimed' ? {} : { amount: charged }), ...record, fingerprint }), { ttlMs }),
      boundMs,
      `recording a ${record.state} settlement`,
    )
  const read = async () => decodeSettlementRecord(await boundedStoreCall(() => store.get(storeKey), bound(), 'reading the settlement record'))
  const claim = async () => {
    const record: SettlementRecord = { state: 'claimed', leaseUntil: lease(), fingerprint, owner }
    const taken = await boundedStoreCall(() => store.set(storeKey, JSON.stringify(record), { ifAbsent: true, ttlMs: budgetMs * 2 }), bound(), 'claiming the payment')
    if (taken) keeper.hold(record, budgetMs * 2)
    return taken
  }
  // Best effort: a claim left behind expires with its lease (taken over) and its record after twice the budget.
  const release = (boundMs = bound()) => {
    keeper.letGo()
    return keeper.serial(() => boundedStoreCall(() => store.delete(storeKey), boundMs, 'releasing the claim')).catch(() => undefined)
  }
  // Only the caller holding this lock takes over an orphaned claim or broadcast; it expires with the budget.
  const resumeLockKey = `${storeKey}:resume`
  const lockResume = () =>
    boundedStoreCall(() => store.set(resumeLockKey, '1', { ifAbsent: true, ttlMs: budgetMs }), bound(), 'locking the resume')
  // What this payment spends, once verified and claimed (held in `holds`).
  let spend: PayerSpend | undefined
  const unlockResume = () => boundedStoreCall(() => store.delete(resumeLockKey), storeTimeoutMs, 'unlocking the resume').catch(() => undefined)
  // The minute whose in-flight index names the broadcast record this call writes or took over.
  let journaledMinute: number | undefined
  // A broadcast record as this call journals it: with the request, so a facilitator can finish it if no caller retries.
  const journal = (sent: BroadcastRecord, leaseUntil: number): SettlementRecord => ({
    state: 'broadcast',
    transaction: sent.transaction,
    ...(sent.raw === undefined ? {} : { raw: sent.raw }),
    ...(sent.slot ? { slot: sent.slot } : {}),
    leaseUntil,
    owner,
    request: { x402Version: context.x402Version, paymentPayload: context.payload, paymentRequirements: context.requirements },
    ...(journaledMinute === undefined ? {} : { minute: journaledMinute }),
  })
  const keeper = leaseKeeper({ leaseMs, owner, read, write })

  const failures = payerFailures({ store, context, budget: options.payerFailures, bound, storeTimeoutMs })
  const holds = payerHolds({ store, context, claimKey: storeKey, budgetMs, bound, storeTimeoutMs })
  // The balance the payment pays from: right after verify (before the claim) the spend is not taken yet, the verdict names it.
  const accountNow = () => (spend ?? verdict?.spend)?.account
  const holdSpend = (payer: string | undefined) => (spend ? holds.place(spend, verifiedSince, payer) : Promise.resolve(undefined))
  const closeSpend = (landed: boolean) => holds.close(spend, landed)

  // The last verify of this call: its answer, and for a valid payment what settle sends.
  let verdict: Verdict<unknown> | undefined
  // When that verify started: the balance it read is at least this old.
  let verifiedSince = 0
  // A signer slot, taken before a new payment is verified and claimed (`signer_busy` when none is
  // free); never for payments that already have a record (answered or waited for, never sent again).
  let reservation: SettleReservation | undefined
  // Settle re-verifies with the adapter only: the before-verify hooks guard /verify.
  const verifyNow = async (): Promise<Verdict<unknown>> => {
    verdict = undefined
    verifiedSince = Date.now()
    verdict = await adapter.verify(context, payload, reservation)
    return verdict
  }
  try {
    return await claimAndSettle()
  } finally {
    keeper.letGo()
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
        if (seenTransaction) return as('recorded', pending(seenTransaction, undefined))
        throw error
      }
      if (record) {
        if (record.state === 'broadcast') seenTransaction = record.transaction
        if (record.fingerprint === fingerprint && record.state !== 'claimed' && record.state !== 'failed' && record.amount !== undefined) charged = record.amount
        // Someone else owns this payment: no signer slot is needed to wait for or resume it.
        reservation?.release()
        reservation = undefined
        const answer = await answerFromRecord(record)
        if (answer === TAKEN_OVER) return settleAnew()
        if (answer) return answer
        if (Date.now() >= deadline) {
          const transaction = record.state === 'broadcast' ? record.transaction : ''
          return as('recorded', settleFailure(context, REJECTION.settlementInProgress, 'another call is settling this payment', undefined, transaction))
        }
        await sleep(pollMs)
        continue
      }

      // Before any work on a new payment: a saturated signer set answers signer_busy, nothing claimed.
      reservation ??= adapter.reserveSettlement?.(context, payload)
      if (!verdict) {
        const refusal = await verifyForClaim()
        if (refusal === RACED) continue
        if (refusal) return refusal
      }
      // A claim that fails or times out counts as not taken: nothing is sent, the caller gets store_unavailable.
      if (await claim()) return settleClaimed(verdict!.response.payer)
    }
  }

  /** Verifies before claiming; answers the refusal, `RACED` when a racing call's record appeared meanwhile, or nothing when valid. */
  async function verifyForClaim(): Promise<SettleResponse | typeof RACED | undefined> {
    const { response } = await verifyNow()
    if (!response.isValid) {
      // A racing call may have settled it meanwhile (the nonce is then "used"): prefer its answer.
      if (await read()) {
        verdict = undefined
        return RACED
      }
      return as('refused', settleFailure(context, response.invalidReason ?? REJECTION.invalidPayload, response.invalidMessage, response.payer))
    }
    return failures.suspension(response.payer, accountNow()).then((suspended) => suspended && as('refused', suspended))
  }

  /**
   * Settles under a claim this call took over (an orphaned claim that sent nothing, or a journaled
   * transaction that never reached the chain): the payment is verified again, so only one still
   * unspent and valid is sent. One that no longer verifies is refused with why, and the claim is
   * freed: nothing of it is on chain, so a later retry is judged afresh (a spent or expired
   * authorization keeps failing verify; a balance topped up passes).
   */
  async function settleAnew(): Promise<SettleResponse> {
    try {
      reservation ??= adapter.reserveSettlement?.(context, payload)
      const { response } = await verifyNow()
      if (!response.isValid) {
        await release()
        return as('refused', settleFailure(context, response.invalidReason ?? REJECTION.invalidPayload, response.invalidMessage, response.payer))
      }
      return await settleClaimed(response.payer)
    } catch (error) {
      // Nothing was sent by this call: the claim is left to expire for a later retry.
      keeper.letGo()
      throw error
    } finally {
      void unlockResume()
    }
  }

  /** Answers from a record, `undefined` to wait for its owner, or `TAKEN_OVER` when this call now holds the claim. */
  async function answerFromRecord(record: SettlementRecord): Promise<SettleResponse | typeof TAKEN_OVER | undefined> {
    const samePayment = record.fingerprint === undefined || record.fingerprint === fingerprint
    if (record.state === 'claimed' || record.state === 'broadcast') {
      if (record.leaseUntil > Date.now()) return undefined
      return takeOver(record, samePayment)
    }
    if (!samePayment) {
      const transaction = record.transaction
      return as(
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
      return as('recorded', { ...record.answer, success: true, transaction: record.transaction, network: context.wireNetwork, ...(record.payer ? { payer: record.payer } : {}) })
    }
    return as('recorded', settleFailure(context, record.errorReason, record.errorMessage, record.payer, record.transaction))
  }

  /**
   * Takes over a claim or broadcast whose caller stopped renewing its lease. One caller does (the
   * lock is an atomic set-if-absent); the others wait for its outcome. A store that cannot lock or
   * write answers the known transaction (a broadcast) or waits (a claim).
   */
  async function takeOver(record: SettlementRecord & { state: 'claimed' | 'broadcast' }, samePayment: boolean): Promise<SettleResponse | typeof TAKEN_OVER | undefined> {
    if (record.state === 'claimed') {
      // Nothing was sent under that claim: whoever comes next settles, after a fresh verify.
      try {
        if (!(await lockResume())) return undefined
        const again = await read()
        if (again?.state !== 'claimed' || again.leaseUntil > Date.now()) {
          void unlockResume()
          return undefined
        }
        const claimed: SettlementRecord = { state: 'claimed', leaseUntil: lease(), fingerprint, owner }
        await write(claimed, budgetMs * 2)
        keeper.hold(claimed, budgetMs * 2)
        return TAKEN_OVER
      } catch {
        void unlockResume()
        return undefined
      }
    }
    if (!samePayment) {
      // Another payment's transaction is out: this one may not land besides it.
      return as('recorded', settleFailure(context, REJECTION.duplicateSettlement, 'a different payment already used this authorization; transaction is its settlement', undefined, record.transaction))
    }
    try {
      if (!(await lockResume())) return undefined
      journaledMinute = record.minute
      const resumed: SettlementRecord = { ...record, leaseUntil: lease(), owner }
      await write(resumed, recordTtlMs)
      keeper.hold(resumed, recordTtlMs)
    } catch {
      return as('recorded', pending(record.transaction, undefined))
    }
    let unlock = true
    try {
      const result = await resumeSafely(record)
      if (result.errorReason === REJECTION.transactionDropped) {
        // The transaction never reached the chain: the payment is checked and sent anew (settleAnew unlocks).
        unlock = false
        return TAKEN_OVER
      }
      return as('resumed', await finishSafely(result, record))
    } finally {
      if (unlock) void unlockResume()
    }
  }

  async function settleClaimed(payer: string | undefined): Promise<SettleResponse> {
    spend = verdict?.spend
    let refusal: SettleResponse | undefined
    try {
      refusal = await holdSpend(payer)
      let invalid = false
      const verifyAndHold = async (): Promise<SettleResponse | undefined> => {
        const again = await verifyNow()
        if (!again.response.isValid) {
          invalid = true
          return settleFailure(context, again.response.invalidReason ?? REJECTION.invalidPayload, again.response.invalidMessage, again.response.payer)
        }
        spend = again.spend
        return holdSpend(payer)
      }
      // A floor (no balance read) refused for anything else held on the account, such as the hold of the
      // payer's previous settlement closed in the millisecond this verify began, reads the balance at once.
      if (refusal && spend?.floor && deadline - Date.now() >= storeTimeoutMs) refusal = await verifyAndHold()
      // A settlement mined but not yet seen confirmed (its hold still open), or seen after this
      // verify began, counts against a balance that may already show it: near the edge of a
      // balance that double count refuses a payment that fits. So a refused payment waits a
      // little for the settlements in flight to finish and is verified again (a new balance)
      // before the refusal stands. A payment the balance really cannot cover then usually fails
      // that verify itself, once the others have landed.
      for (const waitMs of HOLD_RETRY_WAITS_MS) {
        if (invalid || !refusal || !spend || deadline - Date.now() < waitMs + storeTimeoutMs) break
        await sleep(waitMs)
        refusal = await verifyAndHold()
      }
    } catch (error) {
      await release()
      throw error
    }
    if (refusal) {
      await release()
      return as('refused', refusal)
    }
    let sent: BroadcastRecord | undefined
    let journaling: Promise<void> | undefined
    // Why the journal could not be written: the adapter then sent nothing, and this is the answer.
    let journalFault: unknown
    // Set once this call has given up (time budget spent): the adapter may still be
    // running, but it must not send anything any more.
    let abandoned = false
    // Every path to here passed a verify of this call that answered valid.
    const work = adapter.settle(context, verdict!.payment, {
      async broadcasting(record) {
        if (abandoned) throw new FacilitatorError('timeout', 'the settle ran out of its time budget before sending; nothing was sent')
        // A call that lost its claim (it stalled past its lease and another call took over) sends nothing.
        if (!(await keeper.stillOwned())) throw new FacilitatorError('timeout', 'this call lost its claim on the payment to another call while stalled; nothing was sent')
        journaledMinute = inFlightMinute(Date.now())
        const broadcast = journal(record, lease())
        keeper.hold(broadcast, recordTtlMs)
        // The sender's sequence number points at this record (see journaledTransactions), and the minute's
        // in-flight index names it: both written beside the journal, not after it, and best effort (without
        // the slot a restart re-checks and sends anew; without the index only a caller's retry finishes it).
        const slot = record.slot
        if (slot) void boundedStoreCall(() => store.set(slotKey(slot), storeKey, { ttlMs: Math.min(recordTtlMs, SENDER_SLOT_TTL_MS) }), bound(), 'indexing the sender slot').catch(() => undefined)
        void indexInFlight(store, journaledMinute, storeKey, 1, bound())
        const writing = keeper.serial(() => write(broadcast, recordTtlMs)).then(
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
    }, reservation)
    try {
      // A hung RPC inside the adapter must not hold the caller past the budget.
      const result = await withDeadline(work, context.signal)
      if (!sent && result.success) {
        // Settled with nothing to send (an upto payment whose usage is zero): the claim stays, as a
        // settlement, so the same authorization is never charged later with another amount.
        closeSpend(false)
        keeper.letGo()
        await keeper.serial(() => write({ state: 'settled', transaction: '', payer: result.payer, answer: schemeAnswerFields(result) }, recordTtlMs)).catch(() => undefined)
        return as('sent', result)
      }
      if (!sent) {
        // Nothing left the process: free the claim so the payer may retry.
        closeSpend(false)
        await release()
        return as('refused', result)
      }
      // A pending transaction may still land: its hold stays open until it expires.
      if (!isPendingSettlement(result.errorReason)) closeSpend(result.success)
      // Awaited here so that a failing store write still answers with the transaction id.
      return as('sent', await finishSafely(result, sent))
    } catch (error) {
      abandoned = true
      // A journal write in flight decides whether the transaction may be out (it is bounded, so this wait is too).
      if (!sent && journaling) await (journaling as Promise<void>).catch(() => undefined)
      // The budget may be spent: this bookkeeping runs behind the answer, with its own bound.
      if (!sent) {
        closeSpend(false)
        void release(storeTimeoutMs)
        throw journalFault ?? error
      }
      // The transaction may be on its way: keep its id and let a later call resume it.
      keeper.letGo()
      const left = sent
      void keeper.serial(() => write(journal(left, 0), recordTtlMs, storeTimeoutMs)).catch(() => undefined)
      return as('sent', pending(sent.transaction, payer))
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
      return await adapter.resume(context, payload, record)
    } catch {
      return pending(record.transaction, undefined)
    }
  }

  /** Stores the outcome of a broadcast transaction and returns the answer. */
  async function finish(result: SettleResponse, sent: BroadcastRecord): Promise<SettleResponse> {
    const transaction = result.transaction || sent.transaction
    keeper.letGo()
    if (result.errorReason === REJECTION.settlementPending) {
      await keeper.serial(() => write(journal(sent, 0), recordTtlMs))
      return { ...result, transaction }
    }
    if (result.success) {
      await keeper.serial(() => write({ state: 'settled', transaction, payer: result.payer, answer: schemeAnswerFields(result) }, recordTtlMs))
    } else {
      void failures.count(result, result.payer ?? verdict?.response.payer, accountNow())
      await keeper.serial(() =>
        write(
          { state: 'failed', transaction, errorReason: result.errorReason ?? REJECTION.transactionFailed, errorMessage: result.errorMessage, payer: result.payer },
          recordTtlMs,
        ),
      )
    }
    // The outcome is recorded: the in-flight index no longer names it.
    if (journaledMinute !== undefined) void indexInFlight(store, journaledMinute, storeKey, -1, storeTimeoutMs)
    return { ...result, transaction }
  }

  function pending(transaction: string, payerHint: string | undefined): SettleResponse {
    return settlementPending(context, transaction, payerHint ?? verdict?.response.payer)
  }
}


const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const randomId = () => globalThis.crypto.randomUUID()
