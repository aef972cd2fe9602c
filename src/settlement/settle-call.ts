import type { PayerSpend, PaymentContext, SchemeAdapter, SettleReservation, Verdict } from '../core/adapter.js'
import type { SettleOrigin } from '../core/hooks.js'
import { settlementPending } from '../core/settle-answers.js'
import { REJECTION } from '../errors/reasons.js'
import type { SettleResponse } from '../schemas/messages.js'
import type { SettlementStore } from '../stores/store.js'
import { leaseKeeper } from './lease-keeper.js'
import { payerFailures } from './payer-failures.js'
import { payerHolds } from './payer-holds.js'
import { readRecord, writeRecord } from './settle-record-writes.js'
import type { SettlementOptions } from './settlement-options.js'
import { recordKey } from './settlement-record.js'

export interface SettleOnceInput {
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

/**
 * The state of one settle call, one object the steps of settle-once.ts, settle-claimed.ts and
 * settle-record-writes.ts take: they are plain functions of it, so a settle allocates this
 * object instead of a closure per step.
 */
export interface SettleCall {
  readonly adapter: SchemeAdapter
  readonly context: PaymentContext
  readonly payload: unknown
  readonly store: SettlementStore
  readonly budgetMs: number
  /** When the settle's budget runs out (epoch ms). */
  readonly deadline: number
  readonly pollMs: number
  readonly recordTtlMs: number
  readonly leaseMs: number
  readonly storeTimeoutMs: number
  readonly trace: { origin?: SettleOrigin } | undefined
  /** Where the payment's settlement record lives. */
  readonly storeKey: string
  /** Only the caller holding this lock takes over an orphaned claim or broadcast; it expires with the budget. */
  readonly resumeLockKey: string
  readonly fingerprint: string
  /** This call's id in the records it holds the lease of. */
  readonly owner: string
  /** A store call's bound: the store timeout within the remaining budget. */
  readonly bound: () => number
  readonly keeper: ReturnType<typeof leaseKeeper>
  readonly failures: ReturnType<typeof payerFailures>
  readonly holds: ReturnType<typeof payerHolds>
  /**
   * What this payment's transaction charges, where the settle request sets it (`upto`: the usage).
   * A record of another call's broadcast of the same authorization brings its own: a repeat that
   * states another usage is answered with what was sent, never with what it asked.
   */
  charged: string | undefined
  /** What this payment spends, once verified and claimed (held in `holds`). */
  spend: PayerSpend | undefined
  /** The minute whose in-flight index names the broadcast record this call writes or took over. */
  journaledMinute: number | undefined
  /** The last verify of this call: its answer, and for a valid payment what settle sends. */
  verdict: Verdict<unknown> | undefined
  /** When that verify started: the balance it read is at least this old. */
  verifiedSince: number
  /**
   * A signer slot, taken before a new payment is verified and claimed (`signer_busy` when none is
   * free); never for payments that already have a record (answered or waited for, never sent again).
   */
  reservation: SettleReservation | undefined
}

const DAY_MS = 86_400_000
const DEFAULT_LEASE_MS = 5_000
// Below this a renewal (a store round trip every third of it) would be most of what a store does.
const MIN_LEASE_MS = 300

/** The state of a settle call whose budget ends at `deadline`, for the payment of `fingerprint`. */
export function openSettleCall(input: SettleOnceInput, deadline: number, fingerprint: string): SettleCall {
  const { adapter, context, store, budgetMs, options } = input
  // A retry must be able to take over and still finish within its own budget: at most a third of it.
  const leaseMs = Math.max(Math.min(options.leaseMs ?? DEFAULT_LEASE_MS, budgetMs / 3), MIN_LEASE_MS)
  const storeTimeoutMs = options.storeTimeoutMs ?? 5_000
  // A call past the deadline still gets 1 ms: it then fails as unavailable instead of never being tried.
  const bound = () => Math.min(storeTimeoutMs, deadline - Date.now())
  const storeKey = recordKey(input.key)
  const owner = randomId()
  const call: SettleCall = {
    adapter,
    context,
    payload: input.payload,
    store,
    budgetMs,
    deadline,
    pollMs: options.pollIntervalMs ?? 25,
    recordTtlMs: options.recordTtlMs ?? 7 * DAY_MS,
    leaseMs,
    storeTimeoutMs,
    trace: input.trace,
    storeKey,
    resumeLockKey: `${storeKey}:resume`,
    fingerprint,
    owner,
    bound,
    keeper: leaseKeeper({ leaseMs, owner, read: () => readRecord(call), write: (record, ttlMs) => writeRecord(call, record, ttlMs) }),
    failures: payerFailures({ store, context, budget: options.payerFailures, bound, storeTimeoutMs }),
    holds: payerHolds({ store, context, claimKey: storeKey, budgetMs, bound, storeTimeoutMs }),
    charged: adapter.settleSetsAmount ? context.amount.toString() : undefined,
    spend: undefined,
    journaledMinute: undefined,
    verdict: undefined,
    verifiedSince: 0,
    reservation: undefined,
  }
  return call
}

/** `answer`, told to the trace as coming about by `origin`, with the amount charged where the request sets it. */
export function answerAs(call: SettleCall, origin: SettleOrigin, answer: SettleResponse): SettleResponse {
  if (call.trace) call.trace.origin = origin
  if (call.charged !== undefined && (answer.success || answer.errorReason === REJECTION.settlementPending)) return { ...answer, amount: call.charged }
  return answer
}

/** The pending answer of a transaction whose outcome is not known, naming the payer the last verify found. */
export function pendingAnswer(call: SettleCall, transaction: string, payerHint: string | undefined): SettleResponse {
  return settlementPending(call.context, transaction, payerHint ?? call.verdict?.response.payer)
}

// Settle re-verifies with the adapter only: the before-verify hooks guard /verify.
export async function verifyNow(call: SettleCall): Promise<Verdict<unknown>> {
  call.verdict = undefined
  call.verifiedSince = Date.now()
  call.verdict = await call.adapter.verify(call.context, call.payload, call.reservation)
  return call.verdict
}

/** The balance the payment pays from: right after verify (before the claim) the spend is not taken yet, the verdict names it. */
export const accountNow = (call: SettleCall) => (call.spend ?? call.verdict?.spend)?.account

export const holdSpend = (call: SettleCall, payer: string | undefined) =>
  call.spend ? call.holds.place(call.spend, call.verifiedSince, payer) : Promise.resolve(undefined)

export const closeSpend = (call: SettleCall, landed: boolean) => call.holds.close(call.spend, landed)

const randomId = () => globalThis.crypto.randomUUID()

/** The waits of a settle: polling another call's record, letting settlements in flight land before a fresh verify. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
