import type { BroadcastRecord, PaymentContext, SettleJournal } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { settleFailure } from '../../core/settle-answers.js'
import { transactionFee } from '../codec/transaction-fee.js'
import { decodeWireTransaction } from '../codec/wire-transaction.js'
import { finalRefusalOf } from '../rpc/answers.js'
import { type SignatureStatus, signatureStatusesSchema } from '../rpc/signature-poller.js'
import type { RpcOutcome } from '../rpc/solana-rpc.js'
import { SVM_REASON } from '../reasons.js'
import { confirm } from './confirm.js'
import type { ExactSvmPayload } from './parse.js'
import type { SignedPayment } from './prepare.js'
import type { ExactSvmRuntime } from './runtime.js'

/** Sends the payment a verify of this call co-signed, once `journal` has recorded it, then waits for the chain (`confirm`). */
export async function settle(rt: ExactSvmRuntime, ctx: PaymentContext, signed: SignedPayment, journal: SettleJournal): Promise<SettleResponse> {
  const runtime = rt.networkOf(ctx)
  // The verify of this call (with the simulation) checked and signed it just before the claim.
  const { payment, wire, signature, fee } = signed
  await journal.broadcasting({ transaction: signature, raw: wire })
  const sentAt = performance.now()
  let offeredAt: number | undefined
  let sendOutcome: RpcOutcome | undefined
  let statusOutcome: RpcOutcome | undefined
  try {
    ;[sendOutcome, statusOutcome] = await runtime.rpc.request(
      [
        // Preflight would simulate a second time; verify has just done it.
        { method: 'sendTransaction', params: [wire, { encoding: 'base64', skipPreflight: true, preflightCommitment: 'confirmed' }] },
        // confirm's first look rides with the send (one round trip less): a node that runs the batch in
        // order may already know the outcome, one that does not answers null and confirm polls as usual.
        { method: 'getSignatureStatuses', params: [[signature], { searchTransactionHistory: false }] },
      ],
      ctx.signal,
    )
    offeredAt = sentAt
  } catch (error) {
    // A cut answer or a refused request proves nothing either way: confirm decides, and sends the
    // bytes again the first time the chain says it has never seen them.
    if (ctx.signal.aborted || !(error instanceof FacilitatorError)) throw error
  }
  // A signature that does not verify (or a message that does not sanitize) fails the same way on every node, for good.
  const refusal = finalRefusalOf(sendOutcome)
  if (refusal) return settleFailure(ctx, SVM_REASON.signatureInvalid, refusal, payment.payer, signature)
  // Any other refusal is not proof the bytes cannot land (another node may have them): only the chain's status or the blockhash's expiry below decides the outcome.
  return confirm(rt, ctx, runtime, { signature, blockhash: payment.blockhash, payer: payment.payer, sentAt, wire, offeredAt, fee, seenAtSend: statusAtSend(statusOutcome) })
}

/** The status the send's batch read: `null` when the node has not seen it yet, `undefined` when the read failed or answered an odd shape. */
function statusAtSend(outcome: RpcOutcome | undefined): SignatureStatus | null | undefined {
  if (!outcome?.ok) return undefined
  const parsed = signatureStatusesSchema.safeParse(outcome.result)
  return parsed.success ? (parsed.data.value[0] ?? null) : undefined
}

/** Finishes a recorded settlement: re-sends the recorded bytes while the chain has not seen them, and waits for its outcome. */
export async function resume(rt: ExactSvmRuntime, ctx: PaymentContext, payload: ExactSvmPayload, record: BroadcastRecord): Promise<SettleResponse> {
  const runtime = rt.networkOf(ctx)
  const transaction = (record.raw ? decodeWireTransaction(record.raw) : undefined) ?? payload.transaction
  return confirm(rt, ctx, runtime, {
    signature: record.transaction,
    blockhash: transaction.blockhash,
    // The payer is the second signer (the first is the fee payer).
    payer: transaction.accounts[1],
    sentAt: performance.now(),
    fee: transactionFee(transaction),
    // Offered at once if the chain has not seen it (a crash between the record and the send).
    ...(record.raw ? { wire: record.raw } : {}),
  })
}
