import { setTimeout as sleep } from 'node:timers/promises'
import type { Blockhash } from '@solana/kit'
import type { PaymentContext } from '../../core/adapter.js'
import { timeBudget } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { REJECTION } from '../../errors/reasons.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { settleFailure, settlementPending } from '../../core/settle-answers.js'
import { describeTransactionError, finalRefusalOf } from '../rpc/answers.js'
import type { SignatureRound, SignatureStatus } from '../rpc/signature-poller.js'
import { SVM_REASON } from '../reasons.js'
import type { ExactSvmRuntime, NetworkRuntime } from './runtime.js'

/** A sent (or recorded) transaction settle waits for. */
export interface Confirmation {
  signature: string
  blockhash: Blockhash
  payer: string | undefined
  sentAt: number
  /** The signed bytes, offered again while the chain has not seen the transaction and its blockhash is valid. */
  wire?: string
  /** When a node last accepted the bytes; never: they are offered at the first look. */
  offeredAt?: number
  /** What the transaction costs the fee payer once processed, in lamports (see `transactionFee`). */
  fee?: bigint
  /** The status read in the send's own batch (`null`: not seen yet); `undefined` when none was read. */
  seenAtSend?: SignatureStatus | null
}

/** Polls the signature status until confirmed, expired (blockhash no longer valid) or out of time. */
export async function confirm(rt: ExactSvmRuntime, ctx: PaymentContext, runtime: NetworkRuntime, c: Confirmation): Promise<SettleResponse> {
  // Landed as the node took it: no wait, so no budget (its controller, timer and listener) to set up.
  if (isLanded(c.seenAtSend)) return landed(ctx, c, c.seenAtSend)
  // The wait ends at the request's budget or at confirmTimeoutMs, whichever comes first (ended with the wait: see timeBudget).
  const budget = timeBudget(rt.confirmTimeoutMs, ctx.signal)
  try {
    return await waitFor(rt, ctx, runtime, c, budget.signal)
  } finally {
    budget.end()
  }
}

const isLanded = (status: SignatureStatus | null | undefined): status is SignatureStatus =>
  status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized'

/** The answer for a transaction the chain confirmed: landed, or failed on chain. */
function landed(ctx: PaymentContext, c: Confirmation, status: SignatureStatus): SettleResponse {
  ctx.timings.confirmationMs = performance.now() - c.sentAt
  // Processed, landed or failed: the fee payer paid its fee either way.
  if (c.fee !== undefined) ctx.cost = (ctx.cost ?? 0n) + c.fee
  if (status.err !== null && status.err !== undefined) {
    return settleFailure(ctx, REJECTION.transactionFailed, `the transaction failed on chain: ${describeTransactionError(status.err)}`, c.payer, c.signature)
  }
  return { success: true, transaction: c.signature, network: ctx.wireNetwork, ...(c.payer ? { payer: c.payer } : {}) }
}

/** confirm's polling, until `signal` (the smaller of both budgets) aborts. */
async function waitFor(rt: ExactSvmRuntime, ctx: PaymentContext, runtime: NetworkRuntime, c: Confirmation, signal: AbortSignal): Promise<SettleResponse> {
  // Leaders drop transactions under load; the same bytes are the same transaction, so they go again
  // every rebroadcastIntervalMs until the status appears or the blockhash expires.
  let nextOffer = c.offeredAt === undefined ? 0 : rt.rebroadcastIntervalMs > 0 ? c.offeredAt + rt.rebroadcastIntervalMs : Number.POSITIVE_INFINITY
  let expiredOnce = false
  // The first look is immediate (a fast chain may already have the transaction), unless the send's batch made it.
  let delayMs = 0
  if (c.seenAtSend !== undefined) delayMs = rt.pollIntervalMs
  for (;;) {
    if (signal.aborted) return settlementPending(ctx, c.signature, c.payer)
    let round: SignatureRound | undefined
    try {
      round = await runtime.poller.check(c.signature, c.blockhash, delayMs, signal)
    } catch (error) {
      // The transaction is out: a flaky RPC while polling ends in `pending`, never in a lost id.
      if (!(error instanceof FacilitatorError)) throw error
      delayMs = rt.pollIntervalMs
      continue
    }
    if (!round) return settlementPending(ctx, c.signature, c.payer)
    delayMs = rt.pollIntervalMs
    const status = round.status
    if (status) {
      if (isLanded(status)) return landed(ctx, c, status)
      continue
    }
    if (round.blockhashValid === undefined) throw new FacilitatorError('rpc_error', 'the Solana RPC answered isBlockhashValid in an unknown shape')
    if (!round.blockhashValid) {
      // Look once more: the transaction may have landed between the two reads of the batch.
      if (expiredOnce) {
        return settleFailure(ctx, SVM_REASON.transactionExpired, 'the transaction blockhash expired before it landed; it can never land', c.payer, c.signature)
      }
      // The failure is final and recorded, so give a lagging node one full interval to report a transaction
      // that landed before the expiry (the poller may run a round early; this wait is exact). The budget bounds it.
      expiredOnce = true
      try {
        await sleep(rt.pollIntervalMs, undefined, { signal })
      } catch {
        return settlementPending(ctx, c.signature, c.payer)
      }
      delayMs = 0
      continue
    }
    if (c.wire && performance.now() >= nextOffer) {
      try {
        // Bounded by the wait's own signal: a hanging send must not hold the answer past confirmTimeoutMs.
        const [outcome] = await runtime.rpc.request([{ method: 'sendTransaction', params: [c.wire, { encoding: 'base64', skipPreflight: true }] }], signal)
        const refusal = finalRefusalOf(outcome)
        if (refusal) return settleFailure(ctx, SVM_REASON.signatureInvalid, refusal, c.payer, c.signature)
        nextOffer = rt.rebroadcastIntervalMs > 0 ? performance.now() + rt.rebroadcastIntervalMs : Number.POSITIVE_INFINITY
      } catch (error) {
        // Still refused: keep polling and offering the bytes (not faster than the rebroadcast pace) until the bound.
        if (!(error instanceof FacilitatorError)) throw error
        nextOffer = performance.now() + (rt.rebroadcastIntervalMs > 0 ? rt.rebroadcastIntervalMs : rt.pollIntervalMs)
      }
    }
  }
}
