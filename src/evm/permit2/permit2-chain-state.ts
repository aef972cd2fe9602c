import { encodeFunctionData, type Hex } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { NetworkRuntime } from '../chain/network-runtime.js'
import { PAYEE_PROBE_GAS, payeeRejection, probePayeeCredit } from '../chain/payee-probe.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { simulateAtLimit } from '../chain/settlement-simulation.js'
import { feeFields, nodeRefusal, quantity, unfundedSigner, type SettlementSender } from '../chain/node-answers.js'
import { aggregate3Calldata, allowanceCalldata, balanceOfCalldata, decodeAggregate3Result, isValidSignatureCalldata, nonceBitmapCalldata, PERMIT2_GETTER_CALLDATA, type Aggregate3Call, type Aggregate3Result } from '../codec/calldata.js'
import { eip2612NoncesAbi, PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from '../codec/permit2-abi.js'
import { isMagicValue } from '../exact/check-chain-state.js'
import { EVM_REJECTION, PERMIT2_REJECTION, type Rejection } from '../reasons.js'
import type { PreparedPermit2 } from './permit2-prepare.js'

/** What the chain said about a prepared Permit2 payment. */
export interface Permit2Verdict {
  readonly rejection: Rejection | undefined
  /**
   * What the proxy can move from the payer: its balance, capped by its allowance to Permit2 as it
   * will stand when the transfer runs (the permit's value when its nonce is the token's current one,
   * since EIP-2612 `permit` sets the allowance). Held against payments racing from the same payer.
   */
  readonly balance: bigint | undefined
  /**
   * The payment carries an EIP-2612 permit but the payer's allowance to Permit2 already covers it:
   * settle must then call plain `settle`. `settleWithPermit` would set the allowance down to the
   * permit's value, and another payment of this payer verified against the larger allowance would
   * revert at the facilitator's cost.
   */
  readonly permitUnneeded?: boolean
}

// Gas for Multicall3 and its reads (a wallet's ERC-1271 check may take more: it fails alone).
const READS_GAS = 200_000n

/**
 * The chain state of a Permit2 payment in one HTTP round trip: a Multicall3 `eth_call` (the token's
 * balance and allowance to Permit2, Permit2's nonce bit, the proxy's code, and, for a signature that
 * does not recover to the payer, the wallet's ERC-1271 answer) and, in the same JSON-RPC batch, an
 * `eth_call` of the exact proxy call settle sends (`settleWithPermit` with an EIP-2612 permit), run
 * as its sender with its fees and with `maxSettlementGas` as its gas limit, the limit settle sends
 * it with (not an `eth_estimateGas`, which runs the call many times; the proxy call's price is
 * bounded by the same cap either way). For an ERC-6492 signature the wallet's
 * code is read in the same batch. Reads come first in the answer: they name why a simulation
 * reverts (the official codes), and a spent nonce gets its own code. With an EIP-2612 permit the
 * read also takes the token's `nonces(payer)`, and a low allowance is only a rejection when the
 * simulation (which runs the permit) fails. For a token outside the known table, a third call in the
 * batch proves that the proxy call credits `payTo` with exactly the amount (see probePayeeCredit).
 */
export async function checkPermit2State(runtime: NetworkRuntime, payment: PreparedPermit2, sender: SettlementSender, maxSettlementGas: bigint): Promise<Permit2Verdict> {
  const { payer, asset, payload } = payment
  const proxy = payment.proxy ?? X402_EXACT_PERMIT2_PROXY
  const calls: Aggregate3Call[] = [
    { target: asset, allowFailure: true, callData: balanceOfCalldata(payer) },
    { target: asset, allowFailure: true, callData: allowanceCalldata(payer, PERMIT2_ADDRESS) },
    { target: PERMIT2_ADDRESS, allowFailure: true, callData: nonceBitmapCalldata(payer, payload.nonce >> 8n) },
    { target: proxy, allowFailure: true, callData: PERMIT2_GETTER_CALLDATA },
  ]
  const walletIndex = payment.recovered ? -1 : calls.push({ target: payer, allowFailure: true, callData: isValidSignatureCalldata(payment.digest, payload.signature) }) - 1
  const permitNonceIndex = payment.permit2612 ? calls.push({ target: asset, allowFailure: true, callData: encodeFunctionData({ abi: eip2612NoncesAbi, functionName: 'nonces', args: [payer] }) }) - 1 : -1
  // Issued in the same tick: the transport sends both as one JSON-RPC batch.
  const multicall = runtime.client.request({
    method: 'eth_call',
    params: [{ from: sender.from, to: runtime.multicall3, data: aggregate3Calldata(calls), gas: quantity(READS_GAS), ...feeFields(sender.fees) }, 'latest'],
  })
  const simulation = simulateAtLimit(runtime, sender, { to: proxy, data: payment.settleCalldata }, maxSettlementGas)
  // A token outside the known table: the same proxy call, run as its sender between two reads of payTo's
  // balance (see probePayeeCredit), in the same batch. A known token's verify sends nothing more.
  const credit = payment.payee ? probePayeeCredit(runtime, sender, [{ to: proxy, data: payment.settleCalldata }], payment.payee, maxSettlementGas + PAYEE_PROBE_GAS) : undefined
  // An ERC-6492 signature: whether the wallet has code, read from the node in the same batch.
  const codeRead = payment.deployment
    ? runtime.client.request({ method: 'eth_getCode', params: [payer, 'latest'] }).then(
        (code) => ({ code }),
        (error: unknown) => ({ fault: toRpcFault(error, 'reading the payer wallet') }),
      )
    : undefined
  let raw: Hex
  try {
    raw = await multicall
  } catch (error) {
    await simulation
    await codeRead
    if (nodeRefusal(error) === 'unfunded') throw unfundedSigner(runtime, sender.from, error)
    throw toRpcFault(error, 'reading the Permit2 payment state')
  }
  if (raw === '0x') throw new FacilitatorError('misconfigured', `Multicall3 is not deployed at ${runtime.multicall3} on ${runtime.network.caip2}`)
  let results: Aggregate3Result[]
  try {
    results = decodeAggregate3Result(raw, calls.length)
  } catch (error) {
    throw new FacilitatorError('rpc_error', 'reading the Permit2 payment state: the RPC answered with data that is not an aggregate3 result', { cause: error })
  }
  const word = (index: number): bigint | undefined => {
    const result = results[index]!
    return result.success && result.returnData.length >= 66 ? BigInt(result.returnData.slice(0, 66)) : undefined
  }
  const balance = word(0)
  const allowance = word(1)
  const bitmap = word(2)
  const { permit2612 } = payment
  const tokenNonce = permitNonceIndex < 0 ? undefined : word(permitNonceIndex)
  // EIP-2612 permit sets the allowance: with the token's current nonce it will stand at the permit's value.
  // An allowance that covers the payment makes the permit unneeded: settle skips it (see permitUnneeded).
  const permitUnneeded = permit2612 !== undefined && allowance !== undefined && allowance >= payload.amount
  const permitApplies = permit2612 !== undefined && !permitUnneeded && tokenNonce === permit2612.nonce
  const spendable = allowance === undefined ? undefined : permitApplies ? permit2612.value : allowance
  const movable = balance === undefined || spendable === undefined ? balance : balance < spendable ? balance : spendable
  const verdict = (rejection: Rejection | undefined): Permit2Verdict => ({ rejection, balance: movable, ...(permitUnneeded ? { permitUnneeded } : {}) })
  const outcome = await simulation
  if ('fault' in outcome) throw outcome.fault
  const wallet = await codeRead
  if (wallet && 'fault' in wallet) throw wallet.fault
  if (balance === undefined || allowance === undefined) {
    return verdict({ reason: PERMIT2_REJECTION.assetNotDeployed, message: `asset ${asset} does not answer balanceOf and allowance (no ERC-20 contract there)` })
  }
  if (wallet && (wallet.code === undefined || wallet.code === '0x')) {
    // Unlike an EIP-3009 payment, deploying it would not help: approve (to Permit2) must come from the wallet itself.
    return verdict({
      reason: EVM_REJECTION.undeployedWallet,
      message: `the payer's smart wallet ${payer} is not deployed (an ERC-6492 signature): a wallet without code cannot have approved Permit2, so this Permit2 payment could not settle; deploy the wallet and approve Permit2 from it first`,
    })
  }
  if (walletIndex >= 0 && !isMagicValue(results[walletIndex]!)) {
    return verdict({ reason: PERMIT2_REJECTION.signature, message: 'the signature is not valid for the payer (neither its key nor its ERC-1271 wallet signed this permit)' })
  }
  if (word(3) === undefined) {
    return verdict({ reason: PERMIT2_REJECTION.proxyNotDeployed, message: `the x402 Permit2 proxy is not deployed at ${proxy} on ${runtime.network.caip2}` })
  }
  if (bitmap === undefined) {
    return verdict({ reason: PERMIT2_REJECTION.proxyNotDeployed, message: `Permit2 is not deployed at ${PERMIT2_ADDRESS} on ${runtime.network.caip2}` })
  }
  if ((bitmap >> (payload.nonce & 0xffn)) & 1n) {
    return verdict({ reason: PERMIT2_REJECTION.nonceUsed, message: 'this Permit2 nonce has already been used (the payment was settled, or the payer invalidated it)' })
  }
  if (balance < payload.amount) {
    return verdict({ reason: PERMIT2_REJECTION.insufficientBalance, message: `the payer's balance ${balance} is below ${payload.amount}` })
  }
  // With a permit the simulation runs it: a low allowance only matters when the simulation fails.
  if (allowance < payload.amount && !(permit2612 && !('rejection' in outcome))) {
    if (!permit2612) {
      return verdict({ reason: PERMIT2_REJECTION.allowanceRequired, message: `the payer's allowance to Permit2 (${allowance}) is below ${payload.amount}: the payer must approve Permit2 first` })
    }
    const why =
      tokenNonce === undefined
        ? 'the token does not answer nonces(owner): it has no EIP-2612 permit'
        : tokenNonce !== permit2612.nonce
          ? `the permit was signed for token nonce ${permit2612.nonce}, the payer's current nonce is ${tokenNonce} (used or not yet reached)`
          : 'the token refused the permit (its signature is not the payer\'s for this token\'s domain)'
    return verdict({ reason: PERMIT2_REJECTION.allowanceRequired, message: `the payer's allowance to Permit2 (${allowance}) is below ${payload.amount} and the eip2612GasSponsoring permit would not raise it: ${why}` })
  }
  if ('staleFees' in outcome) throw new FacilitatorError('rpc_error', 'simulating the Permit2 settlement: the node found the fee quote below its base fee; retry')
  if ('rejection' in outcome) {
    const { rejection } = outcome
    return verdict(rejection.reason === EVM_REJECTION.simulationFailed ? { reason: PERMIT2_REJECTION.simulationFailed, message: rejection.message } : rejection)
  }
  if (credit) {
    const refused = payeeRejection(await credit)
    if (refused) return verdict(refused)
  }
  // The proxy call ran at maxSettlementGas, the limit settle sends it with.
  return verdict(undefined)
}
