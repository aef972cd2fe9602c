import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * A count option (requests in flight, transactions per batch): `value`, or `fallback` when it is
 * not given, which must be an integer from 1 to `max`; anything else is `misconfigured`, naming
 * the option.
 *
 * @example
 * const maxInFlight = countOption(config.maxRpcRequestsInFlight, 8, 1_000, 'exactEvm: maxRpcRequestsInFlight')
 */
export function countOption(value: number | undefined, fallback: number, max: number, name: string): number {
  const count = value ?? fallback
  if (!(Number.isInteger(count) && count >= 1 && count <= max)) throw new FacilitatorError('misconfigured', `${name} must be an integer from 1 to ${max}`)
  return count
}
