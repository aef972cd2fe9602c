import { createHash } from 'node:crypto'
import * as z from 'zod'
import type { Parsed, PaymentContext } from '../../core/adapter.js'
import { bytesOfBase64, readWireTransaction, type WireTransaction } from '../codec/wire-transaction.js'
import { SVM_REASON } from '../reasons.js'
import { invalid } from './invalid.js'
import type { ExactSvmRuntime, NetworkRuntime } from './runtime.js'

/** The payload as `parse` read it (the adapter's `P`): its transaction, decoded once for the whole request. */
export interface ExactSvmPayload {
  readonly transaction: WireTransaction
}

const payloadSchema = z.looseObject({
  transaction: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
})
/** `paymentRequirements.extra` of a Solana payment. */
export const extraSchema = z.looseObject({
  feePayer: z.string().optional(),
  memo: z.string().optional(),
})

/** Whether `restrictAssets` leaves out the required mint. */
export function mintRefusedOn(ctx: PaymentContext, network: NetworkRuntime): boolean {
  return network.allowedMints !== undefined && !network.allowedMints.has(ctx.asset)
}

/**
 * Decodes the payload's base64 transaction once per request and names its replay domain: the
 * network and the message, which every signature signs (one message, one payment, whatever
 * signatures ride along). A payload with no transaction to decode is refused with what verify
 * answered for it before (an unaccepted mint comes first).
 */
export function parsePayment(rt: ExactSvmRuntime, ctx: PaymentContext): Parsed<ExactSvmPayload> {
  const payload = payloadSchema.safeParse(ctx.payload.payload)
  // The schema has checked the base64 alphabet already.
  const transaction = payload.success ? readWireTransaction(bytesOfBase64(payload.data.transaction)) : undefined
  if (transaction) {
    return { payload: { transaction }, key: `${ctx.network}:${createHash('sha256').update(transaction.messageBytes).digest('base64url')}` }
  }
  const refuse = (reason: string, message: string): Parsed<ExactSvmPayload> => ({ refusal: invalid(reason, message) })
  if (mintRefusedOn(ctx, rt.networkOf(ctx))) return refuse(SVM_REASON.mintNotAllowed, `mint ${ctx.asset} is not accepted on ${ctx.network}`)
  if (!extraSchema.safeParse(ctx.requirements.extra ?? {}).success) {
    return refuse(SVM_REASON.invalidPayload, 'paymentRequirements.extra.feePayer and .memo must be strings')
  }
  // Missing, not a string, not base64 or not a transaction: one code, as the reference facilitator answers.
  return refuse(SVM_REASON.undecodable, 'the payload transaction is not a base64 Solana transaction')
}
