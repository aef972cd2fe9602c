import type { Parsed, PaymentContext, SchemeAdapter, SettleJournal, Verdict } from '../../core/adapter.js'
import { withDeadline } from '../../core/deadline.js'
import { REJECTION } from '../../errors/reasons.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { awaitFees, type NetworkRuntime, type SignerSlot } from '../chain/network-runtime.js'
import { failure, resumeSettlement } from '../chain/settlement-outcome.js'
import { leftOutIfUnfunded, onSigner, reserveSigner, type SignerReservation } from '../chain/signer-reservation.js'
import { X402_UPTO_PERMIT2_PROXY } from '../codec/permit2-abi.js'
import type { EvmSetup } from '../evm-setup.js'
import { sameAddress } from '../exact/prepare-payment.js'
import { EIP2612_GAS_SPONSORING } from '../permit2/eip2612-extension.js'
import { checkPermit2State } from '../permit2/permit2-chain-state.js'
import { preparedWindow, type PreparedPermit2 } from '../permit2/permit2-prepare.js'
import { sendProxySettlement, type VerifiedPermit2 } from '../permit2/proxy-settlement.js'
import { EVM_REJECTION, invalid, PERMIT2_REJECTION, refused, UPTO_REJECTION, type Rejection } from '../reasons.js'
import { chargedBy, parseUptoPayload, prepareUpto, uptoSettleCalldata, type UptoPayload } from './upto-payment.js'

/** What a valid verify of an upto payment hands its settle. */
export interface UptoPayment extends VerifiedPermit2 {
  readonly payment: PreparedPermit2 & { readonly payload: UptoPayload }
}

/**
 * The `upto` scheme on the networks of `setup`: Permit2 payments through the x402 upto proxy, sent by
 * the signer the payer's witness names (the only account the proxy lets settle); the settle request
 * names the amount used, at most the maximum signed, possibly zero (then nothing is sent).
 */
export function createUptoAdapter(setup: EvmSetup): SchemeAdapter<UptoPayload, UptoPayment, SignerReservation> {
  const { runtimes, runtimeOf, maxInFlight } = setup
  return {
    scheme: 'upto',
    family: 'eip155',
    settleSetsAmount: true,
    networks: [...runtimes.values()].map((r) => ({ ...r.network, extra: { facilitatorAddress: r.signers[0]!.signer.address } })),
    versions: [2],
    // Readiness and connections belong to the exact adapter (the same networks and signers).
    signers: () => setup.signerAddresses,
    extensions: [EIP2612_GAS_SPONSORING],
    attach: (services) => setup.attach(services),

    parse(ctx): Parsed<UptoPayload> {
      const { chainId } = runtimeOf(ctx)
      const permit = parseUptoPayload(ctx.payload.payload)
      if ('reason' in permit) return { refusal: invalid(permit, undefined) }
      // The same identity as exact through Permit2: Permit2 spends an owner's nonce whatever the proxy.
      return { payload: permit, key: `${chainId}:permit2:${permit.from.toLowerCase()}:${permit.nonce}` }
    },

    verify(ctx, permit): Promise<Verdict<UptoPayment>> {
      return verifyUpto(setup, ctx, runtimeOf(ctx), permit)
    },

    // A usage of zero settles with no transaction: only the store knows the nonce is spent.
    spendableWithoutTransaction: () => true,

    reserveSettlement(ctx, payload): SignerReservation {
      // A payload naming none of our signers is refused by verify; nothing to reserve.
      const slot = namedSigner(runtimeOf(ctx), payload)
      if (!slot) return { slot: undefined, release() {} }
      return reserveSigner(slot, maxInFlight, `the signer ${slot.signer.address} named by this upto payment has ${maxInFlight} settlements in flight; retry shortly`)
    },

    async settle(ctx, verified, journal, reservation): Promise<SettleResponse> {
      return withAmount(ctx, await settleUpto(setup, ctx, runtimeOf(ctx), verified, journal, reservation))
    },

    async resume(ctx, permit, record): Promise<SettleResponse> {
      return withAmount(ctx, await resumeSettlement(setup, ctx, permit.from, record))
    },
  }
}

