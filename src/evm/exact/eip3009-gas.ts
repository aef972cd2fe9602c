import type { Address } from 'viem'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { awaitReceipt } from '../chain/await-receipt.js'
import { awaitFees, type FeeQuote, type NetworkRuntime, type SignerSlot } from '../chain/network-runtime.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { signAndSend } from '../chain/send-transaction.js'
import { deploymentPrice, estimateDeployment, estimateSettlementGas, simulateSettlement, type GasEstimate } from '../chain/settlement-simulation.js'
import { type SettlementSender } from '../chain/node-answers.js'
import { ranJustNow, type VerifiedSimulation } from '../chain/verified-simulation.js'
import type { EvmSetup } from '../evm-setup.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'
import type { PreparedPayment } from './prepare-payment.js'

export const NOT_DEPLOYING: Rejection = { reason: EVM_REJECTION.undeployedWallet, message: 'the payer\'s smart wallet is not deployed and this facilitator does not deploy wallets' }

/**
 * The gas limit and fees of a settlement not sent with the fixed limit (a token outside the known table,
 * a payer with code), or a rejection, so that nothing is sent that the chain would revert:
 * - a token outside the known table paid with a plain signature goes at `maxSettlementGas` (unused gas is
 *   not paid for; one limit for all of them, so they share the send lane's batches), after the exact
 *   transaction (signer, fees, that limit) runs as `eth_call` with the proof of what reaches payTo, unless
 *   verify ran that very call (same signer, fees and calldata) moments ago (see ranJustNow);
 * - anything else by its estimate (verify's, when it ran as this signer) with headroom, never above
 *   `maxSettlementGas`, then the exact transaction run as `eth_call`. An undeployed ERC-6492 wallet is
 *   priced before its deployment is sent, and deployed first.
 */
