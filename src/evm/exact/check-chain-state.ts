import type { Hex } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { ERC1271_MAGIC_VALUE } from '../codec/abi.js'
import { aggregate3Calldata, authorizationStateCalldata, balanceOfCalldata, decodeAggregate3Result, isValidSignatureCalldata, type Aggregate3Call, type Aggregate3Result } from '../codec/calldata.js'
import type { FeeQuote, NetworkRuntime } from '../chain/network-runtime.js'
import { kindByRecovery, transferCalldata, type PreparedPayment } from './prepare-payment.js'
import { PAYEE_PROBE_GAS, probePayeeCredit } from '../chain/payee-probe.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { deploymentPrice, estimateDeployment, estimateSettlementGas, simulateAtLimit, simulationFailed } from '../chain/settlement-simulation.js'
import { feeFields, nodeRefusal, quantity, revertReason, unfundedSigner, type SettlementSender } from '../chain/node-answers.js'

/** What verify's chain check runs as, and the gas limits it holds the payment to. */
export interface ChainCheckOptions {
  /** The signer that will send the settlement and the fees it will carry: every call and estimate runs as it. */
  readonly sender: SettlementSender
  /** The gas limit a plain account's payment on a known token is sent with (`gasLimit`). */
  readonly gasLimit: bigint
  /** The most gas a payment priced by an estimate may use (`maxSettlementGas`). */
  readonly maxSettlementGas: bigint
  /** The most gas an ERC-6492 wallet's deployment may use (`maxDeploymentGas`). */
  readonly maxDeploymentGas: bigint
  /** A fresh fee quote, for a node that found `sender.fees` below its base fee (asked once). */
  readonly renewFees: () => Promise<FeeQuote>
}

/** What the chain said about a prepared payment. */
export interface ChainVerdict {
  /** The first failed check, or `undefined` when the payment would settle. */
  readonly rejection: Rejection | undefined
  /** ERC-6492: whether the payer's wallet already has code. */
  readonly walletDeployed: boolean
  /**
   * The payment as checked: an `unproven` signature comes back `eoa` or `erc1271`, and an `eoa`
   * one whose payer has code (an EIP-7702 account) comes back `erc1271`, priced by an estimate.
   */
  readonly payment: PreparedPayment
  /** The payer's token balance as the check read it; `undefined` when the read failed. */
  readonly balance: bigint | undefined
  /**
   * The gas of the settlement as `eth_estimateGas` gave it (run as `options.sender`), for a payment
   * priced by an estimate: a token outside the known table, or a payer with code. `undefined` for a
   * payment sent with the fixed `gasLimit`, and for an undeployed ERC-6492 wallet, which settle prices again.
   */
  readonly estimatedGas: bigint | undefined
  /**
   * A token outside the known table paid with a plain signature: the exact settlement transaction ran as
   * `eth_call` from `options.sender.from`, with these fees and `gas` (`maxSettlementGas`) as its limit, and
   * succeeded, beside the proof of what reaches `payTo`. Settle sends it with that limit and, while this is
   * fresh (same signer, fees and calldata), without running it again. `undefined` for any other payment.
   */
  readonly simulation: { readonly fees: FeeQuote; readonly gas: bigint } | undefined
}

// Gas for Multicall3's own work and a token's two reads (some 20k with USDC), on top of the
// payment's own limit, when the call also runs a wallet's signature check or a deployment.
const CHECKS_GAS = 100_000n

/**
 * Checks signature, nonce, balance and a simulation of the exact settlement call in one Multicall3
 * `aggregate3` `eth_call` (with the payer's code, an estimate or a payee proof in the same JSON-RPC
 * batch where the payment needs them), run as the settlement will be: from its signer, with its fees
 * and its gas limit. How each kind of payment is priced and proven: docs/evm.md, "Verify simulates the transaction settle will send".
 */
export async function checkChainState(runtime: NetworkRuntime, payment: PreparedPayment, options: ChainCheckOptions): Promise<ChainVerdict> {
  return check(runtime, payment, options, false, false)
}