/** The offline checks, then the chain state in one round trip, run as the signer the witness names. */
async function verifyUpto(setup: EvmSetup, ctx: PaymentContext, runtime: NetworkRuntime, permit: UptoPayload): Promise<Verdict<UptoPayment>> {
  const payment = await prepareUpto(ctx, runtime, setup.prepareOptions, permit)
  if ('reason' in payment) return refused(payment, permit.from)
  const slot = namedSigner(runtime, payment.payload)!
  const fees = await awaitFees(runtime.cachedFees(), ctx.signal)
  const verdict = await withDeadline(checkPermit2State(runtime, payment, { from: slot.signer.address, fees }, setup.maxSettlementGas), ctx.signal).catch((error: unknown) =>
    Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
  )
  if (verdict.rejection) return refused(asUptoRejection(verdict.rejection), permit.from)
  // Sent without the permit when the allowance covers the maximum (see Permit2Verdict.permitUnneeded).
  const sent = verdict.permitUnneeded ? { ...payment, permit2612: undefined, settleCalldata: uptoSettleCalldata(payment.payload, chargedBy(ctx, payment.payload)) } : payment
  return {
    response: { isValid: true, payer: payment.payer },
    payment: { payment: sent, simulated: { from: slot.signer.address, fees, data: payment.settleCalldata, at: Date.now() } },
    // Held: what this request charges (a verify's is the maximum, a settle's the usage).
    spend: { account: `${runtime.chainId}:${ctx.asset.toLowerCase()}:${payment.payer.toLowerCase()}`, amount: ctx.amount, balance: verdict.balance ?? 0n },
  }
}

async function settleUpto(
  setup: EvmSetup,
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  verified: UptoPayment,
  journal: SettleJournal,
  reservation: SignerReservation | undefined,
): Promise<SettleResponse> {
  const { payload } = verified.payment
  const payer = payload.from
  const expired = preparedWindow(verified.payment, setup.prepareOptions)
  if (expired) return failure(ctx, expired, payer)
  const charge = ctx.amount
  if (charge > payload.amount) {
    return failure(ctx, { reason: UPTO_REJECTION.settlementExceedsAmount, message: `the amount to settle ${charge} exceeds the permitted maximum ${payload.amount}` }, payer)
  }
  // Nothing used, nothing sent: the permit's nonce stays unspent on chain (this facilitator still settles it at most once).
  if (charge === 0n) return { success: true, transaction: '', network: ctx.wireNetwork, ...(payer ? { payer } : {}), amount: '0' }
  // Only the signer the witness names may call the upto proxy; a reservation of another one is not used.
  return onSigner(namedSigner(runtime, payload)!, reservation, (slot) => {
    // The exact transaction (the charged amount, this signer, these fees) runs as eth_call before it is
    // sent: the calldata prepareUpto built for this charge (ctx.amount), without the permit when unneeded.
    const call = { to: X402_UPTO_PERMIT2_PROXY, data: verified.payment.settleCalldata, payee: verified.payment.payee }
    return sendProxySettlement(setup, ctx, runtime, slot, call, verified.simulated, journal, { asRejection: asUptoRejection, payer })
  })
}

/** The slot of the signer an upto payload names (undefined when none of ours). */
function namedSigner(runtime: NetworkRuntime, payload: UptoPayload): SignerSlot | undefined {
  return runtime.signers.find((slot) => sameAddress(slot.signer.address, payload.facilitator))
}

/** Every upto settle answer carries the amount: the charge when it landed (or may land), otherwise 0. */
function withAmount(ctx: PaymentContext, response: SettleResponse): SettleResponse {
  return response.amount !== undefined ? response : { ...response, amount: response.success || response.errorReason === REJECTION.settlementPending ? String(ctx.amount) : '0' }
}

/** A failed simulation of an upto settlement carries the upto code. */
function asUptoRejection(rejection: Rejection): Rejection {
  return rejection.reason === EVM_REJECTION.simulationFailed || rejection.reason === PERMIT2_REJECTION.simulationFailed
    ? { reason: UPTO_REJECTION.simulationFailed, message: rejection.message }
    : rejection
}
