import type { RefusalEvent, SettleEvent, VerifyEvent } from '../core/hooks.js'
import { REJECTION } from '../errors/reasons.js'
import { EIP2612_REJECTION, EVM_REJECTION } from '../evm/reasons.js'
import { SVM_REASON } from '../svm/reasons.js'

/**
 * Why a request was refused before the payment checks, as the public statistics count it:
 *
 * - `unsupportedKind`: a scheme or network no adapter serves (`unsupported_scheme`, `invalid_network`).
 * - `unsupportedVersion`: an x402 version other than 1 and 2 (`invalid_x402_version`).
 * - `mismatch`: the payload names another scheme, network or requirements than the request
 *   (`invalid_scheme`, `network_mismatch`, `accepted_requirements_mismatch`).
 * - `malformed`: a body that does not fit the x402 schema (`invalid_request`), or a payload or
 *   requirements the adapter cannot read (`invalid_payload`, `invalid_payment_requirements`,
 *   an undecodable Solana transaction, a malformed EIP-2612 extension).
 */
export const REFUSAL_KINDS = ['unsupportedKind', 'unsupportedVersion', 'mismatch', 'malformed'] as const
export type RefusalKind = (typeof REFUSAL_KINDS)[number]

// Refusals of the core, before a request reaches an adapter (the event has no context).
const BEFORE_ROUTING: ReadonlyMap<string, RefusalKind> = new Map<string, RefusalKind>([
  [REJECTION.unsupportedScheme, 'unsupportedKind'],
  [REJECTION.invalidNetwork, 'unsupportedKind'],
  [REJECTION.invalidVersion, 'unsupportedVersion'],
  [REJECTION.schemeMismatch, 'mismatch'],
  [REJECTION.networkMismatch, 'mismatch'],
  [REJECTION.acceptedMismatch, 'mismatch'],
  ['invalid_request', 'malformed'],
])

// Refusals of an adapter that could not read the payment, before any check of what it says.
const UNREADABLE = new Set<string>([
  REJECTION.invalidPayload,
  EVM_REJECTION.invalidRequirements,
  SVM_REASON.invalidPayload,
  SVM_REASON.undecodable,
  EIP2612_REJECTION.invalidFormat,
])

/**
 * Whether an event is a refusal before the payment checks, and of which kind; `undefined` for a
 * payment that reached them (an adapter of this facilitator read it and judged it: valid,
 * invalid, settled, failed, or a fault while checking). Refusals stay out of the verification
 * and settlement counts and their success rates, so requests nobody could pay with (a network
 * this facilitator does not serve, a malformed body) cannot drag those rates down.
 *
 * A request with no context never reached an adapter: it is a refusal whatever its code (an
 * unknown one counts as `unsupportedKind`).
 *
 * @example
 * // partial
 * refusalOf({ operation: 'verify', reason: 'invalid_request' }) // 'malformed'
 */
export function refusalOf(event: VerifyEvent | SettleEvent | RefusalEvent): RefusalKind | undefined {
  if (!('result' in event)) return BEFORE_ROUTING.get(event.reason) ?? 'malformed'
  const code = event.fault?.code ?? (event.operation === 'verify' ? (event as VerifyEvent).result.invalidReason : (event as SettleEvent).result.errorReason)
  if (!event.context) return (code && BEFORE_ROUTING.get(code)) || 'unsupportedKind'
  // A fault is the facilitator's, not the payment's: it stays in `errors`.
  if (event.fault) return undefined
  return code !== undefined && UNREADABLE.has(code) ? 'malformed' : undefined
}
