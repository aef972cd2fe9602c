import type { PaymentContext, SettleJournal, Verdict } from '../../core/adapter.js'
import { withDeadline } from '../../core/deadline.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { awaitFees, type NetworkRuntime, type SignerSlot } from '../chain/network-runtime.js'
import { pickSigner } from '../chain/send-transaction.js'
import { failure } from '../chain/settlement-outcome.js'
import { leftOutIfUnfunded, onSigner, type SignerReservation } from '../chain/signer-reservation.js'
import { X402_EXACT_PERMIT2_PROXY } from '../codec/permit2-abi.js'
import type { EvmSetup } from '../evm-setup.js'
import { checkPermit2State } from '../permit2/permit2-chain-state.js'
import type { Permit2Payload } from '../permit2/permit2-payload.js'
import { exactSettleCalldata, preparedWindow, preparePermit2 } from '../permit2/permit2-prepare.js'
import { sendProxySettlement, type VerifiedPermit2 } from '../permit2/proxy-settlement.js'
import { EVM_REJECTION, PERMIT2_REJECTION, refused, type Rejection } from '../reasons.js'

/**
 * A Permit2 payment's checks: offline in the official order, then the chain state in one round
 * trip (see checkPermit2State), run as the signer that will send it, with its fees.
 */
export async function verifyPermit2(
  setup: EvmSetup,
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  permit: Permit2Payload,
  reserved: SignerSlot | undefined,
): Promise<Verdict<{ readonly method: 'permit2' } & VerifiedPermit2>> {
  const payment = await preparePermit2(ctx, runtime, setup.prepareOptions, permit)
  if ('reason' in payment) return refused(payment, permit.from)
  const slot = reserved ?? pickSigner(runtime)
  const fees = await awaitFees(runtime.cachedFees(), ctx.signal)
  const verdict = await withDeadline(checkPermit2State(runtime, payment, { from: slot.signer.address, fees }, setup.maxSettlementGas), ctx.signal).catch((error: unknown) =>
    Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
  )
  if (verdict.rejection) return refused(verdict.rejection, permit.from)
  // Sent without the permit when the allowance covers the payment: settle simulates that call first (other calldata).
  const sent = verdict.permitUnneeded ? { ...payment, permit2612: undefined, settleCalldata: exactSettleCalldata(payment.payload) } : payment
  return {
    response: { isValid: true, payer: payment.payer },
    payment: { method: 'permit2', payment: sent, simulated: { from: slot.signer.address, fees, data: payment.settleCalldata, at: Date.now() } },
    spend: { account: `${runtime.chainId}:${ctx.asset.toLowerCase()}:${payment.payer.toLowerCase()}`, amount: payment.payload.amount, balance: verdict.balance ?? 0n },
  }
}

/** Settles a Permit2 payment its verify passed: the exact proxy's `settle`, simulated exactly as sent (the clock checked again). */
export async function settlePermit2(
  setup: EvmSetup,
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  verified: VerifiedPermit2,
  journal: SettleJournal,
  reservation: SignerReservation | undefined,
): Promise<SettleResponse> {
  const { payment } = verified
  const payer = payment.payload.from
  const expired = preparedWindow(payment, setup.prepareOptions)
  if (expired) return failure(ctx, expired, payer)
  return onSigner(reservation?.slot ?? pickSigner(runtime), reservation, (slot) => {
    const call = { to: X402_EXACT_PERMIT2_PROXY, data: payment.settleCalldata, payee: payment.payee }
    return sendProxySettlement(setup, ctx, runtime, slot, call, verified.simulated, journal, { asRejection: asPermitRejection, payer })
  })
}

/** A failed simulation of a Permit2 settlement carries the Permit2 code. */
function asPermitRejection(rejection: Rejection): Rejection {
  return rejection.reason === EVM_REJECTION.simulationFailed ? { reason: PERMIT2_REJECTION.simulationFailed, message: rejection.message } : rejection
}
