import pg from 'pg'
import type { SettlementLedger } from '../../ledger/settlement-ledger.js'
import { createHyperLogLog, estimateHyperLogLog, hash64, hyperLogLogRegister } from '../hyperloglog.js'
import type { ExpiryOptions, RankedEntry, SetOptions, Store } from '../store.js'
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
 * import { createPostgresStore } from 'x402-facilitator/stores/postgres'
 * const store = createPostgresStore({ connectionString: process.env.DATABASE_URL })
 * await store.ready()
 * const facilitator = createFacilitator({ schemes, store, hooks: [createLedgerRecorder({ ledger: store.ledger })] })
 */
export function createPostgresStore(options: PostgresStoreOptions = {}): PostgresStore {
  const owned = !options.pool
  const pool =
    options.pool ??
    new pg.Pool({ ...POSTGRES_STORE_DEFAULTS, ...(options.connectionString ? { connectionString: options.connectionString } : {}), ...options.postgres })
  // An idle client's error is emitted on the pool; unheard, it would crash the process.
  const onPoolError = (error: Error) => options.onConnectionError?.(error)
  pool.on('error', onPoolError)
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
  async function query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    await ready()
    return pool.query<R>({ name: named(text), text, values })
  }

  const ttl = (o?: ExpiryOptions) => (o?.ttlMs === undefined ? null : Math.max(1, Math.ceil(o.ttlMs)))
  const live = `(e.expires_at IS NULL OR e.expires_at > $2)`
  const sql = {
    get: `SELECT value FROM ${s}.entries e WHERE key = $1 AND kind = 'v' AND ${live}`,
    set: `INSERT INTO ${s}.entries AS e (key, kind, value, expires_at) VALUES ($1, 'v', $2, $3)
      ON CONFLICT (key, kind) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
    // Writes only over an expired value: the atomic claim (the row lock makes racing claims queue).
    claim: `INSERT INTO ${s}.entries AS e (key, kind, value, expires_at) VALUES ($1, 'v', $2, $3)
      ON CONFLICT (key, kind) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
      WHERE e.expires_at IS NOT NULL AND e.expires_at <= $4`,
    delete: `WITH gone AS (DELETE FROM ${s}.entries WHERE key = $1) DELETE FROM ${s}.fields WHERE key = $1`,
    incrementFields: `SELECT ${s}.increment_fields($1, $2::text[], $3::double precision[], $4, $5)`,
    setTextFields: `SELECT ${s}.set_text_fields($1, $2::text[], $3::text[], $4, $5)`,
    addDistinct: `SELECT ${s}.add_distinct($1, $2::text[], $3::double precision[], $4, $5)`,
    fields: `SELECT f.field, f.num, f.text FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = $1 AND f.kind = $3 AND ${live}`,
    // The union of sketches is the maximum rank per register, computed by the server.
    registers: `SELECT f.field, max(f.num) AS rank FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = ANY($1::text[]) AND f.kind = 'd' AND ${live} GROUP BY f.field`,
    incrementRanked: `SELECT score, evicted FROM ${s}.increment_ranked($1, $2, $3, $4, $5, $6)`,
    readRanked: `SELECT f.field AS member, f.num AS score FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = $1 AND f.kind = 'r' AND ${live} ORDER BY f.num DESC, f.field DESC LIMIT $3 OFFSET $4`,
    countRanked: `SELECT count(*)::integer AS n FROM ${s}.fields f JOIN ${s}.entries e ON e.key = f.key AND e.kind = f.kind
      WHERE f.key = $1 AND f.kind = 'r' AND ${live}`,
    placeHold: `SELECT ${s}.place_hold($1, $2, $3::numeric, $4::numeric, $5, $6, $7) AS placed`,
    closeHold: `SELECT ${s}.close_hold($1, $2, $3, $4)`,
    // A key written meanwhile (its expiry moved) is left alone: the DELETE re-checks the expiry on the locked row.
    sweep: `WITH gone AS (
        DELETE FROM ${s}.entries WHERE (key, kind) IN (SELECT key, kind FROM ${s}.entries WHERE expires_at <= $1 LIMIT ${SWEEP_BATCH}) AND expires_at <= $1
        RETURNING key, kind
      ), gone_fields AS (
        DELETE FROM ${s}.fields f USING gone WHERE f.key = gone.key AND f.kind = gone.kind
      )
      SELECT count(*)::integer AS n FROM gone`,
  }

  async function sweep(): Promise<number> {
    const { rows } = await query<{ n: number }>(sql.sweep, [now()])
    return rows[0]?.n ?? 0
  }

  const ledger = createPostgresLedger({ query: (text, values) => query(text, values), schema: s })

  return {
    ledger,
    pool,
    ready,
    sweep,
    async get(key) {
      const { rows } = await query<{ value: string }>(sql.get, [key, now()])
      return rows[0]?.value ?? undefined
    },
    async set(key, value, options?: SetOptions) {
      const t = now()
      const expiresAt = options?.ttlMs === undefined ? null : t + ttl(options)!
      const result = options?.ifAbsent ? await query(sql.claim, [key, value, expiresAt, t]) : await query(sql.set, [key, value, expiresAt])
      return result.rowCount === 1
    },
    async delete(key) {
      await query(sql.delete, [key])
    },
    async incrementFields(key, increments, options) {
      const fields = Object.keys(increments)
      if (fields.length === 0) return
      await query(sql.incrementFields, [key, fields, fields.map((field) => increments[field]), ttl(options), now()])
    },
    async readFields(key) {
      const { rows } = await query<{ field: string; num: number | null }>(sql.fields, [key, now(), 'h'])
      const out: Record<string, number> = {}
      for (const row of rows) out[row.field] = row.num ?? 0
      return out
    },
    async setTextFields(key, fields, options) {
      const names = Object.keys(fields)
      if (names.length === 0) return
      await query(sql.setTextFields, [key, names, names.map((name) => fields[name]), ttl(options), now()])
    },
    async readTextFields(key) {
      const { rows } = await query<{ field: string; text: string | null }>(sql.fields, [key, now(), 't'])
      const out: Record<string, string> = {}
      for (const row of rows) out[row.field] = row.text ?? ''
      return out
    },
    async addDistinct(key, members, options) {
      if (members.length === 0) return
      // Hashed here (the same registers as the other stores); the server keeps the maximum rank per register.
      const registers: string[] = []
      const ranks: number[] = []
      for (const member of members) {
        const { index, rank } = hyperLogLogRegister(member)
        registers.push(String(index))
        ranks.push(rank)
      }
      await query(sql.addDistinct, [key, registers, ranks, ttl(options), now()])
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
      const { rows } = await query<{ score: number; evicted: string[] }>(sql.incrementRanked, [key, member, by, ttl(options), options?.cap ?? null, now()])
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
      const { rows } = await query<{ placed: boolean }>(sql.placeHold, [
        key,
        id,
        decimal(hold.amount),
        decimal(hold.limit),
        Math.floor(hold.since),
        Math.max(1, Math.ceil(hold.ttlMs)),
        now(),
      ])
      return rows[0]?.placed === true
    },
    async closeHold(key, id, options = {}) {
      await query(sql.closeHold, [key, id, Math.max(0, Math.ceil(options.keepMs ?? 0)), now()])
    },
    async close() {
      closed = true
      if (sweeper) clearInterval(sweeper)
      // A migration in flight finishes (or fails) before the pool it uses ends.
      await migrated?.catch(() => undefined)
      if (owned) await pool.end()
      pool.off('error', onPoolError)
    },
  }
}

/** A non-negative decimal integer of any size, as text for a numeric parameter. */
function decimal(value: string): string {
  const parsed = BigInt(value)
  if (parsed < 0n) throw new RangeError('a hold amount or limit cannot be negative')
  return parsed.toString()
}
