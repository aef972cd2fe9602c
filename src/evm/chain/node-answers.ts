import { BaseError, decodeErrorResult, RpcRequestError, type Address, type Hex } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { FeeQuote, NetworkRuntime } from './network-runtime.js'
import { toRpcFault } from './rpc-fault.js'

// What a node's answer to a call, estimate or send means: shared by the settlement's simulation and the payee probe.

/**
 * Who sends a settlement and with which fees: every simulation and estimate of it runs
 * as this sender with these fees, because a contract can tell a call without them
 * (`tx.gasprice == 0`, `tx.origin` the zero address) from the transaction that lands.
 */
export interface SettlementSender {
  readonly from: Address
  readonly fees: FeeQuote
}

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
export function nodeAnswer(error: unknown): RpcRequestError | undefined {
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
