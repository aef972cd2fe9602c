import { FacilitatorError } from '../errors/facilitator-error.js'
import type { SettlementStore, StatsStore } from './store.js'

const KEY_VALUE_METHODS = ['get', 'set', 'delete', 'incrementFields', 'readFields'] as const

/** The methods of each role, as a store must offer them. */
export const STORE_ROLE_METHODS = {
  settlement: [...KEY_VALUE_METHODS, 'placeHold', 'closeHold'],
  statistics: [...KEY_VALUE_METHODS, 'setTextFields', 'readTextFields', 'addDistinct', 'countDistinct', 'incrementRanked', 'readRanked', 'countRanked'],
} as const satisfies { settlement: readonly (keyof SettlementStore)[]; statistics: readonly (keyof StatsStore)[] }

interface RoleOf {
  settlement: SettlementStore
  statistics: StatsStore
}

/**
 * Throws `misconfigured`, naming `who` and the missing methods, unless `store` offers every
 * method of `role`: a store of the wrong role fails when it is wired, not at the first payment.
 *
 * @example
 * // partial
 * requireStoreRole(options.store, 'statistics', 'createPublicStats')
 */
export function requireStoreRole<R extends keyof RoleOf>(store: unknown, role: R, who: string): asserts store is RoleOf[R] {
  const missing = STORE_ROLE_METHODS[role].filter((method) => typeof (store as Record<string, unknown> | undefined)?.[method] !== 'function')
  if (missing.length === 0) return
  if (missing.length === STORE_ROLE_METHODS[role].length) throw new FacilitatorError('misconfigured', `${who}: \`store\` is not a store`)
  const need = role === 'settlement' ? 'a SettlementStore' : 'a StatsStore: statistics and the catalog need a store of their own beside a settlement-only one (createMemoryStore(), SQLite, Redis or PostgreSQL)'
  throw new FacilitatorError('misconfigured', `${who}: \`store\` has no ${missing.join(', ')}; it must be ${need}`)
}
