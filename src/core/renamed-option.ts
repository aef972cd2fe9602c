import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * The value of an option that also has a deprecated name: the current name wins, the old one is
 * still read, and the two set to different values is `misconfigured` (one of them would be ignored).
 */
export function renamedOption<T>(where: string, current: readonly [name: string, value: T | undefined], deprecated: readonly [name: string, value: T | undefined]): T | undefined {
  const [name, value] = current
  const [oldName, oldValue] = deprecated
  if (value !== undefined && oldValue !== undefined && value !== oldValue) {
    throw new FacilitatorError('misconfigured', `${where}: ${name} and its deprecated name ${oldName} are both set, to different values; set only ${name}`)
  }
  return value ?? oldValue
}
