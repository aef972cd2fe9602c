import { createHash } from 'node:crypto'
import { Redis, type RedisOptions } from 'ioredis'
import { FacilitatorError } from '../errors/facilitator-error.js'
import type { ExpiryOptions, RankedEntry, SetOptions, Store } from './store.js'

/** Options of the Redis store: a client of yours, or what to connect to. */
export interface RedisStoreOptions {
  /** An ioredis client to use as configured; the store does not close it. */
  client?: Redis
  /** A `redis://` URL to connect to when no client is given. */
  url?: string
  /**
   * ioredis options when no client is given (merged with `url`), over
   * `REDIS_STORE_DEFAULTS`: any option given here wins.
   */
  redis?: RedisOptions
  /** Prefix of every key, so several facilitators can share one Redis. @default 'x402:' */
  keyPrefix?: string
  /**
   * Receives connection errors of a client the store created (a Redis going away, each
   * reconnect attempt: about one a second while it is down), e.g. to log them as JSON. The
   * store always listens, so ioredis never prints its plain-text "Unhandled error event"
   * between your log lines; the outage still shows in every failing call and in `/readyz`.
   * @default ignored
   */
  onConnectionError?: (error: Error) => void
}

/**
 * ioredis options of a client the store creates. ioredis's own defaults
 * (offline queue, 20 retries per command, no command timeout) make a Redis
 * outage hold a payment for many seconds and replay stale writes (a claim
 * release, a journal entry) when it comes back. Here an outage is a fast,
 * clear failure instead:
 *
 * - `commandTimeout: 1_000`: a paused or overloaded Redis fails a command after 1 s.
 * - `enableOfflineQueue: false`: while disconnected, commands fail at once; none is kept to run later.
 *   (The store still waits, bounded by `connectTimeout`, for the very first connection.)
 * - `maxRetriesPerRequest: 0`, `autoResendUnfulfilledCommands: false`: a command in flight when the
 *   connection drops fails instead of being sent again after a reconnect.
 * - `connectTimeout: 2_000`, reconnecting every 100 ms growing to at most 1 s: a Redis that
 *   comes back is used again within about a second.
 * - `enableAutoPipelining: true`: commands issued in one turn of the event loop leave in one
 *   write (a settle with its statistics issues a dozen, many at once), which saves most of
 *   the client's CPU per command under load.
 */
export const REDIS_STORE_DEFAULTS: Readonly<RedisOptions> = Object.freeze({
  commandTimeout: 1_000,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  connectTimeout: 2_000,
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1_000),
  enableAutoPipelining: true,
})

// Every multi-step write is one Lua script: atomic, and one round trip per call.
const INCREMENT_FIELDS = `
for i = 2, #ARGV, 2 do
  local by = ARGV[i + 1]
  if string.find(by, '[%.eE]') then redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], by)
  else redis.call('HINCRBY', KEYS[1], ARGV[i], by) end
end
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`

const SET_TEXT_FIELDS = `
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`

const ADD_DISTINCT = `
redis.call('PFADD', KEYS[1], unpack(ARGV, 2))
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1`

// ZPOPMIN removes the lowest scores, ties by lowest member: the order the memory store follows.
const INCREMENT_RANKED = `
local score = redis.call('ZINCRBY', KEYS[1], ARGV[2], ARGV[3])
if ARGV[1] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local result = { score }
local cap = tonumber(ARGV[4])
if cap then
  local extra = redis.call('ZCARD', KEYS[1]) - cap
  if extra > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[1], extra)
    for i = 1, #popped, 2 do result[#result + 1] = popped[i] end
  end
end
return result`

// Holds of one balance: its open holds in a hash (field = id, value = "amount:expiresAt") and its
// closed ones in a sorted set scored by when they closed (member = "id:amount:expiresAt"), so a
// placement sums the open ones (as many as settlements in flight) and only those closed since its
// balance was read. Amounts are decimal strings of any size (Lua numbers are doubles), added and
// compared as digits.
const HOLD_HELPERS = `
local function add(a, b)
  local out, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local sum = carry + (i > 0 and a:byte(i) - 48 or 0) + (j > 0 and b:byte(j) - 48 or 0)
    out[#out + 1] = string.char(48 + sum % 10)
    carry = math.floor(sum / 10)
    i, j = i - 1, j - 1
  end
  return string.reverse(table.concat(out))
end
local function above(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local function extend(key, expiresAt, now)
  local left = redis.call('PTTL', key)
  if left < expiresAt - now then redis.call('PEXPIRE', key, expiresAt - now) end
end`

