import type { Address, Hex } from 'viem'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { aggregate3Calldata } from '../codec/calldata.js'
import type { PayeeCredit } from '../asset-policy.js'
import type { FeeQuote, NetworkRuntime } from './network-runtime.js'
import { PAYEE_PROBE_GAS, payeeRejection, probePayeeCredit } from './payee-probe.js'
import { feeFields, nodeAnswer, nodeRefusal, quantity, revertReasonOf, unfundedSigner, whenRefused, type SettlementSender } from './node-answers.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'
import { toRpcFault } from './rpc-fault.js'

/** What every transaction pays before its first opcode (EIP-2028 calldata aside). */
export const TRANSACTION_BASE_GAS = 21_000n

// The most gas one transaction may have once EIP-7825 is live (2^24), below every node's RPC gas cap.
const MAX_TRANSACTION_GAS = 16_777_216n
// An estimate may run up to this multiple of the cap: enough to name the price of a costlier
// payment, while a token that burns whatever it gets costs the node a bounded amount.
const ESTIMATE_BOUND_FACTOR = 4n

/** An estimate's outcome: the gas, a rejection of the payment, the fee quote to renew, or a fault of ours. */
export type GasEstimate = { readonly gas: bigint } | { readonly rejection: Rejection } | { readonly staleFees: true } | { readonly fault: FacilitatorError }

/**
 * `eth_estimateGas` of the exact call the facilitator will send, as the sender with its
 * fees, bounded by a multiple of `cap`. Never rejects: a call that costs more than `cap`
 * or reverts is a rejection, a sender without gas money or an unreachable node is a fault.
 * Sends its request at once (no await before it), so that it joins the JSON-RPC batch of
 * the calls made beside it.
 */
export async function estimateSettlementGas(
  runtime: NetworkRuntime,
  sender: SettlementSender,
  call: { to: Address; data: Hex },
  cap: bigint,
  /** What the call does, for a rejection's message. */
  what = 'settling this payment',
): Promise<GasEstimate> {
  const bound = cap * ESTIMATE_BOUND_FACTOR < MAX_TRANSACTION_GAS ? cap * ESTIMATE_BOUND_FACTOR : MAX_TRANSACTION_GAS
  const tooHigh = (amount: string): GasEstimate => ({
    rejection: {
      reason: EVM_REJECTION.settlementGasTooHigh,
      message: `${what} needs ${amount} gas, above this facilitator's limit of ${cap} (an estimate of the exact transaction); nothing was sent`,
    },
  })
  try {
    const gas = BigInt(
      await runtime.client.request({
        method: 'eth_estimateGas',
        params: [{ from: sender.from, to: call.to, data: call.data, gas: quantity(bound), ...feeFields(sender.fees) }],
      }),
    )
    return gas > cap ? tooHigh(`about ${gas}`) : { gas }
  } catch (error) {
    return whenRefused(runtime, sender, error, 'estimating the settlement gas', (): GasEstimate => {
      const text = nodeAnswer(error)?.details ?? ''
      if (!/out ?of ?gas|gas required exceeds/i.test(text)) return { rejection: simulationFailed(`an estimate of the settlement reverted${revertReasonOf(error)}`) }
      // "gas required exceeds allowance (N)": N is our bound, or less when the node capped it at what the sender's balance pays for.
      const allowance = /allowance\D*(\d+)/i.exec(text)?.[1]
      if (allowance !== undefined && BigInt(allowance) < cap) return { fault: unfundedSigner(runtime, sender.from, error) }
      return tooHigh(`more than ${allowance ?? bound}`)
    })
  }
}

/** A simulation's outcome at a given limit: it ran, a rejection of the payment, the fee quote to renew, or a fault of ours. */
export type LimitSimulation = { readonly limit: bigint } | { readonly rejection: Rejection } | { readonly staleFees: true } | { readonly fault: FacilitatorError }

/**
 * `eth_call` of the exact call the facilitator will send, as the sender with its fees and with
 * `limit` as its gas: when it succeeds, the transaction sent with that limit runs as simulated (the
 * limit is what it may use, not what it costs: unused gas is not paid for). One call where
 * `eth_estimateGas` runs the call a dozen times in its search.
 * Never rejects: a call that fails is estimated (that path only), and named
 * `invalid_exact_evm_settlement_gas_too_high` when it needs more than `limit`, `simulationFailed`
 * when it reverts; a sender without gas money or an unreachable node is a fault. Sends its request
 * at once, so that it joins the JSON-RPC batch of the calls made beside it.
 */
export async function simulateAtLimit(
  runtime: NetworkRuntime,
  sender: SettlementSender,
  call: { to: Address; data: Hex },
  limit: bigint,
  what = 'settling this payment',
): Promise<LimitSimulation> {
  try {
    await runtime.client.request({ method: 'eth_call', params: [{ from: sender.from, to: call.to, data: call.data, gas: quantity(limit), ...feeFields(sender.fees) }, 'latest'] })
    return { limit }
  } catch (error) {
    return whenRefused(runtime, sender, error, 'simulating the settlement transaction', async (): Promise<LimitSimulation> => {
      const failed = simulationFailed(`a simulation of the settlement with ${limit} gas and its fees reverted${revertReasonOf(error)}`)
      // Too little gas and a revert look alike from outside (an inner call that runs out makes its caller
      // revert): only on this failing path, an estimate tells a price above the limit from a payment that reverts.
      const estimated = await estimateSettlementGas(runtime, sender, call, limit, what)
      return 'gas' in estimated ? { rejection: failed } : estimated
    })
  }
}