async function check(runtime: NetworkRuntime, payment: PreparedPayment, options: ChainCheckOptions, priceByEstimate: boolean, feesRenewed: boolean): Promise<ChainVerdict> {
  const { payer, asset, digest, signature, deployment, kind } = payment
  const { nonce } = payment.payload.authorization
  const { sender } = options
  const pricing = deployment ? 'deployment' : priceByEstimate || kind === 'erc1271' ? 'estimate' : payment.knownToken ? 'fixed' : 'cap'
  const isValidSignature: Aggregate3Call = {
    target: payer,
    allowFailure: true,
    callData: isValidSignatureCalldata(digest, signature),
  }
  const calls: Aggregate3Call[] = []
  if (deployment) {
    // Before the factory runs: does the wallet already exist?
    calls.push(isValidSignature)
    calls.push({ target: deployment.factory, allowFailure: true, callData: deployment.data })
  }
  const readsAt = calls.length
  calls.push(
    { target: asset, allowFailure: true, callData: balanceOfCalldata(payer) },
    { target: asset, allowFailure: true, callData: authorizationStateCalldata(payer, nonce) },
  )
  // After the reads: a wallet whose check burns gas starves only itself.
  const signatureAt = kind === 'erc1271' || kind === 'erc6492' ? calls.push(isValidSignature) - 1 : undefined
  // Priced by an estimate (or at the cap), the estimate (the eth_call at the cap) is the simulation: it runs the call exactly as sent, not from Multicall3.
  const simulationAt = pricing === 'estimate' || pricing === 'cap' ? undefined : calls.push({ target: asset, allowFailure: true, callData: payment.transferCalldata }) - 1
  const gas =
    pricing === 'fixed'
      ? options.gasLimit
      : pricing === 'estimate' || pricing === 'cap'
        ? options.maxSettlementGas + CHECKS_GAS
        : options.maxDeploymentGas + options.maxSettlementGas + CHECKS_GAS

  const data = aggregate3Calldata(calls)
  // A plain signature's payer may have code (a smart wallet, an EIP-7702 account): read it beside the call.
  const readsCode = pricing === 'fixed'
  const transfer = { to: asset, data: payment.transferCalldata }
  // Issued in the same tick: the default transport sends them as one JSON-RPC batch (with other verifies' made meanwhile).
  const multicall = runtime.client.request({
    method: 'eth_call',
    params: [{ from: sender.from, to: runtime.multicall3, data, gas: quantity(gas), ...feeFields(sender.fees) }, 'latest'],
  })
  // Without an answer the payer counts as having code: it is then priced by an estimate.
  const codeRead = readsCode ? runtime.client.request({ method: 'eth_getCode', params: [payer, 'latest'] }).catch(() => undefined) : undefined
  const estimate = pricing === 'estimate' ? estimateSettlementGas(runtime, sender, transfer, options.maxSettlementGas) : undefined
  // A token outside the known table, plain signature: the exact transaction at the cap, as settle sends it (an estimate only if it fails).
  const atCap = pricing === 'cap' ? simulateAtLimit(runtime, sender, transfer, options.maxSettlementGas) : undefined
  // Settle prices an ERC-6492 wallet again once it is deployed; this tells a price above the caps before anything is sent.
  const deploymentEstimates = deployment ? estimateDeployment(runtime, sender, deployment, transfer, options) : undefined
  // A token outside the known table: the calls settle sends (an undeployed wallet's deployment first), run as
  // the signer between two reads of payTo's balance (see probePayeeCredit), in the same batch.
  const credit = payment.payee
    ? probePayeeCredit(
        runtime,
        sender,
        deployment ? [{ to: deployment.factory, data: deployment.data }, transfer] : [transfer],
        payment.payee,
        (deployment ? options.maxDeploymentGas + options.maxSettlementGas : options.maxSettlementGas) + PAYEE_PROBE_GAS,
      )
    : undefined

  const again = async (): Promise<ChainVerdict> => check(runtime, payment, { ...options, sender: { ...sender, fees: await options.renewFees() } }, priceByEstimate, true)
  let raw: Hex | undefined
  // The whole call failed: out of gas (allowFailure keeps every revert inside it).
  let exhausted = false
  try {
    raw = await multicall
  } catch (error) {
    const refusal = nodeRefusal(error)
    if (refusal === 'unfunded') throw unfundedSigner(runtime, sender.from, error)
    if (refusal === 'fee_too_low' && !feesRenewed) return again()
    if (refusal !== 'failed') throw toRpcFault(error, 'reading the chain state')
    exhausted = true
  }
  const verdict = (
    rejection: Rejection | undefined,
    checked: PreparedPayment,
    balance?: bigint,
    estimatedGas?: bigint,
    walletDeployed = !deployment,
    simulation?: ChainVerdict['simulation'],
  ): ChainVerdict => ({
    rejection,
    walletDeployed,
    payment: checked,
    balance,
    estimatedGas,
    simulation,
  })
  const badSignature: Rejection = { reason: EVM_REJECTION.signature, message: 'the signature is not valid for the payer (EOA, ERC-1271 and ERC-6492 checks failed)' }
  /** An estimate's answer; a fault is thrown, a fee quote the node found too low asks for the check `again`. */
  const answered = async <T extends object>(pending: Promise<T | { staleFees: true } | { fault: FacilitatorError }>): Promise<T | 'renew'> => {
    const outcome = await pending
    if ('fault' in outcome) throw outcome.fault
    if (!('staleFees' in outcome)) return outcome as T
    if (feesRenewed) throw new FacilitatorError('rpc_error', 'estimating the settlement gas: the node refused a fresh fee quote as below its base fee')
    return 'renew'
  }
  /** What the estimates said: a price above the caps, a revert, the gas (an estimate-priced payment). */
  const estimates = async (): Promise<{ tooHigh?: Rejection; reverted?: Rejection; gas?: bigint } | 'renew'> => {
    const sorted = (rejection: Rejection) => (rejection.reason === EVM_REJECTION.settlementGasTooHigh ? { tooHigh: rejection } : { reverted: rejection })
    if (estimate) {
      const outcome = await answered<{ gas: bigint } | { rejection: Rejection }>(estimate)
      return outcome === 'renew' ? outcome : 'rejection' in outcome ? sorted(outcome.rejection) : outcome
    }
    if (atCap) {
      const outcome = await answered<{ limit: bigint } | { rejection: Rejection }>(atCap)
      return outcome === 'renew' ? outcome : 'rejection' in outcome ? sorted(outcome.rejection) : {}
    }
    if (!deploymentEstimates) return {}
    const [deploymentGas, bothGas] = [await answered<{ gas: bigint } | { rejection: Rejection }>(deploymentEstimates[0]), await answered<{ gas: bigint } | { rejection: Rejection }>(deploymentEstimates[1])]
    if (deploymentGas === 'renew' || bothGas === 'renew') return 'renew'
    const price = deploymentPrice(deploymentGas, bothGas, options.maxSettlementGas)
    return 'rejection' in price ? sorted(price.rejection) : {}
  }

  if (exhausted) {
    const said = await estimates()
    if (said === 'renew') return again()
    if (said.tooHigh) return verdict(said.tooHigh, payment)
    if (pricing === 'fixed' && (await codeRead) !== '0x') return priceWalletPayer(false)
    const limit = pricing === 'fixed' ? `the settlement's gas limit of ${gas}` : `its ${gas} gas (the token, or the payer's wallet, burns gas)`
    return verdict(simulationFailed(`the chain check ran out of ${limit}`), payment)
  }

  if (raw === '0x') {
    // A dev chain (a plain anvil, hardhat) starts without it: say what to do, not only what is wrong.
    throw new FacilitatorError(
      'misconfigured',
      `Multicall3 is not deployed at ${runtime.multicall3} on ${runtime.network.caip2}: every verify reads the chain through it. ` +
        `Deploy Multicall3 there (on a dev chain: anvil_setCode or hardhat_setCode with its runtime code, read with eth_getCode ` +
        `from any public chain, or fork one with anvil --fork-url), or set this network's multicall3 option to where it is deployed ` +
        `(see docs/local-development.md in the package)`,
    )
  }
  let results: Aggregate3Result[]
  try {
    results = decodeAggregate3Result(raw!, calls.length)
  } catch (error) {
    const why = error instanceof Error ? ` (${error.message})` : ''
    throw new FacilitatorError('rpc_error', `reading the chain state: the RPC answered the Multicall3 call with data that is not an aggregate3 result${why}`, { cause: error })
  }
  // One result per call (the decoder checked the count).
  const at = (index: number) => results[index]!
  const walletDeployed = deployment ? hasCode(at(0)) : true
  const balanceRead = at(readsAt)
  const balance = isWord(balanceRead) ? BigInt(balanceRead.returnData.slice(0, 66)) : undefined
  const readsRejection = readsVerdict(payment, balanceRead, at(readsAt + 1))
  const simulation = simulationAt === undefined ? undefined : at(simulationAt)
  const simulationRejection =
    simulation && !simulation.success ? simulationFailed(`a simulation of transferWithAuthorization reverted${revertReason(simulation.returnData)}`) : undefined

  if (pricing !== 'fixed') {
    // An ERC-6492 signature of a wallet deployed already: its transfer alone is priced (the factory is not called again).
    if (deployment && walletDeployed) return check(runtime, { ...payment, kind: 'erc1271', deployment: undefined }, options, true, feesRenewed)
    if (readsRejection) return verdict(readsRejection, payment, balance, undefined, walletDeployed)
    const said = await estimates()
    if (said === 'renew') return again()
    // A price above the cap first: a wallet that burns gas fails its own signature check in the Multicall3 call too.
    if (said.tooHigh) return verdict(said.tooHigh, payment, balance, undefined, walletDeployed)
    if (signatureAt !== undefined && !isMagicValue(at(signatureAt))) return verdict(badSignature, payment, balance, undefined, walletDeployed)
    const reverted = said.reverted ?? simulationRejection
    if (reverted) return verdict(reverted, payment, balance, undefined, walletDeployed)
    if (credit) {
      // Last: a payment that fails anything else is named by that (its transfer reverts in the probe too).
      const proven = await credit
      if ('fault' in proven) throw proven.fault
      if ('staleFees' in proven) {
        if (feesRenewed) throw new FacilitatorError('rpc_error', 'proving what the payee receives: the node refused a fresh fee quote as below its base fee')
        return again()
      }
      if (proven.rejection) return verdict(proven.rejection, payment, balance, undefined, walletDeployed)
    }
    const simulation = pricing === 'cap' ? { fees: sender.fees, gas: options.maxSettlementGas } : undefined
    return verdict(undefined, priceByEstimate ? { ...payment, kind: 'erc1271' } : payment, balance, said.gas, walletDeployed, simulation)
  }

  // Fixed: a plain account on a known token, unless the payer turns out to have code.
  const code = await codeRead
  const rejection = readsRejection ?? simulationRejection
  if (code === '0x') {
    const plain: PreparedPayment = { ...payment, kind: 'eoa' }
    // An `eoa` signature was recovered to the payer already; an `unproven` one the passing simulation proved.
    if (kind === 'eoa' || !rejection) return verdict(rejection, plain, balance)
    return (await kindByRecovery(digest, signature, payer)) === 'eoa' ? verdict(rejection, plain, balance) : verdict(badSignature, payment, balance)
  }
  if (readsRejection) return verdict(readsRejection, { ...payment, kind: 'erc1271' }, balance)
  return priceWalletPayer(simulation?.success === true)

  /**
   * A known token's payer with code: priced, and proven, by an estimate run as the real transaction.
   * `tookIt`: the fixed-limit simulation succeeded, so the token takes this calldata; the estimate
   * follows in a second request. Otherwise the payment is checked again, priced by an estimate:
   * with (v,r,s) when the payer's own key signed (EIP-7702), else as a smart wallet's signature.
   */
  async function priceWalletPayer(tookIt: boolean): Promise<ChainVerdict> {
    const wallet: PreparedPayment = { ...payment, kind: 'erc1271' }
    if (tookIt) {
      const outcome = await answered<{ gas: bigint } | { rejection: Rejection }>(estimateSettlementGas(runtime, sender, transfer, options.maxSettlementGas))
      if (outcome === 'renew') return again()
      return 'rejection' in outcome ? verdict(outcome.rejection, wallet, balance) : verdict(undefined, wallet, balance, outcome.gas)
    }
    const ownKey = kind === 'eoa' || (await kindByRecovery(digest, signature, payer)) === 'eoa'
    const retry: PreparedPayment = ownKey ? { ...payment, kind: 'eoa' } : { ...wallet, transferCalldata: transferCalldata(payment.payload, 'erc1271', signature) }
    return check(runtime, retry, options, true, feesRenewed)
  }
}

