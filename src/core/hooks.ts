import type { PaymentRequest, SettleResponse, VerifyResponse } from '../schemas/messages.js'
import type { PaymentContext } from './adapter.js'

/** A before-hook's refusal; the payment is rejected with this reason and message. */
export interface HookRejection {
  /** Snake_case code. @default 'rejected_by_policy' */
  reason?: string
  message: string
}

/**
 * How a settle's answer came about, for after-hooks that record outcomes (the ledger):
 *
 * - `sent`: this call sent the transaction and answers its outcome (success, failure or pending).
 * - `resumed`: this call finished a transaction that an earlier call (or a process that died) had sent.
 * - `refused`: nothing was sent: verify, a hook, a hold on the balance or the payer's failure budget refused it.
 * - `recorded`: answered from another call's record: a repeat of a settled or failed payment
 *   (`duplicate_settlement`), or a wait for a racing call that sent it.
 */
export type SettleOrigin = 'sent' | 'resumed' | 'refused' | 'recorded'

/** What an after-hook sees about one verify or settle. */
export interface PaymentEvent<Result> {
  readonly operation: 'verify' | 'settle'
  readonly request: PaymentRequest
  /** Absent when the request never reached an adapter (unsupported kind, mismatch). */
  readonly context: PaymentContext | undefined
  readonly result: Result
  /** Wall time of the operation in milliseconds. */
  readonly durationMs: number
  /** When the operation ended in a fault rather than an answer (the message is safe to show). */
  readonly fault?: { code: string; message?: string; status?: number }
  /** Settle only: how the answer came about (absent for a fault). */
  readonly origin?: SettleOrigin
}

export type VerifyEvent = PaymentEvent<VerifyResponse>
export type SettleEvent = PaymentEvent<SettleResponse>

/**
 * A verify or settle request refused before it could be read as a payment, so without a
 * PaymentEvent: its body does not fit the x402 schema (`invalid_request`, thrown as a 400), or it
 * names a protocol version this library does not serve (`invalid_x402_version`). Nothing in it
 * comes from the request but the operation: counters may use it as a label as it is.
 */
export interface RefusalEvent {
  readonly operation: 'verify' | 'settle'
  readonly reason: 'invalid_request' | 'invalid_x402_version'
}

/**
 * What a settlement charged, for the hooks that count money: the answer's `amount` when it states
 * one (`upto`: a resumed settle may have asked another usage than the one sent), else the payment's.
 */
export function chargedAmount(result: SettleResponse, context: PaymentContext): bigint {
  return result.amount !== undefined && /^\d+$/.test(result.amount) ? BigInt(result.amount) : context.amount
}

type MaybePromise<T> = T | Promise<T>

/**
 * Hooks around verify and settle. Before-hooks may refuse a payment (rate
 * limits, allowlists); after-hooks observe results (statistics, catalog) and
 * never delay or change the answer: their errors go to `onError`.
 */
export interface FacilitatorHooks {
  /** Names of the x402 extensions these hooks serve (the catalog: `bazaar`), listed in supported(). Optional. */
  readonly extensions?: readonly string[]
  beforeVerify?(ctx: PaymentContext): MaybePromise<HookRejection | void>
  afterVerify?(event: VerifyEvent): MaybePromise<void>
  beforeSettle?(ctx: PaymentContext): MaybePromise<HookRejection | void>
  afterSettle?(event: SettleEvent): MaybePromise<void>
  /** A request refused before it could be read as a payment (no afterVerify/afterSettle for it). Optional. */
  afterRefusal?(event: RefusalEvent): MaybePromise<void>
}
