import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisStore } from '../../src/stores/redis-store.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'
import { settlementStoreConformance } from './settlement-store-conformance.js'
import { statsStoreConformance } from './stats-store-conformance.js'
import type { Store } from '../../src/stores/store.js'
import type { StoreFactory } from './key-value-cases.js'

let server: RedisServer
let admin: Redis
let run = 0
beforeAll(async () => {
  server = await startRedisServer()
  admin = new Redis(server.url)
})
afterAll(async () => {
  await admin?.quit()
  await server?.stop()
})

// Each test gets its own key prefix on the shared server, so tests never see each other's keys.
const factory: StoreFactory<Store> = {
  create: async () => createRedisStore({ url: server.url, keyPrefix: `conf${++run}:` }),
  advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}
settlementStoreConformance('redis store', factory)
statsStoreConformance('redis store', factory)

describe('redis store', () => {
  it('refuses to be made with nowhere to connect, naming the option and never quoting the URL', () => {
    expect(() => createRedisStore()).toThrow(/`url` is empty or undefined/)
    expect(() => createRedisStore({ url: undefined })).toThrow(expect.objectContaining({ code: 'misconfigured' }))
    expect(() => createRedisStore({ url: '  ' })).toThrow(/`url` is empty/)
    expect(() => createRedisStore({ url: 'not a url' })).toThrow(/`url` is not a URL/)
    let message = ''
    try {
      createRedisStore({ url: 'http://user:hunter2@cache.internal:6379' })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toMatch(/must start with redis:\/\/ or rediss:\/\//)
    expect(message).not.toContain('hunter2')
  })

  it('claims with an atomic SET NX PX: the key carries its ttl', async () => {
    const store = createRedisStore({ url: server.url, keyPrefix: 'claim:' })
    await store.set('settlement:x', 'claimed', { ifAbsent: true, ttlMs: 30_000 })
    const pttl = await admin.pttl('claim:settlement:x')
    expect(pttl).toBeGreaterThan(29_000)
    expect(pttl).toBeLessThanOrEqual(30_000)
    await store.close?.()
  })

  it('fails fast on a Redis that is not there, instead of queueing the command for later', async () => {
    const dead = createRedisStore({ url: 'redis://127.0.0.1:1', redis: { connectTimeout: 300 }, onConnectionError: () => undefined })
    const started = performance.now()
    await expect(dead.set('claim', 'x', { ifAbsent: true })).rejects.toThrow()
    // The first-connection wait (connectTimeout) is the only delay; nothing waits in an offline queue.
    expect(performance.now() - started).toBeLessThan(1_000)
    await dead.close?.()
  })

  it("a Redis that is not there: connection errors go to onConnectionError or nowhere, never to ioredis's console print", async () => {
    const printed: unknown[][] = []
    const original = console.error
    console.error = (...args: unknown[]) => void printed.push(args)
    try {
      const seen: string[] = []
      const reported = createRedisStore({ url: 'redis://127.0.0.1:1', redis: { connectTimeout: 300 }, onConnectionError: (error) => void seen.push((error as { code?: string }).code ?? '') })
      const silent = createRedisStore({ url: 'redis://127.0.0.1:1', redis: { connectTimeout: 300 } })
      await Promise.all([expect(reported.get('k')).rejects.toThrow(), expect(silent.get('k')).rejects.toThrow()])
      // Reconnect attempts go on for a while (100 ms, then growing).
      await new Promise((resolve) => setTimeout(resolve, 600))
      await Promise.all([reported.close?.(), silent.close?.()])
      expect(seen.length).toBeGreaterThanOrEqual(1)
      expect(seen[0]).toBe('ECONNREFUSED')
      expect(printed).toEqual([])
    } finally {
      console.error = original
    }
  })

  it('uses a given client and leaves it open on close', async () => {
    const client = new Redis(server.url)
    const store = createRedisStore({ client, keyPrefix: 'mine:' })
    await store.set('a', '1')
    await store.close?.()
    expect(await client.get('mine:a')).toBe('1')
    await client.quit()
  })

  it('reloads its scripts after SCRIPT FLUSH (a restarted Redis)', async () => {
    const store = createRedisStore({ url: server.url, keyPrefix: 'flush:' })
    await store.incrementFields('h', { n: 1 })
    await admin.script('FLUSH')
    await store.incrementFields('h', { n: 1 })
    expect(await store.readFields('h')).toEqual({ n: 2 })
    await store.close?.()
  })

  it('shares claims, counters, sketches and rankings between two stores on one Redis', async () => {
    const a = createRedisStore({ url: server.url, keyPrefix: 'shared:' })
    const b = createRedisStore({ url: server.url, keyPrefix: 'shared:' })
    expect(await a.set('claim', 'a', { ifAbsent: true, ttlMs: 10_000 })).toBe(true)
    expect(await b.set('claim', 'b', { ifAbsent: true, ttlMs: 10_000 })).toBe(false)
    await a.incrementFields('h', { n: 1 })
    await b.incrementFields('h', { n: 2 })
    await a.addDistinct('d', ['x', 'y'])
    await b.addDistinct('d', ['y', 'z'])
    await a.incrementRanked('r', 'm', 1)
    await b.incrementRanked('r', 'm', 1)
    expect(await b.readFields('h')).toEqual({ n: 3 })
    expect(await a.countDistinct(['d'])).toBe(3)
    expect(await a.readRanked('r')).toEqual([{ member: 'm', score: 2 }])
    await a.close?.()
    await b.close?.()
  })
})
