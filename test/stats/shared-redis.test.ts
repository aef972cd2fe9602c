/**
 * Two facilitator instances on one Redis: a payment settled once and counted
 * once, statistics adding up across them (the cases in shared-stats-cases.ts).
 */
import { describe } from 'vitest'
import { useRedisStores } from '../support/redis-server.js'
import { sharedStatsCases } from './shared-stats-cases.js'

const redis = useRedisStores()

describe('two facilitators sharing one Redis', () => {
  sharedStatsCases({ store: (space) => redis.store(`${space}:`) })
})
