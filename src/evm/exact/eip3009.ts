import { isAddress, type Address } from 'viem'
import type { PaymentContext, SettleJournal, Verdict } from '../../core/adapter.js'
import { withDeadline } from '../../core/deadline.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { awaitReceipt } from '../chain/await-receipt.js'
import { awaitFees, type FeeQuote, type NetworkRuntime, type SignerSlot } from '../chain/network-runtime.js'
import { pickSigner, signAndSend } from '../chain/send-transaction.js'
import { addCost, answer, failure } from '../chain/settlement-outcome.js'
import { leftOutIfUnfunded, onSigner, type SignerReservation } from '../chain/signer-reservation.js'
import type { VerifiedSimulation } from '../chain/verified-simulation.js'
import type { EvmSetup } from '../evm-setup.js'
import { EVM_REJECTION, refused, type Rejection } from '../reasons.js'
import type { ExactEvmPayload } from './authorization.js'
import { checkChainState, type ChainCheckOptions } from './check-chain-state.js'
import { estimatedGas, NOT_DEPLOYING } from './eip3009-gas.js'
import { checkValidityWindow, preparePayment, type PreparedPayment } from './prepare-payment.js'

/** What a valid verify of an EIP-3009 payment hands its settle. */
export interface VerifiedPayment {
  readonly payment: PreparedPayment
  /** The gas verify's estimate gave, and the signer it ran as (a payment priced by an estimate). */
  readonly estimate: { readonly gas: bigint; readonly from: Address } | undefined
  /** The transfer verify ran as `eth_call` at `maxSettlementGas` with the payee proof (a token outside the known table, plain signature). */
  readonly simulated: VerifiedSimulation | undefined
}

/**
 * Offline checks then the chain check (one round trip; two for a known token's payer with code), run as
 * the settlement will be: from the signer reserved for this settle (settle's verify) or the one settle
 * would pick now (a verify alone), with the cached fee quote.
 */
export async function verifyEip3009(
  setup: EvmSetup,
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  payload: ExactEvmPayload,
  reserved: SignerSlot | undefined,
): Promise<Verdict<{ readonly method: 'eip3009' } & VerifiedPayment>> {
  const payer = payload.authorization.from
  const offline = addressRejection(ctx, payload) ?? (await preparePayment(ctx, runtime, setup.verifyPrepareOptions, payload))
  if ('reason' in offline) return refused(offline, payer)
  const slot = reserved ?? pickSigner(runtime)
  // The quote the runtime holds, not one read for this verify (only the very first verify waits for one).
  const fees = await awaitFees(runtime.cachedFees(), ctx.signal)
  const options: ChainCheckOptions = {
    sender: { from: slot.signer.address, fees },
    gasLimit: setup.gasLimit,
    maxSettlementGas: setup.maxSettlementGas,
    maxDeploymentGas: setup.maxDeploymentGas,
    renewFees: runtime.freshFees,
  }
  const verdict = await withDeadline(checkChainState(runtime, offline, options), ctx.signal).catch((error: unknown) => Promise.reject(leftOutIfUnfunded(runtime, slot, error)))
  if (verdict.rejection) return refused(verdict.rejection, payer)
  const { payment } = verdict
  if (payment.deployment && !verdict.walletDeployed && !setup.deployWallets) return refused(NOT_DEPLOYING, payer)
  const estimate = verdict.estimatedGas === undefined ? undefined : { gas: verdict.estimatedGas, from: slot.signer.address }
  // A token outside the known table: the transfer ran as eth_call at the cap, as settle will send it (see estimatedGas).
  const simulated = verdict.simulation && { from: slot.signer.address, fees: verdict.simulation.fees, data: payment.transferCalldata, at: Date.now() }
  return {
    response: { isValid: true, payer: payment.payer },
    payment: { method: 'eip3009', payment, estimate, simulated },
    // The balance was read in the same call that passed the payment, so it is there.
    spend: { account: `${runtime.chainId}:${ctx.asset.toLowerCase()}:${payment.payer.toLowerCase()}`, amount: payment.payload.authorization.value, balance: verdict.balance ?? 0n },
  }
}

/** Settles an EIP-3009 payment its verify passed (chain state included); only the clock may have moved since. */
export async function settleEip3009(
  setup: EvmSetup,
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  verified: VerifiedPayment,
  journal: SettleJournal,
  reservation: SignerReservation | undefined,
): Promise<SettleResponse> {
  const { payment } = verified
  const expired = checkValidityWindow(payment.payload, setup.prepareOptions)
  if (expired) return failure(ctx, expired, payment.payer)
  return onSigner(reservation?.slot ?? pickSigner(runtime), reservation, async (slot) => {
    let gas = setup.gasLimit
    let fees: FeeQuote | undefined
    // A plain account on a known token goes with the fixed limit; anything else as its estimate priced it.
    if (!(payment.kind === 'eoa' && payment.knownToken)) {
      const priced = await estimatedGas(setup, runtime, slot, payment, verified, ctx.signal, (cost) => addCost(ctx, cost)).catch((error: unknown) =>
        Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
      )
      if ('reason' in priced) return failure(ctx, priced, payment.payer)
      ;({ gas, fees } = priced)
    }
    const sentAt = performance.now()
    const sent = await signAndSend(runtime, slot, { to: payment.asset, data: payment.transferCalldata, gas, fees }, ctx.signal, (record) => journal.broadcasting(record))
    const outcome = await awaitReceipt(runtime, sent.hash, sent.raw, setup.receiptOptions(ctx.signal), setup.rebroadcastIntervalMs)
    if (outcome.status !== 'pending') ctx.timings.confirmationMs = performance.now() - sentAt
    return answer(ctx, sent.hash, outcome, payment.payer)
  })
}

/**
 * Addresses that EIP-712 hashing would refuse (a mixed-case address with a wrong
 * checksum): a rejection of the payment, not a crash of the facilitator.
 */
export function addressRejection(ctx: PaymentContext, payload: ExactEvmPayload | Rejection): Rejection | undefined {
  for (const [field, value] of [['asset', ctx.asset], ['payTo', ctx.payTo]] as const) {
    if (!isAddress(value, { strict: true })) {
      return { reason: EVM_REJECTION.invalidRequirements, message: `paymentRequirements.${field} is not a valid address (wrong length or checksum)` }
    }
  }
  if ('reason' in payload) return undefined // preparePayment names what is wrong with it
  for (const field of ['from', 'to'] as const) {
    if (!isAddress(payload.authorization[field], { strict: true })) {
      return { reason: EVM_REJECTION.invalidPayload, message: `paymentPayload.payload.authorization.${field} is not a valid address (wrong length or checksum)` }
    }
  }
  return undefined
}
