import { BaseError, decodeErrorResult, RpcRequestError, type Address, type Hex } from 'viem'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { aggregate3Calldata } from '../codec/calldata.js'
import type { PayeeCredit } from '../asset-policy.js'
import type { FeeQuote, NetworkRuntime } from './network-runtime.js'
import { PAYEE_PROBE_GAS, payeeRejection, probePayeeCredit } from './payee-probe.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'
import { toRpcFault } from './rpc-fault.js'

/**
 * Who sends a settlement and with which fees: every simulation and estimate of it runs
 * as this sender with these fees, because a contract can tell a call without them
 * (`tx.gasprice == 0`, `tx.origin` the zero address) from the transaction that lands.
 */
export interface SettlementSender {
  readonly from: Address
  readonly fees: FeeQuote
}

/** What every transaction pays before its first opcode (EIP-2028 calldata aside). */
export const TRANSACTION_BASE_GAS = 21_000n

// The most gas one transaction may have once EIP-7825 is live (2^24), below every node's RPC gas cap.
const MAX_TRANSACTION_GAS = 16_777_216n
// An estimate may run up to this multiple of the cap: enough to name the price of a costlier
// payment, while a token that burns whatever it gets costs the node a bounded amount.
const ESTIMATE_BOUND_FACTOR = 4n

/** The fee fields of a JSON-RPC call or estimate, as the transaction will carry them. */
export function feeFields(fees: FeeQuote): { maxFeePerGas: Hex; maxPriorityFeePerGas: Hex } | { gasPrice: Hex } {
  return 'gasPrice' in fees
    ? { gasPrice: quantity(fees.gasPrice) }
    : { maxFeePerGas: quantity(fees.maxFeePerGas), maxPriorityFeePerGas: quantity(fees.maxPriorityFeePerGas) }
}

export function quantity(value: bigint): Hex {
  return `0x${value.toString(16)}`
}

/**
 * What a node's refusal of a call or estimate it was asked to run means: the sender
 * cannot pay for the gas (`unfunded`), the fee quote is below the block's base fee
 * (`fee_too_low`), the call ran out of gas or reverted (`failed`: the payment's fault), or
 * anything else (`undefined`: the node or the connection, a fault of ours).
 */
export function nodeRefusal(error: unknown): 'unfunded' | 'fee_too_low' | 'failed' | undefined {
  // Only an answer of the node says anything about the call; a lost connection says nothing.
  const answer = nodeAnswer(error)
  if (!answer) return undefined
  const text = answer.details
  if (/insufficient funds/i.test(text)) return 'unfunded'
  if (/base ?fee/i.test(text) && /less|low|below|under/i.test(text)) return 'fee_too_low'
  // Code 3 is geth's "execution reverted" with the revert data (anvil and most nodes answer the same).
  if (answer.code === 3 || /out ?of ?gas|gas required exceeds|revert|invalid opcode|stack (?:under|over)flow/i.test(text)) return 'failed'
  return undefined
}

/** The node's own error answer in an error's chain, if the node answered. */
function nodeAnswer(error: unknown): RpcRequestError | undefined {
  const found = error instanceof BaseError ? error.walk((e) => e instanceof RpcRequestError) : undefined
  return found instanceof RpcRequestError ? found : undefined
}

/** The fault of a sender the node would not let pay for the gas. */
export function unfundedSigner(runtime: NetworkRuntime, from: Address, error: unknown): FacilitatorError {
  return new FacilitatorError(
    'signer_unfunded',
    `the node refused to run the settlement from signer ${from} of ${runtime.network.caip2} for insufficient funds for gas; fund it (the signers' addresses are in supported().signers) and retry`,
    { cause: error },
  )
}

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

/**
 * What a refused simulation or estimate means, the same for both: a sender without gas money is a
 * fault, a fee below the base fee asks for a new quote, a node that answered nothing is a fault;
 * only a failing call (`failed`) means something of its own to each.
 */
export function whenRefused<T>(runtime: NetworkRuntime, sender: SettlementSender, error: unknown, doing: string, failed: () => T): T | { readonly staleFees: true } | { readonly fault: FacilitatorError } {
  switch (nodeRefusal(error)) {
    case 'unfunded':
      return { fault: unfundedSigner(runtime, sender.from, error) }
    case 'fee_too_low':
      return { staleFees: true }
    case 'failed':
      return failed()
    default:
      return { fault: toRpcFault(error, doing) }
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

/** `: reason` from revert data (an `Error(string)`), ` (selector)` for a custom error, or nothing. */
export function revertReason(data: Hex): string {
  if (data === '0x') return ''
  try {
    const decoded = decodeErrorResult({ abi: [], data })
    const reason = decoded.args?.[0]
    return typeof reason === 'string' ? `: ${reason.slice(0, 200)}` : ` (${decoded.errorName})`
  } catch {
    return ` (${data.slice(0, 10)})`
  }
}

/** The revert reason a node's error carries, as data or in its message. */
export function revertReasonOf(error: unknown): string {
  const answer = nodeAnswer(error)
  const data = answer?.data
  if (typeof data === 'string' && /^0x(?:[0-9a-fA-F]{2})+$/.test(data)) return revertReason(`0x${data.slice(2)}`)
  const text = answer?.details ?? ''
  const said = /execution reverted:?\s*(.{1,200})/i.exec(text)?.[1]?.trim()
  if (said) return `: ${said}`
  return /out ?of ?gas/i.test(text) ? ' (out of gas)' : ''
}