/** The first failed read, in the order a payer should hear of them. */
function readsVerdict(payment: PreparedPayment, balance: Aggregate3Result, used: Aggregate3Result): Rejection | undefined {
  const { asset } = payment
  // A call to an address without code "succeeds" with no return data, and so would the simulated
  // transfer: settle would then pay gas for a transaction that moves nothing. A token answers both reads.
  if (!isWord(balance) || !isWord(used)) {
    return { reason: EVM_REJECTION.assetNotAToken, message: `asset ${asset} does not answer balanceOf and authorizationState (not an EIP-3009 token)` }
  }
  if (readBool(used.returnData)) {
    return { reason: EVM_REJECTION.nonceUsed, message: 'the authorization nonce has already been used or canceled' }
  }
  const amount = BigInt(balance.returnData.slice(0, 66))
  if (amount < payment.payload.authorization.value) {
    return { reason: EVM_REJECTION.insufficientFunds, message: `the payer's balance ${amount} is below ${payment.payload.authorization.value}` }
  }
  return undefined
}

/** An ERC-1271 answer counts only when the call succeeded and returned the magic value. */
export function isMagicValue(result: { success: boolean; returnData: Hex }): boolean {
  return result.success && result.returnData.length >= 66 && result.returnData.slice(0, 10).toLowerCase() === ERC1271_MAGIC_VALUE
}

/** A call that succeeded and returned at least one full 32-byte word. */
function isWord(result: { success: boolean; returnData: Hex }): boolean {
  return result.success && result.returnData.length >= 66
}

// A call to an address without code succeeds with empty return data.
function hasCode(result: { success: boolean; returnData: Hex }): boolean {
  return !result.success || result.returnData !== '0x'
}

function readBool(data: Hex): boolean {
  return BigInt(data.slice(0, 66)) !== 0n
}
