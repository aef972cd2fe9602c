import type { BroadcastRecord, PaymentContext, SchemeAdapter, SettleJournal, SettleReservation, Verdict } from '../../src/core/adapter.js'
import type { SettleResponse } from '../../src/schemas/messages.js'

/**
 * An adapter's steps for one request, run as the core runs them (parse, then verify), for tests that
 * drive an adapter directly: the verdict, and the parsed payload its settle and resume take.
 */
export async function verifyDirectly(adapter: SchemeAdapter, ctx: PaymentContext, reservation?: SettleReservation): Promise<Verdict<unknown> & { readonly payload?: unknown }> {
  const parsed = adapter.parse(ctx)
  if ('refusal' in parsed) return { response: parsed.refusal }
  return { ...(await adapter.verify(ctx, parsed.payload, reservation)), payload: parsed.payload }
}

/**
 * parse → verify → settle of one request, without a reservation (settle then counts its own signer
 * slot, as for a direct caller). Throws when verify refuses: a test that settles expects a valid payment.
 */
export async function settleDirectly(adapter: SchemeAdapter, ctx: PaymentContext, journal: SettleJournal): Promise<SettleResponse> {
  const verdict = await verifyDirectly(adapter, ctx)
  if (!verdict.response.isValid) throw new Error(`verify refused the payment: ${verdict.response.invalidReason} ${verdict.response.invalidMessage}`)
  return adapter.settle(ctx, verdict.payment, journal)
}

/** parse → resume of a journaled settlement, as the core runs them for a retried request. */
export async function resumeDirectly(adapter: SchemeAdapter, ctx: PaymentContext, record: BroadcastRecord): Promise<SettleResponse> {
  const parsed = adapter.parse(ctx)
  if ('refusal' in parsed) throw new Error('resume of an unparsable payload')
  return adapter.resume(ctx, parsed.payload, record)
}

/** A journal that records nothing. */
export const noJournal: SettleJournal = { broadcasting: async () => undefined }
