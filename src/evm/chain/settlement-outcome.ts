import type { Hex } from 'viem'
import type { BroadcastRecord, PaymentContext } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { REJECTION } from '../../errors/reasons.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { settleFailure, settlementPending } from '../../core/settle-answers.js'
import type { EvmSetup } from '../evm-setup.js'
import type { Rejection } from '../reasons.js'
import { awaitReceipt } from './await-receipt.js'
import type { ReceiptOutcome } from './receipt-poller.js'
import { resend } from './send-transaction.js'
import { toRpcFault } from './rpc-fault.js'

/** The settle answer of a sent transaction's outcome; a mined one's cost is added to `ctx.cost`. */
export function answer(ctx: PaymentContext, transaction: Hex, outcome: ReceiptOutcome, payer: string | undefined): SettleResponse {
  if (outcome.status !== 'pending' && outcome.cost !== undefined) addCost(ctx, outcome.cost)
  switch (outcome.status) {
    case 'success':
      return { success: true, transaction, network: ctx.wireNetwork, ...(payer ? { payer } : {}) }
    case 'reverted':
      return settleFailure(ctx, REJECTION.transactionFailed, `the settlement transaction reverted in block ${outcome.blockNumber}`, payer, transaction)
    case 'pending':
      return settlementPending(ctx, transaction, payer)
  }
}

/** Adds a mined transaction's cost (wei) to what this settle spent (see `PaymentContext.cost`). */
export function addCost(ctx: PaymentContext, cost: bigint): void {
  ctx.cost = (ctx.cost ?? 0n) + cost
}

export function failure(ctx: PaymentContext, rejection: Rejection, payer: string | undefined, transaction = ''): SettleResponse {
  return settleFailure(ctx, rejection.reason, rejection.message, payer, transaction)
}

/** Finishes a journaled settlement of `payer`'s payment (see SchemeAdapter.resume). */
export async function resumeSettlement(setup: EvmSetup, ctx: PaymentContext, payer: string, record: BroadcastRecord): Promise<SettleResponse> {
  const runtime = setup.runtimeOf(ctx)
  const hash = asHash(record.transaction)
  const quick = { ...setup.receiptOptions(ctx.signal), timeoutMs: 0 }
  const known = await runtime.receipts.wait(hash, quick)
  if (known.status !== 'pending') return answer(ctx, hash, known, payer)
  const seen = await runtime.client.request({ method: 'eth_getTransactionByHash', params: [hash] }).catch((error: unknown) => {
    throw toRpcFault(error, 'looking up the settlement transaction')
  })
  const raw = record.raw === undefined ? undefined : asHash(record.raw)
  if (!seen && raw) {
    if ((await resend(runtime, raw)) === 'nonce_used') {
      // The key's nonce moved on without this transaction: re-check once, it may just have been mined.
      const late = await runtime.receipts.wait(hash, quick)
      if (late.status !== 'pending') return answer(ctx, hash, late, payer)
      // It never reached the chain and never can; the authorization may well be unspent: the core
      // checks the payment again and sends it anew rather than recording a payment lost.
      return failure(ctx, { reason: REJECTION.transactionDropped, message: 'the settlement transaction was dropped (its nonce was used by another transaction)' }, payer, hash)
    }
  }
  return answer(ctx, hash, await awaitReceipt(runtime, hash, raw, setup.receiptOptions(ctx.signal), setup.rebroadcastIntervalMs), payer)
}

/** A journaled transaction id or signed bytes, as hex. */
function asHash(value: string): Hex {
  if (!/^0x[0-9a-fA-F]*$/.test(value)) throw new FacilitatorError('internal_error', 'a recorded transaction is not hex')
  return `0x${value.slice(2)}`
}
