import pg from 'pg'
import type { SettlementLedger } from '../../ledger/settlement-ledger.js'
import { createHyperLogLog, estimateHyperLogLog, hash64, hyperLogLogRegister } from '../hyperloglog.js'
import type { ExpiryOptions, RankedEntry, SetOptions, Store } from '../store.js'
import { callBatches, counterBatches } from './postgres-batches.js'
import { createPostgresLedger } from './postgres-ledger.js'
import { migratePostgres, quoteSchema } from './postgres-migrations.js'

/** Options of the PostgreSQL store: a pool of yours, or what to connect to. */
export interface PostgresStoreOptions {
  /** A pg Pool to use as configured; the store does not end it. */
  pool?: pg.Pool
  /** A `postgres://` URL to connect to when no pool is given. */
  connectionString?: string
  /** pg Pool options when no pool is given (merged with `connectionString`), over `POSTGRES_STORE_DEFAULTS`. */
  postgres?: pg.PoolConfig
  /** The schema holding the store's tables, created and migrated on first use. @default 'x402' */
  schema?: string
  /**
   * How counter writes commit (`incrementFields`, `setTextFields`, `addDistinct`,
   * `incrementRanked`: statistics, catalog, rate limits, payer failure counts).
   *
   * - `'async'`: without waiting for the WAL flush (`synchronous_commit = off`, on a second pool
   *   of the store's own): a crash of the PostgreSQL server (not of a facilitator) can lose
   *   the last fraction of a second of them, never leave them inconsistent. Every settle
   *   updates the same few statistics rows, whose lock a synchronous commit would hold through
   *   an fsync, one settle after the other.
   * - `'sync'`: like everything else.
   *
   * Claims, settlement records, holds and ledger rows always wait for the flush. With a `pool`
   * of yours, counters use `counterPool` when given, else commit synchronously through `pool`.
   * @default 'async'
   */
  counterCommits?: 'async' | 'sync'
  /** A pool of yours for counter writes (see `counterCommits`), e.g. one whose sessions set `synchronous_commit = off`. */
  counterPool?: pg.Pool
  /**
   * How often expired keys are deleted (each instance sweeps; a sweep deletes a bounded
   * batch). @default 60_000
   */
  sweepIntervalMs?: number
  /**
   * Receives errors of idle pooled connections (a server restart). Without a listener such an
   * error would crash the process, so the store always listens. @default ignored
   */
  onConnectionError?: (error: Error) => void
  /** Clock in milliseconds, for tests. @default Date.now */
  now?: () => number
}

/** A store in PostgreSQL, with the settlement ledger in the same database. */
export interface PostgresStore extends Store {
  /** The settlement ledger in the store's schema (see `createLedgerRecorder`). */
  readonly ledger: SettlementLedger
  /** The pool the store queries through. */
  readonly pool: pg.Pool
  /** The pool counter writes go through (see `counterCommits`): `pool` itself when they commit synchronously. */
  readonly counterPool: pg.Pool
  /**
   * Resolves once the schema is created and migrated (every call waits for it anyway);
   * await it at start-up to fail fast on a wrong URL or missing rights.
   */
  ready(): Promise<void>
  /** Deletes expired keys now (a batch of at most 1,000) and answers how many went. */
  sweep(): Promise<number>
  /** Stops sweeping and ends the pool (one given in `pool` stays open). */
  close(): Promise<void>
}

/**
 * pg Pool options of a pool the store creates, chosen so that an outage is a fast,
 * clear failure rather than a long wait (the settle path bounds every store call
 * anyway, see `settlement.storeTimeoutMs`):
 *
 * - `connectionTimeoutMillis: 2_000`: a server that does not accept a connection fails the call after 2 s.
 * - `statement_timeout: 5_000`: the server cancels a statement that runs longer (a lock held by a stuck session).
 * - `max: 10` connections per instance; `idleTimeoutMillis: 30_000`; TCP keep-alive on.
 */
export const POSTGRES_STORE_DEFAULTS: Readonly<pg.PoolConfig> = Object.freeze({
  connectionTimeoutMillis: 2_000,
  statement_timeout: 5_000,
  max: 10,
  idleTimeoutMillis: 30_000,
  keepAlive: true,
})

const SWEEP_BATCH = 1_000

/**
 * A store in PostgreSQL, for several facilitator processes that must act as one:
 * a payment claimed by one is claimed for all (an atomic `INSERT … ON CONFLICT`),
 * holds and counters are serialised per key by a row lock, and statistics, catalog
 * and ledger add up. It creates and migrates its own schema (versioned, under an
 * advisory lock, safe when instances start at once). Needs the optional peer `pg` 8.
 *
 * Every call is one statement (multi-step writes are SQL functions): one round trip,
 * atomic. Expired keys are swept every `sweepIntervalMs`.
 *
 * @example
 * // partial
 * import { createPostgresStore } from 'x402-facilitator/stores/postgres'
 * const store = createPostgresStore({ connectionString: process.env.DATABASE_URL })
 * await store.ready()
 * const facilitator = createFacilitator({ schemes, store, hooks: [createLedgerRecorder({ ledger: store.ledger })] })
 */
