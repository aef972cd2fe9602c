import type { Address, Hex } from 'viem'
import type { FeeQuote } from './network-runtime.js'

/** A settlement call verify ran as `eth_call` exactly as settle sends it (at `maxSettlementGas`). */
export interface VerifiedSimulation {
  readonly from: Address
  readonly fees: FeeQuote
  readonly data: Hex
  /** When the simulation's answer was read (ms since the epoch): an older one is run again before sending. */
  readonly at: number
}

/**
 * How old verify's simulation may be for settle to send without running it again: the core's verify
 * right before a settle is milliseconds old; one from a call that waited on another's claim is not.
 */
const SIMULATION_REUSE_MS = 2_000

/** Whether verify's simulation ran this very call (signer, calldata, fees) less than SIMULATION_REUSE_MS ago. */
export function ranJustNow(verified: VerifiedSimulation | undefined, call: { from: Address; data: Hex; fees: FeeQuote }): boolean {
  return verified !== undefined && verified.from === call.from && verified.data === call.data && sameFees(verified.fees, call.fees) && Date.now() - verified.at <= SIMULATION_REUSE_MS
}

function sameFees(a: FeeQuote, b: FeeQuote): boolean {
  if ('gasPrice' in a || 'gasPrice' in b) return 'gasPrice' in a && 'gasPrice' in b && a.gasPrice === b.gasPrice
  return a.maxFeePerGas === b.maxFeePerGas && a.maxPriorityFeePerGas === b.maxPriorityFeePerGas
}