// KEYS: open hash, closed set. ARGV: id, amount, limit, since, ttlMs, now.
const PLACE_HOLD = `${HOLD_HELPERS}
local now, since = tonumber(ARGV[6]), tonumber(ARGV[4])
local held = ARGV[2]
local open = redis.call('HGETALL', KEYS[1])
for i = 1, #open, 2 do
  local amount, expires = string.match(open[i + 1], '^(%d+):(%d+)$')
  if not amount or tonumber(expires) <= now then redis.call('HDEL', KEYS[1], open[i])
  elseif open[i] ~= ARGV[1] then held = add(held, amount) end
end
local closed = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[4], '+inf')
for i = 1, #closed do
  local id, amount, expires = string.match(closed[i], '^(.*):(%d+):(%d+)$')
  if amount and id ~= ARGV[1] and tonumber(expires) > now then held = add(held, amount) end
end
if above(held, ARGV[3]) then return 0 end
local expiresAt = now + tonumber(ARGV[5])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. string.format('%.0f', expiresAt))
extend(KEYS[1], expiresAt, now)
return 1`

// KEYS: open hash, closed set. ARGV: id, keepMs, now. Closed holds older than keepMs are pruned
// (the core closes every hold of a balance with the same keepMs).
const CLOSE_HOLD = `${HOLD_HELPERS}
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
local keep, now = tonumber(ARGV[2]), tonumber(ARGV[3])
if keep <= 0 then return 1 end
local amount = string.match(value, '^(%d+):')
redis.call('ZADD', KEYS[2], now, ARGV[1] .. ':' .. amount .. ':' .. string.format('%.0f', now + keep))
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.0f', now - keep))
extend(KEYS[2], now + keep, now)
return 1`

// The closed holds of a balance live beside its open ones.
const CLOSED_HOLDS_SUFFIX = ':closed-holds'

/**
 * A store in Redis, for several facilitator processes that must act as one:
 * a payment claimed by one is claimed for all (`SET NX PX`), and statistics
 * and catalog counters add up. Needs the optional peer `ioredis` 5.
 *
 * It keeps no settlement ledger: in Redis a complete ledger would grow memory without
 * bound, a capped one would drop rows, and without AOF a restart loses it. Record the
 * ledger in PostgreSQL beside it (`createPostgresStore(...).ledger`), see docs/stores.md.
 *
 * @example
 * // partial
 * import { createRedisStore } from 'x402-facilitator/stores/redis'
 * const store = createRedisStore({ url: process.env.REDIS_URL })
 * const facilitator = createFacilitator({ schemes, store })
 */