/**
 * The two estimates that price an undeployed ERC-6492 wallet's payment, sent at once (one batch):
 * its transfer cannot be estimated before the wallet exists, but the deployment followed by the
 * transfer can (one Multicall3 call), and the difference is the transfer's share. See {@link deploymentPrice}.
 */
export function estimateDeployment(
  runtime: NetworkRuntime,
  sender: SettlementSender,
  deployment: { factory: Address; data: Hex },
  transfer: { to: Address; data: Hex },
  caps: { maxDeploymentGas: bigint; maxSettlementGas: bigint },
): readonly [Promise<GasEstimate>, Promise<GasEstimate>] {
  const both = aggregate3Calldata([
    { target: deployment.factory, allowFailure: false, callData: deployment.data },
    { target: transfer.to, allowFailure: false, callData: transfer.data },
  ])
  return [
    estimateSettlementGas(runtime, sender, { to: deployment.factory, data: deployment.data }, caps.maxDeploymentGas, "deploying the payer's smart wallet"),
    estimateSettlementGas(runtime, sender, { to: runtime.multicall3, data: both }, caps.maxDeploymentGas + caps.maxSettlementGas),
  ]
}

/** The deployment's gas and the transfer's share from {@link estimateDeployment}'s answers, or the rejection. */
export function deploymentPrice(
  deployment: { gas: bigint } | { rejection: Rejection },
  both: { gas: bigint } | { rejection: Rejection },
  maxSettlementGas: bigint,
): { deploymentGas: bigint; transferGas: bigint } | { rejection: Rejection } {
  if ('rejection' in deployment) return deployment
  const share = 'gas' in both ? both.gas - deployment.gas + TRANSACTION_BASE_GAS : undefined
  // Both together above their summed caps: the transfer's share is above its own.
  const tooHigh = 'rejection' in both ? both.rejection.reason === EVM_REJECTION.settlementGasTooHigh : share! > maxSettlementGas
  if (tooHigh) {
    const amount = share === undefined ? `more than ${maxSettlementGas}` : `about ${share}`
    return {
      rejection: {
        reason: EVM_REJECTION.settlementGasTooHigh,
        message: `settling this smart wallet's payment needs ${amount} gas, above this facilitator's limit of ${maxSettlementGas}; nothing was sent`,
      },
    }
  }
  return 'rejection' in both ? both : { deploymentGas: deployment.gas, transferGas: share! }
}

/**
 * Runs the exact settlement transaction as `eth_call`: the sender, its fees and the gas
 * limit it will be sent with. `undefined` when it succeeds; a rejection when it reverts or
 * runs out of gas. Throws a fault for a sender without gas money (`signer_unfunded`) or a node
 * that cannot be reached; a fee quote below the base fee is renewed once.
 * With `payee` (a token outside the known table), the same call also proves, in the same batch,
 * that it credits `payTo` with exactly the amount (see probePayeeCredit), or is refused.
 */
export async function simulateSettlement(
  runtime: NetworkRuntime,
  sender: SettlementSender,
  call: { to: Address; data: Hex; gas: bigint },
  signal: AbortSignal,
  renewFees: () => Promise<FeeQuote>,
  payee?: PayeeCredit,
): Promise<{ rejection: Rejection | undefined; fees: FeeQuote }> {
  let fees = sender.fees
  for (let attempt = 0; ; attempt++) {
    // Issued in the same tick as the call: one batch.
    const probing = payee ? probePayeeCredit(runtime, { from: sender.from, fees }, [call], payee, call.gas + PAYEE_PROBE_GAS) : undefined
    try {
      const params = [{ from: sender.from, to: call.to, data: call.data, gas: quantity(call.gas), ...feeFields(fees) }, 'latest'] as const
      await withDeadline(runtime.client.request({ method: 'eth_call', params }), signal)
    } catch (error) {
      const refusal = nodeRefusal(error)
      if (refusal === 'unfunded') throw unfundedSigner(runtime, sender.from, error)
      if (refusal === 'failed') {
        return { rejection: simulationFailed(`a simulation of the settlement with its gas limit of ${call.gas} and its fees failed${revertReasonOf(error)}`), fees }
      }
      if (refusal === 'fee_too_low' && attempt === 0) {
        fees = await withDeadline(renewFees(), signal).catch((e: unknown) => Promise.reject(toRpcFault(e, 'reading the gas fees')))
        continue
      }
      throw toRpcFault(error, 'simulating the settlement transaction')
    }
    if (probing) {
      const refused = payeeRejection(await withDeadline(probing, signal))
      if (refused) return { rejection: refused, fees }
    }
    return { rejection: undefined, fees }
  }
}

export function simulationFailed(message: string): Rejection {
  return { reason: EVM_REJECTION.simulationFailed, message }
}

