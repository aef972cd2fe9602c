import type { PaymentContext, SettleReservation } from '../../core/adapter.js'
import type { ExactSvmPayload } from './parse.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { ExactSvmRuntime } from './runtime.js'

/** A settlement slot on the payment's fee payer (the adapter's `R`), handed to the verify and the settle of one settle call. */
export interface FeePayerReservation extends SettleReservation {
  /** The fee payer whose slot is held; `undefined` when the payment names none of ours (its verify refuses it). */
  readonly feePayer: string | undefined
  /**
   * Set once a verify under this reservation reported a spend, or found the balance read it shared
   * failed: a later verify (the core's retry after a refused hold) reads the balance afresh.
   */
  readsAfresh: boolean
  /** The source account a verify under this reservation counts as settling (see createVerify); cleared on release. */
  settling?: { readonly account: string; readonly end: () => void }
}

/**
 * `reserveSettlement`: takes a slot on the fee payer a payment names (the first account of its
 * message), at most `maxInFlightSettlesPerSigner` per fee payer; `signer_busy` beyond.
 */
export function createFeePayerSlots(rt: ExactSvmRuntime): (ctx: PaymentContext, payload: ExactSvmPayload) => FeePayerReservation {
  const inFlight = new Map<string, number>()
  return (_ctx, payload) => {
    // The fee payer is the message's first account.
    const feePayer = payload.transaction.accounts[0]
    // A payload without one of our fee payers never reaches a send: verify rejects it.
    if (feePayer === undefined || !rt.feePayers.has(feePayer)) {
      return {
        feePayer: undefined,
        readsAfresh: false,
        release() {
          this.settling?.end()
        },
      }
    }
    const count = inFlight.get(feePayer) ?? 0
    if (count >= rt.maxInFlight) {
      throw new FacilitatorError('signer_busy', `fee payer ${feePayer} has ${rt.maxInFlight} settlements in flight; retry shortly`)
    }
    inFlight.set(feePayer, count + 1)
    let held = true
    return {
      feePayer,
      readsAfresh: false,
      release() {
        this.settling?.end()
        if (!held) return
        held = false
        const left = (inFlight.get(feePayer) ?? 1) - 1
        if (left > 0) inFlight.set(feePayer, left)
        else inFlight.delete(feePayer)
      },
    }
  }
}
