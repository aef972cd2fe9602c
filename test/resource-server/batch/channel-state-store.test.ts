/** The channel state store's conformance on every backend of the library: memory, SQLite, Redis, PostgreSQL. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { createMemoryStore } from '../../../src/stores/memory-store.js'
import { createPostgresStore } from '../../../src/stores/postgres/postgres-store.js'
import { createRedisStore } from '../../../src/stores/redis-store.js'
import { createSqliteStore } from '../../../src/stores/sqlite/sqlite-store.js'
import { startPostgresServer, type PostgresServer } from '../../support/postgres-server.js'
import { startRedisServer, type RedisServer } from '../../support/redis-server.js'
import { channelStateStoreConformance } from './channel-state-store-conformance.js'

const dir = mkdtempSync(join(tmpdir(), 'x402-channels-'))
let redis: RedisServer
let postgres: PostgresServer
let run = 0
let clock = 1_000_000
beforeAll(async () => {
  ;[redis, postgres] = await Promise.all([startRedisServer(), startPostgresServer()])
}, 120_000)
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()])
  rmSync(dir, { recursive: true, force: true })
})

const moveClock = async (ms: number) => {
  clock += ms
}
const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

channelStateStoreConformance('memory store', { create: async () => createMemoryStore({ now: () => clock }), advance: moveClock })
channelStateStoreConformance('SQLite store', { create: async () => createSqliteStore({ path: join(dir, `channels-${++run}.sqlite`), now: () => clock }), advance: moveClock })
channelStateStoreConformance('Redis store', { create: async () => createRedisStore({ url: redis.url, keyPrefix: `channels${++run}:` }), advance: wait })
channelStateStoreConformance('PostgreSQL store', { create: async () => createPostgresStore({ connectionString: postgres.url, schema: `channels_${++run}`, now: () => clock }), advance: moveClock })
