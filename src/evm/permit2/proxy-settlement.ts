import type { Address, Hex } from 'viem'
import type { PaymentContext, SettleJournal } from '../../core/adapter.js'
import type { SettleResponse } from '../../schemas/messages.js'
import type { PayeeCredit } from '../asset-policy.js'
import { awaitReceipt } from '../chain/await-receipt.js'
import { awaitFees, type NetworkRuntime, type SignerSlot } from '../chain/network-runtime.js'
import { signAndSend } from '../chain/send-transaction.js'
import { simulateSettlement } from '../chain/settlement-simulation.js'
import { answer, failure } from '../chain/settlement-outcome.js'
import { leftOutIfUnfunded } from '../chain/signer-reservation.js'
import { ranJustNow, type VerifiedSimulation } from '../chain/verified-simulation.js'
import type { EvmSetup } from '../evm-setup.js'
import type { Rejection } from '../reasons.js'
import type { PreparedPermit2 } from './permit2-prepare.js'

/** What a valid verify of a Permit2 payment (exact or upto) hands its settle. */
export interface VerifiedPermit2 {
  readonly payment: PreparedPermit2
  /** The proxy call verify ran as `eth_call` at `maxSettlementGas`: its sender, fees and calldata. */
  readonly simulated: VerifiedSimulation
}

/**
 * Sends a proxy's `settle` call (Permit2 exact or upto) from `slot` with `maxSettlementGas` as its
 * gas limit (the limit verify simulated it with; unused gas is not paid for), then awaits it. The
 * transaction runs as `eth_call` exactly as it will be sent (this signer, these fees, that limit)
 * first, unless the verify the core ran just before this settle ran that very call (same signer,
 * fees and calldata): only the chain may have moved since, as for an EIP-3009 payment. With
 * `call.payee` (a token outside the known table) that simulation also proves what reaches payTo.
 */
export async function sendProxySettlement(
  setup: EvmSetup,
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  slot: SignerSlot,
  call: { to: Address; data: Hex; payee: PayeeCredit | undefined },
  verified: VerifiedSimulation,
  journal: SettleJournal,
  kind: { asRejection: (rejection: Rejection) => Rejection; payer: string | undefined },
): Promise<SettleResponse> {
  const { payer } = kind
  const from = slot.signer.address
  const fees = await awaitFees(runtime.fees(), ctx.signal)
  const gas = setup.maxSettlementGas
  let sendFees = fees
  if (!ranJustNow(verified, { from, data: call.data, fees })) {
    const simulated = await simulateSettlement(runtime, { from, fees }, { to: call.to, data: call.data, gas }, ctx.signal, runtime.freshFees, call.payee).catch((error: unknown) =>
      Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
    )
    if (simulated.rejection) return failure(ctx, kind.asRejection(simulated.rejection), payer)
    sendFees = simulated.fees
  }
  const sentAt = performance.now()
  const sent = await signAndSend(runtime, slot, { to: call.to, data: call.data, gas, fees: sendFees }, ctx.signal, (record) => journal.broadcasting(record))
  const outcome = await awaitReceipt(runtime, sent.hash, sent.raw, setup.receiptOptions(ctx.signal), setup.rebroadcastIntervalMs)
  if (outcome.status !== 'pending') ctx.timings.confirmationMs = performance.now() - sentAt
  return answer(ctx, sent.hash, outcome, payer)
}
