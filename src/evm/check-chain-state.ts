import { decodeErrorResult, type Hex } from 'viem'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { ERC1271_MAGIC_VALUE } from './abi.js'
import { aggregate3Calldata, authorizationStateCalldata, balanceOfCalldata, decodeAggregate3Result, isValidSignatureCalldata, type Aggregate3Call, type Aggregate3Result } from './calldata.js'
import type { NetworkRuntime } from './network-runtime.js'
import { kindByRecovery, transferCalldata, type PreparedPayment } from './prepare-payment.js'
import { EVM_REJECTION, type Rejection } from './reasons.js'
import { toRpcFault } from './rpc-fault.js'

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
}

/**
 * Checks signature, nonce, balance and a simulation of the exact settlement
 * call in one `eth_call` to Multicall3 `aggregate3` (with an `unproven` or
 * `eoa` signature, also the payer's code, in the same batch; see below).
 *
 * The calls run in order inside one simulated block, so state changes carry
 * over: an ERC-6492 factory call deploys the wallet before its ERC-1271 check,
 * and the reads come before the simulated transfer that would change them.
 *
 * An `unproven` signature (see `preparePayment`'s `deferSignerCheck`) is checked
 * by the chain: the (v,r,s) transfer is simulated, and the payer's code is read
 * with `eth_getCode` in the same JSON-RPC batch (the default transport sends
 * both as one request). When the reads pass and the simulated transfer
 * succeeds, the token itself checked the signature, and nothing is recovered
 * here (the recovery is most of a verify's CPU). A payer with code then counts
 * as a smart wallet, so settle prices its transfer by an estimate: the token
 * may run the wallet's `isValidSignature` at our expense. The code comes from
 * the node, not from a call into the payer, which a contract could answer as
 * it likes. When a check fails, the signer is recovered offline as for any
 * payment, so that a bad signature is named as one; a payer with code whose
 * signature does not recover to it is checked again as a smart wallet (its
 * `isValidSignature` and the `bytes` overload, a second request), which names
 * the reason, and accepts it on a token that only recovers (v,r,s).
 *
 * An `eoa` signature (recovered offline to the payer) whose payer has code is an
 * EIP-7702 account: a token that checks signatures as USDC v2.2 does runs its
 * delegate's `isValidSignature`, so it is priced by an estimate too.
 */
export async function checkChainState(runtime: NetworkRuntime, payment: PreparedPayment): Promise<ChainVerdict> {
  const { payer, asset, digest, signature, deployment, kind } = payment
  const { nonce } = payment.payload.authorization
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
  if (kind === 'erc1271' || kind === 'erc6492') calls.push(isValidSignature)
  const readsAt = calls.length
  calls.push(
    { target: asset, allowFailure: true, callData: balanceOfCalldata(payer) },
    { target: asset, allowFailure: true, callData: authorizationStateCalldata(payer, nonce) },
    { target: asset, allowFailure: true, callData: payment.transferCalldata },
  )

  const data = aggregate3Calldata(calls)
  // A plain signature's payer may have code (a smart wallet, an EIP-7702 account): read it beside the call.
  const readsCode = kind === 'unproven' || kind === 'eoa'
  let raw: Hex
  let code: Hex | undefined
  try {
    // Issued in the same tick: the default transport sends them as one JSON-RPC batch (with other verifies' made meanwhile).
    ;[raw, code] = await Promise.all([
      runtime.client.request({ method: 'eth_call', params: [{ to: runtime.multicall3, data }, 'latest'] }),
      // Without an answer the payer counts as having code: its settle is then priced by an estimate.
      readsCode ? runtime.client.request({ method: 'eth_getCode', params: [payer, 'latest'] }).catch(() => undefined) : undefined,
    ])
  } catch (error) {
    throw toRpcFault(error, 'reading the chain state')
  }
  if (raw === '0x') {
    throw new FacilitatorError('misconfigured', `Multicall3 is not deployed at ${runtime.multicall3} on ${runtime.network.caip2}`)
  }
  let results: Aggregate3Result[]
  try {
    results = decodeAggregate3Result(raw, calls.length)
  } catch (error) {
    const why = error instanceof Error ? ` (${error.message})` : ''
    throw new FacilitatorError('rpc_error', `reading the chain state: the RPC answered the Multicall3 call with data that is not an aggregate3 result${why}`, { cause: error })
  }
  // One result per call (the decoder checked the count).
  const at = (index: number) => results[index]!

  const walletDeployed = deployment ? hasCode(at(0)) : true
  const verdict = (rejection: Rejection | undefined, checked = payment): ChainVerdict => ({ rejection, walletDeployed, payment: checked })
  const badSignature: Rejection = { reason: EVM_REJECTION.signature, message: 'the signature is not valid for the payer (EOA, ERC-1271 and ERC-6492 checks failed)' }

  if (readsCode) {
    // Anything but an empty answer counts as code: a payer with code only has its settle priced more carefully.
    const plainAccount = code === '0x'
    const priced: PreparedPayment = { ...payment, kind: plainAccount ? 'eoa' : 'erc1271' }
    const rejection = readsVerdict(payment, results, readsAt)
    // An `eoa` signature was recovered to the payer already; an `unproven` one the passing simulation proved.
    if (kind === 'eoa' || !rejection) return verdict(rejection, priced)
    const signer = await kindByRecovery(digest, signature, payer)
    if (signer === 'eoa') return verdict(rejection, priced)
    if (plainAccount) return verdict(badSignature)
    // A smart wallet whose token may take only the `bytes` overload: its own check names the reason.
    return checkChainState(runtime, { ...payment, kind: 'erc1271', transferCalldata: transferCalldata(payment.payload, 'erc1271', signature) })
  }
  if (!isMagicValue(at(readsAt - 1))) return verdict(badSignature)
  return verdict(readsVerdict(payment, results, readsAt))
}

/** The first failed read or the failed simulation, in the order a payer should hear of them. */
function readsVerdict(payment: PreparedPayment, results: readonly Aggregate3Result[], readsAt: number): Rejection | undefined {
  const { asset } = payment
  const balance = results[readsAt]!
  const used = results[readsAt + 1]!
  const simulation = results[readsAt + 2]!
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
  if (!simulation.success) {
    return { reason: EVM_REJECTION.simulationFailed, message: `a simulation of transferWithAuthorization reverted${revertReason(simulation.returnData)}` }
  }
  return undefined
}

/** An ERC-1271 answer counts only when the call succeeded and returned the magic value. */
function isMagicValue(result: { success: boolean; returnData: Hex }): boolean {
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

function revertReason(data: Hex): string {
  if (data === '0x') return ''
  try {
    const decoded = decodeErrorResult({ abi: [], data })
    const reason = decoded.args?.[0]
    return typeof reason === 'string' ? `: ${reason.slice(0, 200)}` : ` (${decoded.errorName})`
  } catch {
    return ` (${data.slice(0, 10)})`
  }
}
