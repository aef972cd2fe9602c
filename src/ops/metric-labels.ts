import type { RefusalEvent, SettleEvent, VerifyEvent } from '../core/hooks.js'
import { FAULT_STATUS } from '../errors/facilitator-error.js'
import { REJECTION } from '../errors/reasons.js'
import { EIP2612_REJECTION, EVM_REJECTION, PERMIT2_REJECTION, UPTO_REJECTION } from '../evm/reasons.js'
import { SVM_REASON } from '../svm/reasons.js'

/** The network and scheme label of a request no adapter of this facilitator served. */
export const UNSUPPORTED_LABEL = 'unsupported'
/** The outcome label of a reason code this library does not know. */
export const OTHER_OUTCOME = 'other'

/**
 * Every outcome the library itself answers: the answers (`valid`, `success`, and `invalid` /
 * `failed` when a rejection carries no code), every rejection code of the core and the
 * adapters, and every fault code. Constants only (the code tables import nothing), so the
 * metrics entry loads no chain library.
 */
export const KNOWN_OUTCOMES: ReadonlySet<string> = new Set<string>([
  'valid',
  'invalid',
  'success',
  'failed',
  ...Object.keys(FAULT_STATUS),
  ...Object.values(REJECTION),
  ...Object.values(EVM_REJECTION),
  ...Object.values(PERMIT2_REJECTION),
  ...Object.values(EIP2612_REJECTION),
  ...Object.values(UPTO_REJECTION),
  ...Object.values(SVM_REASON),
])

/** The labels of one verify or settle in the metrics. */
export interface MetricLabels {
  /** The CAIP-2 id of the network the adapter served, or `unsupported`. */
  readonly network: string
  /** The scheme the adapter served, or `unsupported`. */
  readonly scheme: string
  /** `valid` / `success`, a known reason or fault code, or `other`. */
  readonly outcome: string
}

/**
 * The bounded labels of a verify, settle or refusal event: the one place where the metrics
 * turn a request into label values, so that no value a client writes becomes a series.
 *
 * - `network` and `scheme` come from the event's context only, which the core builds from the
 *   registry entry a request matched: a request no adapter served (an unsupported scheme,
 *   network or version, a payload naming other requirements, a malformed body) has no context
 *   and counts as `unsupported`. The network is the CAIP-2 id, one value per served network
 *   whichever name (v1 or CAIP-2) the request used.
 * - `outcome` is a code from `known` (by default {@link KNOWN_OUTCOMES}), else `other`: codes
 *   come from this library, a hook of the operator or an adapter of its own, never from the
 *   request, and still only listed ones become series.
 *
 * The series are thus at most (served kinds + 1) x (known outcomes + 1), whatever the traffic.
 * Costs a Set lookup per event.
 *
 * @example
 * // partial
 * metricLabels({ operation: 'verify', request, context: undefined, result: { isValid: false, invalidReason: 'invalid_network' }, durationMs: 1 })
 * // { network: 'unsupported', scheme: 'unsupported', outcome: 'invalid_network' }
 */
export function metricLabels(event: VerifyEvent | SettleEvent | RefusalEvent, known: ReadonlySet<string> = KNOWN_OUTCOMES): MetricLabels {
  if (!('result' in event)) return { network: UNSUPPORTED_LABEL, scheme: UNSUPPORTED_LABEL, outcome: known.has(event.reason) ? event.reason : OTHER_OUTCOME }
  const code = event.fault?.code ?? outcomeOf(event)
  return {
    network: event.context?.network ?? UNSUPPORTED_LABEL,
    scheme: event.context?.scheme ?? UNSUPPORTED_LABEL,
    outcome: known.has(code) ? code : OTHER_OUTCOME,
  }
}

function outcomeOf(event: VerifyEvent | SettleEvent): string {
  if (event.operation === 'verify') {
    const { result } = event as VerifyEvent
    return result.isValid ? 'valid' : (result.invalidReason ?? 'invalid')
  }
  const { result } = event as SettleEvent
  return result.success ? 'success' : (result.errorReason ?? 'failed')
}

/** What became of a settlement's transactions, for the cost they had: the label of `settlement_cost_total`. */
export type CostOutcome = 'landed' | 'reverted' | 'failed'

/**
 * The outcome a settle's cost is counted under: `landed` when the payment settled, `reverted` when
 * its transaction was included and failed (`transaction_failed`: an EVM revert, a Solana instruction
 * error), `failed` for any other answer that cost something (a smart-wallet deployment paid before
 * the payment was refused, a fault after a transaction landed). Three values, whatever the traffic.
 *
 * @example
 * // partial
 * costOutcome(event) // 'reverted' for { success: false, errorReason: 'transaction_failed' }
 */
export function costOutcome(event: SettleEvent): CostOutcome {
  if (event.fault) return 'failed'
  if (event.result.success) return 'landed'
  return event.result.errorReason === REJECTION.transactionFailed ? 'reverted' : 'failed'
}