export async function estimatedGas(
  setup: EvmSetup,
  runtime: NetworkRuntime,
  slot: SignerSlot,
  payment: PreparedPayment,
  verified: { readonly estimate?: { readonly gas: bigint; readonly from: Address } | undefined; readonly simulated?: VerifiedSimulation | undefined },
  signal: AbortSignal,
  /** The cost of a wallet deployment sent first (it is the facilitator's, whatever becomes of the payment). */
  spent: (cost: bigint) => void,
): Promise<{ gas: bigint; fees: FeeQuote } | Rejection> {
  const { maxSettlementGas, maxDeploymentGas } = setup
  const from = slot.signer.address
  let sender: SettlementSender = { from, fees: await awaitFees(runtime.fees(), signal) }
  if (!payment.knownToken && payment.kind === 'eoa' && !payment.deployment) {
    const gas = maxSettlementGas
    if (ranJustNow(verified.simulated, { from, data: payment.transferCalldata, fees: sender.fees })) {
      return { gas, fees: sender.fees }
    }
    const transfer = { to: payment.asset, data: payment.transferCalldata }
    const run = await simulateSettlement(runtime, sender, { ...transfer, gas }, signal, runtime.freshFees, payment.payee)
    if (!run.rejection) return { gas, fees: run.fees }
    if (run.rejection.reason !== EVM_REJECTION.simulationFailed) return run.rejection
    // Only on this failing path (nothing is sent): an estimate tells a price above the cap from a revert, as verify names it.
    const priced = await withDeadline(estimateSettlementGas(runtime, { from, fees: run.fees }, transfer, maxSettlementGas), signal)
    return 'rejection' in priced && priced.rejection.reason === EVM_REJECTION.settlementGasTooHigh ? priced.rejection : run.rejection
  }
  /** What estimates as `sender` answered (they run again once with a fresh quote when the node finds the fees below its base fee). */
  const answered = async (estimating: () => readonly Promise<GasEstimate>[]): Promise<({ gas: bigint } | { rejection: Rejection })[]> => {
    let outcomes = await withDeadline(Promise.all(estimating()), signal)
    if (outcomes.some((outcome) => 'staleFees' in outcome)) {
      sender = { from, fees: await awaitFees(runtime.freshFees(), signal) }
      outcomes = await withDeadline(Promise.all(estimating()), signal)
    }
    return outcomes.map((outcome) => {
      if ('fault' in outcome) throw outcome.fault
      if ('staleFees' in outcome) throw new FacilitatorError('rpc_error', 'estimating the settlement gas: the node refused a fresh fee quote as below its base fee')
      return outcome
    })
  }
  const transfer = { to: payment.asset, data: payment.transferCalldata }
  let transferGas = verified.estimate?.from === from ? verified.estimate.gas : undefined
  const deployment = payment.deployment
  if (deployment && !(await hasCode(runtime, payment.payer, signal))) {
    if (!setup.deployWallets) return NOT_DEPLOYING
    const [deploymentGas, bothGas] = await answered(() => estimateDeployment(runtime, sender, deployment, transfer, { maxDeploymentGas, maxSettlementGas }))
    const price = deploymentPrice(deploymentGas!, bothGas!, maxSettlementGas)
    if ('rejection' in price) return price.rejection
    // The deployment is not the payment: nothing to journal, and a repeat is harmless.
    const deploymentLimit = withHeadroom(price.deploymentGas)
    const gas = deploymentLimit < maxDeploymentGas ? deploymentLimit : maxDeploymentGas
    const sent = await signAndSend(runtime, slot, { to: deployment.factory, data: deployment.data, gas, fees: sender.fees }, signal, async () => undefined)
    const outcome = await awaitReceipt(runtime, sent.hash, sent.raw, setup.receiptOptions(signal), setup.rebroadcastIntervalMs)
    if (outcome.status !== 'pending' && outcome.cost !== undefined) spent(outcome.cost)
    if (outcome.status === 'pending') {
      throw new FacilitatorError('rpc_timeout', 'the payer wallet deployment was not confirmed in time; nothing was paid, retry later')
    }
    if (outcome.status === 'reverted') return { reason: EVM_REJECTION.undeployedWallet, message: 'deploying the payer\'s smart wallet reverted' }
    transferGas = undefined
  }
  if (transferGas === undefined) {
    const priced = (await answered(() => [estimateSettlementGas(runtime, sender, transfer, maxSettlementGas)]))[0]!
    if ('rejection' in priced) return priced.rejection
    transferGas = priced.gas
  }
  // The cap also bounds the limit sent: a payment that costs more on chain than in the estimate runs out of gas at the cap.
  const headroom = withHeadroom(transferGas)
  const gas = headroom < maxSettlementGas ? headroom : maxSettlementGas
  // The transaction exactly as it will be sent: a wallet may answer otherwise at this limit than in the estimate's search.
  // A token outside the known table: the same run proves that payTo is credited with exactly the value.
  const simulated = await simulateSettlement(runtime, sender, { ...transfer, gas }, signal, runtime.freshFees, payment.payee)
  if (simulated.rejection) return simulated.rejection
  return { gas, fees: simulated.fees }
}

// Limits rounded up to this step: settlements of one kind then share a limit, and so a batch of the send lane
// (which holds transactions of one gas limit and fees, see send-lane.ts). Unused gas is not paid for.
const GAS_LIMIT_STEP = 10_000n

// A payment may cost more in the mined block than in the estimate (state moves, warm and cold slots).
function withHeadroom(estimate: bigint): bigint {
  const limit = (estimate * 5n) / 4n
  return ((limit + GAS_LIMIT_STEP - 1n) / GAS_LIMIT_STEP) * GAS_LIMIT_STEP
}

async function hasCode(runtime: NetworkRuntime, address: Address, signal: AbortSignal): Promise<boolean> {
  const code = await withDeadline(runtime.client.request({ method: 'eth_getCode', params: [address, 'latest'] }), signal).catch((error: unknown) => {
    throw toRpcFault(error, 'reading the payer wallet')
  })
  return code !== undefined && code !== '0x'
}