export function createRedisStore(options: RedisStoreOptions = {}): Store {
  checkTarget(options)
  const owned = !options.client
  const settings: RedisOptions = { ...REDIS_STORE_DEFAULTS, ...options.redis }
  const client = options.client ?? (options.url ? new Redis(options.url, settings) : new Redis(settings))
  // Without a listener ioredis writes each connection error to the console, as plain text.
  if (owned) client.on('error', (error: Error) => options.onConnectionError?.(error))
  const firstConnection = owned && settings.enableOfflineQueue === false ? waitForFirstConnection(client, settings.connectTimeout ?? 10_000) : undefined
  const prefix = options.keyPrefix ?? 'x402:'
  const k = (key: string) => prefix + key
  const ttl = (o?: ExpiryOptions) => (o?.ttlMs === undefined ? '' : String(Math.max(1, Math.ceil(o.ttlMs))))
  const scripts = new Map<string, string>()
  const connected = firstConnection ?? (() => Promise.resolve())

  /** EVALSHA, loading the script on its first use or after a Redis restart (NOSCRIPT). */
  async function run(script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    let sha = scripts.get(script)
    if (!sha) {
      sha = createHash('sha1').update(script).digest('hex')
      scripts.set(script, sha)
    }
    try {
      return await client.evalsha(sha, keys.length, ...keys, ...args)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return client.eval(script, keys.length, ...keys, ...args)
    }
  }

  return {
    async get(key) {
      await connected()
      return (await client.get(k(key))) ?? undefined
    },
    async set(key, value, options?: SetOptions) {
      await connected()
      const px = options?.ttlMs === undefined ? undefined : Math.max(1, Math.ceil(options.ttlMs))
      let answer: string | null
      if (options?.ifAbsent) answer = px === undefined ? await client.set(k(key), value, 'NX') : await client.set(k(key), value, 'PX', px, 'NX')
      else answer = px === undefined ? await client.set(k(key), value) : await client.set(k(key), value, 'PX', px)
      return answer === 'OK'
    },
    async delete(key) {
      await connected()
      // A balance's closed holds live under a second key.
      await client.del(k(key), k(key) + CLOSED_HOLDS_SUFFIX)
    },
    async incrementFields(key, increments, options) {
      await connected()
      const args: (string | number)[] = [ttl(options)]
      for (const field in increments) args.push(field, String(increments[field]))
      if (args.length === 1) return
      await run(INCREMENT_FIELDS, [k(key)], args)
    },
    async readFields(key) {
      await connected()
      const raw = await client.hgetall(k(key))
      const out: Record<string, number> = {}
      for (const field in raw) {
        const value = Number(raw[field])
        if (Number.isFinite(value)) out[field] = value
      }
      return out
    },
    async setTextFields(key, fields, options) {
      await connected()
      const args: string[] = [ttl(options)]
      for (const field in fields) args.push(field, fields[field]!)
      if (args.length === 1) return
      await run(SET_TEXT_FIELDS, [k(key)], args)
    },
    async readTextFields(key) {
      await connected()
      return client.hgetall(k(key))
    },
    async addDistinct(key, members, options) {
      await connected()
      if (members.length === 0) return
      await run(ADD_DISTINCT, [k(key)], [ttl(options), ...members])
    },
    async countDistinct(keys) {
      await connected()
      if (keys.length === 0) return 0
      return client.pfcount(...keys.map(k))
    },
    async incrementRanked(key, member, by, options) {
      await connected()
      const cap = options?.cap === undefined ? '' : String(options.cap)
      const reply = (await run(INCREMENT_RANKED, [k(key)], [ttl(options), String(by), member, cap])) as string[]
      return { score: Number(reply[0]), evicted: reply.slice(1) }
    },
    async readRanked(key, range = {}) {
      await connected()
      const offset = range.offset ?? 0
      const stop = range.limit === undefined ? -1 : offset + range.limit - 1
      if (range.limit === 0) return []
      const flat = await client.zrevrange(k(key), offset, stop, 'WITHSCORES')
      const out: RankedEntry[] = []
      for (let i = 0; i < flat.length; i += 2) out.push({ member: flat[i]!, score: Number(flat[i + 1]) })
      return out
    },
    async countRanked(key) {
      await connected()
      return client.zcard(k(key))
    },
    async placeHold(key, id, hold) {
      await connected()
      const args = [id, decimal(hold.amount), decimal(hold.limit), String(Math.floor(hold.since)), String(Math.max(1, Math.ceil(hold.ttlMs))), String(Date.now())]
      return (await run(PLACE_HOLD, [k(key), k(key) + CLOSED_HOLDS_SUFFIX], args)) === 1
    },
    async closeHold(key, id, options = {}) {
      await connected()
      await run(CLOSE_HOLD, [k(key), k(key) + CLOSED_HOLDS_SUFFIX], [id, String(Math.max(0, Math.ceil(options.keepMs ?? 0))), String(Date.now())])
    },
    async close() {
      // QUIT cannot be sent while disconnected (no offline queue): then just stop reconnecting.
      if (owned) await client.quit().catch(() => client.disconnect())
    },
  }
}

/**
 * A store with nowhere to connect would quietly use 127.0.0.1:6379 and log a connection error
 * every second: refused when the factory is called, naming the option (never quoting a URL,
 * which may carry a password).
 */
function checkTarget(options: RedisStoreOptions): void {
  if (options.client) return
  const redis = options.redis as { host?: unknown; path?: unknown; sentinels?: unknown } | undefined
  if ('url' in options || !redis) {
    if (typeof options.url !== 'string' || options.url.trim() === '') {
      throw new FacilitatorError('misconfigured', 'createRedisStore: `url` is empty or undefined (is REDIS_URL set?); give a redis:// URL, a `client`, or `redis` connection options')
    }
    let protocol: string
    try {
      protocol = new URL(options.url).protocol
    } catch {
      throw new FacilitatorError('misconfigured', 'createRedisStore: `url` is not a URL; expected redis://[user:password@]host[:port][/db]')
    }
    if (protocol !== 'redis:' && protocol !== 'rediss:') {
      throw new FacilitatorError('misconfigured', `createRedisStore: \`url\` must start with redis:// or rediss://, not ${protocol}//`)
    }
  }
}

/** A non-negative decimal integer without leading zeros, as the hold script adds and compares them. */
function decimal(value: string): string {
  const parsed = BigInt(value)
  if (parsed < 0n) throw new RangeError('a hold amount or limit cannot be negative')
  return parsed.toString()
}

/**
 * Without an offline queue, a command sent before the first connection is
 * ready fails, yet a new store is used at once: its calls wait for that first
 * connection, at most `waitMs`. Once connected, a lost connection fails
 * commands at once: that is an outage, not a start.
 */
function waitForFirstConnection(client: Redis, waitMs: number): () => Promise<void> {
  let connectedOnce = client.status === 'ready'
  let waiting: Promise<void> | undefined
  client.once('ready', () => (connectedOnce = true))
  return () => {
    if (connectedOnce) return Promise.resolve()
    // One shared wait, so that many early calls add one listener, not one each.
    waiting ??= new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        client.off('ready', done)
        client.off('end', done)
        waiting = undefined
        resolve()
      }
      const timer = setTimeout(done, waitMs)
      client.once('ready', done)
      client.once('end', done)
    })
    return waiting
  }
}
