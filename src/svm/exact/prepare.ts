import type { PaymentContext } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { encodeBase58 } from '../codec/base58.js'
import { transactionFee } from '../codec/transaction-fee.js'
import type { WireTransaction } from '../codec/wire-transaction.js'
import type { FeePayerSigning } from '../crypto/ed25519.js'
import { SVM_REASON, type SvmReason } from '../reasons.js'
import { checkDecodedPaymentTransaction, type CheckedPayment } from '../rules/transaction-rules.js'
import { mintRefusedOn, readExtra } from './parse.js'
import type { ExactSvmRuntime, NetworkRuntime } from './runtime.js'

/** A payment that passed the static rules, signed by its fee payer: what a valid verify hands settle (the adapter's `V`). */
export interface SignedPayment {
  readonly payment: CheckedPayment
  /** Base64 of the fully signed transaction: what settle sends. */
  readonly wire: string
  /** Base64 of the transaction with the fee payer's slot empty: what verify simulates. */
  readonly payerSignedWire: string
  /** The fee payer's signature in base58: the transaction id. */
  readonly signature: string
  /** What the transaction costs the fee payer once processed, in lamports (see `transactionFee`). */
  readonly fee: bigint
}

export type Prepared = { ok: true; signed: SignedPayment } | { ok: false; reason: SvmReason; message: string; payer?: string }

/**
 * Static rules, then the fee payer's signature; nothing touches the chain. The payer's signature is
 * not checked here: verify checks it (payerSignatureRefusal) while its RPC batch is on the wire.
 */
export async function prepare(rt: ExactSvmRuntime, ctx: PaymentContext, runtime: NetworkRuntime, transaction: WireTransaction): Promise<Prepared> {
  // A mint anyone can create would let them pay themselves at the fee payer's expense: refused before any work.
  if (mintRefusedOn(ctx, runtime)) {
    return { ok: false, reason: SVM_REASON.mintNotAllowed, message: `mint ${ctx.asset} is not accepted on ${ctx.network}` }
  }
  const extra = readExtra(ctx.requirements.extra)
  if (!extra) {
    return { ok: false, reason: SVM_REASON.invalidPayload, message: 'paymentRequirements.extra.feePayer and .memo must be strings' }
  }
  // The rules answer malformed bytes (account indices out of range, an oversized message) with a violation.
  const outcome = await checkDecodedPaymentTransaction({
    transaction,
    feePayers: rt.feePayers,
    expectedFeePayer: extra.feePayer,
    allowedPrograms: rt.allowedPrograms,
    limits: rt.limits,
    asset: ctx.asset,
    payTo: ctx.payTo,
    amount: ctx.amount,
    memo: extra.memo,
    associatedTokenAccount: rt.associatedTokenAccount,
    transferFeeAllowed: runtime.allowedMintExtensions.has('transferFee'),
  })
  if (!outcome.ok) return outcome
  const payment = outcome.payment
  const signer = rt.signers.get(payment.feePayer)
  // A bad payer signature answers first, as it would after the RPC (the rules admit only our fee payers: not reached).
  if (!signer) return payerSignatureRefusal(rt, payment) ?? { ok: false, reason: SVM_REASON.feePayerNotManaged, message: 'no signer for this fee payer' }
  return { ok: true, signed: await signAsFeePayer(signer, payment, transaction) }
}

/**
 * The refusal of a payment whose payer signature does not verify, else `undefined`. The rules allow
 * exactly two signers, the fee payer and the payer; the simulation runs without sigVerify (see
 * checkOnChain), so this check is the one that holds the payer to the bytes.
 */
export function payerSignatureRefusal(rt: ExactSvmRuntime, payment: CheckedPayment): Extract<Prepared, { ok: false }> | undefined {
  const payerSignature = payment.transaction.signatures[payment.payer]
  if (payerSignature && rt.verifySignature(payment.payer, payment.transaction.messageBytes, payerSignature)) return undefined
  return { ok: false, reason: SVM_REASON.signatureInvalid, message: 'the payer\'s signature of the transaction does not verify', payer: payment.payer }
}

/** Signs as fee payer and writes the signature into the fee payer's slot (the first) of a copy of the wire bytes. */
async function signAsFeePayer(sign: FeePayerSigning, payment: CheckedPayment, wire: WireTransaction): Promise<SignedPayment> {
  const unsigned = {
    ...payment.transaction,
    lifetimeConstraint: { blockhash: payment.blockhash, lastValidBlockHeight: 0n },
  }
  const signature = (await sign(unsigned))[payment.feePayer]
  if (!signature || signature.length !== 64) throw new FacilitatorError('internal_error', 'the fee payer signer returned no signature of the fee payer')
  const slot = wire.signatureOffsets[0]!
  const bytes = Buffer.from(wire.bytes)
  bytes.set(signature, slot)
  const signed = bytes.toString('base64')
  bytes.fill(0, slot, slot + signature.length)
  return { payment, wire: signed, payerSignedWire: bytes.toString('base64'), signature: encodeBase58(signature), fee: transactionFee(wire) }
}
