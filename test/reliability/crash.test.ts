/**
 * A facilitator process killed with SIGKILL in the middle of a settle, after
 * the transaction was journaled in Redis, then restarted on the same Redis:
 * the retried settle answers the original transaction and nothing is sent twice.
 * The scenario is in crash-scenario.ts; this file describes the Redis under it.
 */
import { Redis } from 'ioredis'
import { startRedisServer } from '../support/redis-server.js'
import { describeCrashMidSettle } from './crash-scenario.js'

describeCrashMidSettle({
  names: { describe: 'crash in the middle of a settle', log: 'crash', holder: 'Redis', same: 'Redis', missing: 'Redis' },
  async start() {
    const redis = await startRedisServer()
    const client = new Redis(redis.url)
    return {
      env: { REDIS_URL: redis.url, KEY_PREFIX: 'crash:' },
      openRecords: () => ({
        values: async () => Promise.all((await client.keys('crash:settlement:*')).map(async (key) => (await client.get(key)) ?? undefined)),
        close: () => undefined,
      }),
      async stop() {
        client.disconnect()
        await redis.stop()
      },
    }
  },
})