export function createPostgresStore(options: PostgresStoreOptions = {}): PostgresStore {
  const owned = !options.pool
  const poolConfig: pg.PoolConfig = { ...POSTGRES_STORE_DEFAULTS, ...(options.connectionString ? { connectionString: options.connectionString } : {}), ...options.postgres }
  const pool = options.pool ?? new pg.Pool(poolConfig)
  const asyncCounters = (options.counterCommits ?? 'async') === 'async'
  const ownsCounterPool = owned && !options.counterPool && asyncCounters
  const counterPool =
    options.counterPool ??
    (ownsCounterPool ? new pg.Pool({ ...poolConfig, options: [poolConfig.options, '-c synchronous_commit=off'].filter(Boolean).join(' ') }) : pool)
  // An idle client's error is emitted on the pool; unheard, it would crash the process.
  const onPoolError = (error: Error) => options.onConnectionError?.(error)
  pool.on('error', onPoolError)
  if (counterPool !== pool) counterPool.on('error', onPoolError)
  const schemaName = options.schema ?? 'x402'
  const s = quoteSchema(schemaName)
  const now = options.now ?? Date.now
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000

  let migrated: Promise<void> | undefined
  let sweeper: ReturnType<typeof setInterval> | undefined
  let closed = false
  /** The schema, migrated once; a failure is retried by the next call rather than kept. */
  function ready(): Promise<void> {
    migrated ??= migratePostgres(pool, schemaName).then(
      () => {
        if (!sweeper && !closed && sweepIntervalMs > 0) {
          sweeper = setInterval(() => void sweep().catch(() => undefined), sweepIntervalMs)
          sweeper.unref()
        }
      },
      (error: unknown) => {
        migrated = undefined
        throw error
      },
    )
    return migrated
  }

  // Named statements are prepared once per connection. A name is a hash of its text: stores sharing a pool
  // (another schema, or the same) never give one name two texts.
  const statements = new Map<string, string>()
  const named = (text: string) => {
    let name = statements.get(text)
    if (!name) {
      const [high, low] = hash64(text)
      name = `x402_${high.toString(16)}${low.toString(16)}`
      statements.set(text, name)
    }
    return name
  }
  async function query<R extends pg.QueryResultRow>(text: string, values: unknown[], through = pool): Promise<pg.QueryResult<R>> {
    await ready()
    return through.query<R>({ name: named(text), text, values })
  }

  const ttl = (o?: ExpiryOptions) => (o?.ttlMs === undefined ? null : Math.max(1, Math.ceil(o.ttlMs)))
  const live = `(e.expires_at IS NULL OR e.expires_at > $2)`
  const sql = {
    runBatch: `SELECT ${s}.run_batch($1::jsonb, $2) AS results`,
    applyCounters: `SELECT ${s}.apply_counters($1::text[], $2::"char"[], $3::bigint[], $4::integer[], $5::text[], $6::double precision[], $7::text[], $8)`,
    // The union of sketches is the maximum rank per register, computed by the server.
    registers: `SELECT f.field, max(f.num) AS rank FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = ANY($1::text[]) AND f.kind = 'd' AND ${live} GROUP BY f.field`,
    incrementRanked: `SELECT score, evicted FROM ${s}.increment_ranked($1, $2, $3, $4, $5, $6)`,
    readRanked: `SELECT f.field AS member, f.num AS score FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = $1 AND f.kind = 'r' AND ${live} ORDER BY f.num DESC, f.field DESC LIMIT $3 OFFSET $4`,
    countRanked: `SELECT count(*)::integer AS n FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = $1 AND f.kind = 'r' AND ${live}`,
    // A key written meanwhile (its expiry moved) is left alone: the DELETE re-checks the expiry on the locked row.
    sweep: `WITH gone AS (
        DELETE FROM ${s}.entries WHERE (key, kind) IN (SELECT key, kind FROM ${s}.entries WHERE expires_at <= $1 LIMIT ${SWEEP_BATCH}) AND expires_at <= $1
        RETURNING key, kind
      ), gone_fields AS (
        DELETE FROM ${s}.fields f USING gone WHERE f.key = gone.key AND f.kind = gone.kind
      )
      SELECT count(*)::integer AS n FROM gone`,
  }

  // Calls and counter writes of one turn travel together (see postgres-batches.ts).
  const { batched, close: closeCalls } = callBatches(async (ops) => {
    const { rows } = await query<{ results: unknown[] }>(sql.runBatch, [JSON.stringify(ops), now()])
    return rows[0]!.results
  })
  const { counter, flushWaiting: flushCounters } = counterBatches(now, (values) => query(sql.applyCounters, values, counterPool))

  async function sweep(): Promise<number> {
    const { rows } = await query<{ n: number }>(sql.sweep, [now()])
    return rows[0]?.n ?? 0
  }

  const ledger = createPostgresLedger({
    query: (text, values) => query(text, values),
    schema: s,
    // Appends travel with the other calls of their turn ('k' only orders the batch).
    append: async (row) => void (await batched({ o: 'ledger', k: '', ...row })),
  })

  return {
    ledger,
    pool,
    counterPool,
    ready,
    sweep,
    async get(key) {
      const value = await batched({ o: 'get', k: key })
      return typeof value === 'string' ? value : undefined
    },
    async set(key, value, options?: SetOptions) {
      const expiresAt = options?.ttlMs === undefined ? null : now() + ttl(options)!
      return (await batched({ o: options?.ifAbsent ? 'claim' : 'set', k: key, v: value, x: expiresAt })) === true
    },
    async delete(key) {
      await batched({ o: 'delete', k: key })
    },
    async incrementFields(key, increments, options) {
      if (Object.keys(increments).length === 0) return
      await counter('h', key, ttl(options), (fields) => {
        for (const field in increments) fields.set(field, ((fields.get(field) as number | undefined) ?? 0) + increments[field]!)
      })
    },
    async readFields(key) {
      const fields = (await batched({ o: 'fields', k: key, kind: 'h' })) as Record<string, number | null>
      const out: Record<string, number> = {}
      for (const field in fields) out[field] = fields[field] ?? 0
      return out
    },
    async setTextFields(key, values, options) {
      if (Object.keys(values).length === 0) return
      await counter('t', key, ttl(options), (fields) => {
        for (const field in values) fields.set(field, values[field]!)
      })
    },
    async readTextFields(key) {
      const fields = (await batched({ o: 'fields', k: key, kind: 't' })) as Record<string, string | null>
      const out: Record<string, string> = {}
      for (const field in fields) out[field] = fields[field] ?? ''
      return out
    },
    async addDistinct(key, members, options) {
      if (members.length === 0) return
      // Hashed here (the same registers as the other stores); the server keeps the maximum rank per register.
      await counter('d', key, ttl(options), (fields) => {
        for (const member of members) {
          const { index, rank } = hyperLogLogRegister(member)
          const register = String(index)
          if (rank > ((fields.get(register) as number | undefined) ?? 0)) fields.set(register, rank)
        }
      })
    },
    async countDistinct(keys) {
      if (keys.length === 0) return 0
      const { rows } = await query<{ field: string; rank: number }>(sql.registers, [[...new Set(keys)], now()])
      if (rows.length === 0) return 0
      const sketch = createHyperLogLog()
      for (const row of rows) sketch[Number(row.field)] = row.rank
      return estimateHyperLogLog([sketch])
    },
    async incrementRanked(key, member, by, options) {
      const { rows } = await query<{ score: number; evicted: string[] }>(sql.incrementRanked, [key, member, by, ttl(options), options?.cap ?? null, now()], counterPool)
      return { score: rows[0]!.score, evicted: rows[0]!.evicted }
    },
    async readRanked(key, range = {}) {
      const { rows } = await query<RankedEntry>(sql.readRanked, [key, now(), range.limit ?? null, range.offset ?? 0])
      return rows
    },
    async countRanked(key) {
      const { rows } = await query<{ n: number }>(sql.countRanked, [key, now()])
      return rows[0]?.n ?? 0
    },
    async placeHold(key, id, hold) {
      const op = { o: 'hold', k: key, id, amount: decimal(hold.amount), limit: decimal(hold.limit), since: Math.floor(hold.since), ttl: Math.max(1, Math.ceil(hold.ttlMs)) }
      return (await batched(op)) === true
    },
    async closeHold(key, id, options = {}) {
      await batched({ o: 'close', k: key, id, keep: Math.max(0, Math.ceil(options.keepMs ?? 0)) })
    },
    async close() {
      closed = true
      // Calls already issued are sent before the pool ends.
      await Promise.all([closeCalls(), flushCounters()])
      if (sweeper) clearInterval(sweeper)
      // A migration in flight finishes (or fails) before the pool it uses ends.
      await migrated?.catch(() => undefined)
      if (owned) await pool.end()
      if (ownsCounterPool) await counterPool.end()
      // pg's end() resolves before the sockets close: an owned pool keeps its listener, or an error
      // then (the server going away) would be unheard and crash the process. A given pool is the caller's.
      if (!owned) pool.off('error', onPoolError)
      if (options.counterPool) options.counterPool.off('error', onPoolError)
    },
  }
}

/** A non-negative decimal integer of any size, as text for a numeric parameter. */
function decimal(value: string): string {
  const parsed = BigInt(value)
  if (parsed < 0n) throw new RangeError('a hold amount or limit cannot be negative')
  return parsed.toString()
}
