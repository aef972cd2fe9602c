import { createHash } from 'node:crypto'
import type { Parsed, PaymentContext } from '../../core/adapter.js'
import { bytesOfBase64, readWireTransaction, type WireTransaction } from '../codec/wire-transaction.js'
import { isRecord } from '../../schemas/parse-request.js'
import { SVM_REASON } from '../reasons.js'
import { invalid } from './invalid.js'
import type { ExactSvmRuntime, NetworkRuntime } from './runtime.js'

/** The payload as `parse` read it (the adapter's `P`): its transaction, decoded once for the whole request. */
export interface ExactSvmPayload {
  readonly transaction: WireTransaction
}

/** At most this many base64 characters in a payload's transaction (a transaction is at most 1,232 bytes). */
const MAX_TRANSACTION_TEXT = 4096
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** The payload's transaction text: a base64 string of 1 to 4,096 characters in an object, else `undefined`. */
function transactionTextOf(payload: unknown): string | undefined {
  const transaction = isRecord(payload) ? payload.transaction : undefined
  if (typeof transaction !== 'string' || transaction.length > MAX_TRANSACTION_TEXT || !BASE64.test(transaction)) return undefined
  return transaction
}

/** `paymentRequirements.extra` of a Solana payment: optional string `feePayer` and `memo` (absent extra: none). */
export interface SvmExtra {
  readonly feePayer?: string | undefined
  readonly memo?: string | undefined
}

/** Reads `paymentRequirements.extra`; `undefined` when it is not an object or feePayer or memo is not a string. */
export function readExtra(extra: unknown): SvmExtra | undefined {
  const value = extra ?? {}
  if (!isRecord(value)) return undefined
  const { feePayer, memo } = value
  if ((feePayer !== undefined && typeof feePayer !== 'string') || (memo !== undefined && typeof memo !== 'string')) return undefined
  return { feePayer, memo }
}

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
  const text = transactionTextOf(ctx.payload.payload)
  // The base64 alphabet is checked already.
  const transaction = text === undefined ? undefined : readWireTransaction(bytesOfBase64(text))
  if (transaction) {
    // Hashed when asked (settle asks; verify does not).
    let key: string | undefined
    return {
      payload: { transaction },
      get key() {
        return (key ??= `${ctx.network}:${createHash('sha256').update(transaction.messageBytes).digest('base64url')}`)
      },
    }
  }
  const refuse = (reason: string, message: string): Parsed<ExactSvmPayload> => ({ refusal: invalid(reason, message) })
  if (mintRefusedOn(ctx, rt.networkOf(ctx))) return refuse(SVM_REASON.mintNotAllowed, `mint ${ctx.asset} is not accepted on ${ctx.network}`)
  if (!readExtra(ctx.requirements.extra)) {
    return refuse(SVM_REASON.invalidPayload, 'paymentRequirements.extra.feePayer and .memo must be strings')
  }
  // Missing, not a string, not base64 or not a transaction: one code, as the reference facilitator answers.
  return refuse(SVM_REASON.undecodable, 'the payload transaction is not a base64 Solana transaction')
}
