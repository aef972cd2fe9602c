import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { SettlementLedger } from '../../ledger/settlement-ledger.js'
import { estimateHyperLogLog, createHyperLogLog, hyperLogLogRegister } from '../hyperloglog.js'
import type { ExpiryOptions, RankedEntry, SetOptions, Store } from '../store.js'
import { createSqliteLedger } from './sqlite-ledger.js'
import { openSqliteSchema } from './sqlite-schema.js'
import { writeBatches } from './sqlite-write-batches.js'

/**
 * When SQLite waits for the disk (`PRAGMA synchronous`, in WAL mode):
 *
 * - `NORMAL`: a commit is written to the write-ahead log but not flushed to the disk. A crash
 *   of the process (SIGKILL, an exception, OOM) loses nothing: the operating system holds the
 *   log. A power loss or a crash of the operating system may roll back the last commits before
 *   the last checkpoint (never a corrupt file). About 40 µs a write here.
 * - `FULL`: every commit is flushed (fsync) before it returns, so it survives a power loss too.
 *   It costs one fsync a write (3 to 4 ms on the disks measured here) and the write blocks
 *   the event loop meanwhile.
 */
export type SqliteSynchronous = 'NORMAL' | 'FULL'

/** Options of the SQLite store: a file to open, or a database of yours. */
export interface SqliteStoreOptions {
  /**
   * The database file; its directory is created if missing. `':memory:'` keeps it in
   * memory (tests). Ignored when `database` is given.
   */
  path?: string
  /** A better-sqlite3 database to use as configured (WAL is still turned on); the store does not close it. */
  database?: Database.Database
  /** What a commit waits for, see {@link SqliteSynchronous}. @default 'NORMAL' */
  synchronous?: SqliteSynchronous
  /**
   * How long a write waits for another process holding the file's write lock before it
   * fails (SQLite's busy timeout). The wait blocks the event loop. @default 5_000
   */
  busyTimeoutMs?: number
  /**
   * Expired rows are deleted after this many writes (and when the store opens), a bounded
   * batch at a time, and their pages returned to the file system, so that expiry keeps
   * the file from growing. @default 1_000
   */
  sweepEveryWrites?: number
  /** Clock in milliseconds, for tests. @default Date.now */
  now?: () => number
}

/** A store on one SQLite file, with the settlement ledger in the same file. */
export interface SqliteStore extends Store {
  /** The settlement ledger kept in the same database file (see `createLedgerRecorder`). */
  readonly ledger: SettlementLedger
  /** The better-sqlite3 database, for backups (`database.backup(path)`) and inspection. */
  readonly database: Database.Database
  /** Deletes expired rows now, however many, and answers how many keys went. */
  sweep(): number
  /** Closes the database (one given in `database` stays open). */
  close(): Promise<void>
}

// Kinds of keys, as in the Store interface: each kind is its own namespace, as in the memory store.
const VALUE = 'v'
const HASH = 'h'
const TEXT = 't'
const SKETCH = 'd'
const RANKING = 'r'
const HOLDS = 'b'
const KINDS = [VALUE, HASH, TEXT, SKETCH, RANKING, HOLDS] as const
type Kind = (typeof KINDS)[number]

/** Keys swept per batch: a sweep never holds the write lock for long. */
const SWEEP_BATCH = 500

/**
 * A store in one SQLite file (better-sqlite3, WAL mode): one process keeps its
 * settlement claims and records, statistics, catalog and ledger across restarts
 * with no server to run. Several processes on one machine may share the file
 * (writes wait for each other); a network file system may not hold it. Needs the
 * optional peer `better-sqlite3` 12.
 *
 * Every call is one SQLite transaction, run synchronously: atomic within and across
 * processes. Expired keys are swept every `sweepEveryWrites` writes.
 *
 * @example
 * // partial
 * import { createSqliteStore } from 'x402-facilitator/stores/sqlite'
 * const store = createSqliteStore({ path: './data/facilitator.sqlite' })
 * const facilitator = createFacilitator({ schemes, store, hooks: [createLedgerRecorder({ ledger: store.ledger })] })
 */
export function createSqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  const owned = !options.database
  const path = options.path ?? ':memory:'
  if (owned && path !== ':memory:' && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true })
  const db = options.database ?? new Database(path)
  openSqliteSchema(db, { synchronous: options.synchronous ?? 'NORMAL', busyTimeoutMs: options.busyTimeoutMs ?? 5_000 })
  const now = options.now ?? Date.now
  const sweepEvery = Math.max(1, options.sweepEveryWrites ?? 1_000)
  let writes = 0

  const expiry = (o?: ExpiryOptions) => (o?.ttlMs === undefined ? null : now() + Math.max(1, Math.ceil(o.ttlMs)))
  const q = {
    getValue: db.prepare<[string, number], { value: string }>(`SELECT value FROM x402_entries WHERE key = ? AND kind = 'v' AND (expires_at IS NULL OR expires_at > ?)`),
    setValue: db.prepare(`INSERT INTO x402_entries (key, kind, value, expires_at) VALUES (?, 'v', ?, ?)
      ON CONFLICT (key, kind) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`),
    // Writes only over an expired value: the atomic claim.
    claimValue: db.prepare(`INSERT INTO x402_entries (key, kind, value, expires_at) VALUES (?, 'v', ?, ?)
      ON CONFLICT (key, kind) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
      WHERE x402_entries.expires_at IS NOT NULL AND x402_entries.expires_at <= ?`),
    deleteEntries: db.prepare(`DELETE FROM x402_entries WHERE key = ?`),
    deleteFields: db.prepare(`DELETE FROM x402_fields WHERE key = ?`),
    deleteKindFields: db.prepare(`DELETE FROM x402_fields WHERE key = ? AND kind = ?`),
    deleteEntry: db.prepare(`DELETE FROM x402_entries WHERE key = ? AND kind = ?`),
    header: db.prepare<[string, string], { expires_at: number | null }>(`SELECT expires_at FROM x402_entries WHERE key = ? AND kind = ?`),
    // One statement makes a key live: a new expiry restarts its lifetime, an expired key starts
    // over, and `value` says 'reset' when it did (its old fields must go).
    openHeader: db.prepare<[{ key: string; kind: string; expiresAt: number | null; now: number }], { value: string | null }>(`INSERT INTO x402_entries AS e (key, kind, value, expires_at) VALUES (@key, @kind, NULL, @expiresAt)
      ON CONFLICT (key, kind) DO UPDATE SET
        value = CASE WHEN e.expires_at IS NOT NULL AND e.expires_at <= @now THEN 'reset' ELSE NULL END,
        expires_at = CASE WHEN e.expires_at IS NOT NULL AND e.expires_at <= @now THEN excluded.expires_at ELSE coalesce(excluded.expires_at, e.expires_at) END
      RETURNING value`),
    setExpiry: db.prepare(`UPDATE x402_entries SET expires_at = ? WHERE key = ? AND kind = ?`),
    addNumber: db.prepare(`INSERT INTO x402_fields (key, kind, field, num) VALUES (?, 'h', ?, ?)
      ON CONFLICT (key, kind, field) DO UPDATE SET num = num + excluded.num`),
    setText: db.prepare(`INSERT INTO x402_fields (key, kind, field, text) VALUES (?, 't', ?, ?)
      ON CONFLICT (key, kind, field) DO UPDATE SET text = excluded.text`),
    // A register only ever grows: an add that brings nothing new writes nothing.
    raiseRegister: db.prepare(`INSERT INTO x402_fields (key, kind, field, num) VALUES (?, 'd', ?, ?)
      ON CONFLICT (key, kind, field) DO UPDATE SET num = excluded.num WHERE excluded.num > num`),
    liveFields: db.prepare<[string, string, string, string, number], { field: string; num: number | null; text: string | null }>(`SELECT f.field, f.num, f.text FROM x402_fields f
      WHERE f.key = ? AND f.kind = ? AND EXISTS (SELECT 1 FROM x402_entries e WHERE e.key = ? AND e.kind = ? AND (e.expires_at IS NULL OR e.expires_at > ?))`),
    addScore: db.prepare<[string, string, number], { num: number }>(`INSERT INTO x402_fields (key, kind, field, num) VALUES (?, 'r', ?, ?)
      ON CONFLICT (key, kind, field) DO UPDATE SET num = num + excluded.num RETURNING num`),
    countFields: db.prepare<[string, string], { n: number }>(`SELECT count(*) AS n FROM x402_fields WHERE key = ? AND kind = ?`),
    // Lowest score first, ties by lowest member: the order Redis ZPOPMIN evicts in.
    lowest: db.prepare<[string, number], { field: string }>(`SELECT field FROM x402_fields WHERE key = ? AND kind = 'r' ORDER BY num ASC, field ASC LIMIT ?`),
    deleteField: db.prepare(`DELETE FROM x402_fields WHERE key = ? AND kind = ? AND field = ?`),
    ranked: db.prepare<[string, string, number, number, number], RankedEntry>(`SELECT f.field AS member, f.num AS score FROM x402_fields f
      WHERE f.key = ? AND f.kind = 'r' AND EXISTS (SELECT 1 FROM x402_entries e WHERE e.key = ? AND e.kind = 'r' AND (e.expires_at IS NULL OR e.expires_at > ?))
      ORDER BY f.num DESC, f.field DESC LIMIT ? OFFSET ?`),
    dropExpiredHolds: db.prepare(`DELETE FROM x402_fields WHERE key = ? AND kind = 'b' AND expires_at <= ?`),
    // Only the holds that count against a balance read at `since` (the amounts are summed exactly, as BigInt).
    // Two ranges of the (key, closed_at) index: open holds, and holds closed since.
    countingHolds: db.prepare<{ key: string; id: string; since: number }, string>(`
      SELECT text FROM x402_fields WHERE key = @key AND kind = 'b' AND closed_at = 0 AND field <> @id
      UNION ALL
      SELECT text FROM x402_fields WHERE key = @key AND kind = 'b' AND closed_at >= max(@since, 1) AND field <> @id`).pluck(),
    putHold: db.prepare(`INSERT INTO x402_fields (key, kind, field, text, closed_at, expires_at) VALUES (?, 'b', ?, ?, 0, ?)
      ON CONFLICT (key, kind, field) DO UPDATE SET text = excluded.text, closed_at = 0, expires_at = excluded.expires_at`),
    closeHold: db.prepare(`UPDATE x402_fields SET closed_at = ?, expires_at = ? WHERE key = ? AND kind = 'b' AND field = ?`),
    expired: db.prepare<[number, number], { key: string; kind: string }>(`SELECT key, kind FROM x402_entries WHERE expires_at <= ? LIMIT ?`),
  }

  /**
   * The key of `kind` made live for a write: an expired one is emptied first; an expiry
   * (from `ttlMs`) restarts its lifetime (like Redis PEXPIRE), a new key without one never expires.
   */
  function open(key: string, kind: Kind, expiresAt: number | null): void {
    if (q.openHeader.get({ key, kind, expiresAt, now: now() })?.value === 'reset') q.deleteKindFields.run(key, kind)
  }

  function isLive(key: string, kind: Kind): boolean {
    const header = q.header.get(key, kind)
    return header !== undefined && (header.expires_at === null || header.expires_at > now())
  }

  function sweepBatch(limit: number): number {
    const gone = q.expired.all(now(), limit)
    for (const { key, kind } of gone) {
      q.deleteKindFields.run(key, kind)
      q.deleteEntry.run(key, kind)
    }
    return gone.length
  }
  const sweepOnce = db.transaction((limit: number) => sweepBatch(limit))
  /** Returns the pages of deleted rows to the file system (auto_vacuum is incremental). */
  const shrink = () => db.pragma('incremental_vacuum')
  function sweepAll(): number {
    let total = 0
    for (;;) {
      const n = sweepOnce.immediate(SWEEP_BATCH)
      total += n
      if (n < SWEEP_BATCH) break
    }
    shrink()
    return total
  }
  // Writes of one turn commit together (see sqlite-write-batches.ts); every `sweepEvery` writes, a sweep.
  const { write, close: closeWrites } = writeBatches(db, (count) => {
    writes += count
    if (writes >= sweepEvery) {
      writes = 0
      // One bounded batch of expired keys per `sweepEvery` writes; its failure costs nothing but a later retry.
      try {
        if (sweepOnce.immediate(SWEEP_BATCH) > 0) shrink()
      } catch {
        writes = sweepEvery
      }
    }
  })

  // Writes run inside a batch's IMMEDIATE transaction (it takes the write lock at once: two
  // processes on the file never both read and then both write); countDistinct is a read transaction.
  const tx = {
    incrementFields: (key: string, increments: Readonly<Record<string, number>>, expiresAt: number | null) => {
      open(key, HASH, expiresAt)
      for (const field in increments) q.addNumber.run(key, field, increments[field]!)
    },
    setTextFields: (key: string, fields: Readonly<Record<string, string>>, expiresAt: number | null) => {
      open(key, TEXT, expiresAt)
      for (const field in fields) q.setText.run(key, field, fields[field]!)
    },
    addDistinct: (key: string, members: readonly string[], expiresAt: number | null) => {
      open(key, SKETCH, expiresAt)
      // Registers are rows (`field` = index, `num` = rank): small sketches stay small on disk.
      for (const member of members) {
        const { index, rank } = hyperLogLogRegister(member)
        q.raiseRegister.run(key, String(index), rank)
      }
    },
    countDistinct: db.transaction((keys: readonly string[]) => {
      const registers: Uint8Array[] = []
      for (const key of new Set(keys)) {
        const rows = q.liveFields.all(key, SKETCH, key, SKETCH, now())
        if (rows.length === 0) continue
        const sketch = createHyperLogLog()
        for (const row of rows) sketch[Number(row.field)] = row.num ?? 0
        registers.push(sketch)
      }
      return estimateHyperLogLog(registers)
    }),
    incrementRanked: (key: string, member: string, by: number, expiresAt: number | null, cap: number | undefined) => {
      open(key, RANKING, expiresAt)
      const score = q.addScore.get(key, member, by)!.num
      const evicted: string[] = []
      if (cap !== undefined) {
        const extra = q.countFields.get(key, RANKING)!.n - cap
        if (extra > 0) {
          for (const { field } of q.lowest.all(key, extra)) {
            q.deleteField.run(key, RANKING, field)
            evicted.push(field)
          }
        }
      }
      return { score, evicted }
    },
    placeHold: (key: string, id: string, amount: bigint, limit: bigint, since: number, ttlMs: number) => {
      const t = now()
      const live = isLive(key, HOLDS)
      let held = amount
      if (live) {
        q.dropExpiredHolds.run(key, t)
        for (const text of q.countingHolds.all({ key, id, since })) held += BigInt(text)
      }
      if (held > limit) return false
      const expiresAt = t + ttlMs
      if (!live) open(key, HOLDS, expiresAt)
      q.putHold.run(key, id, amount.toString(), expiresAt)
      extendHolds(key, expiresAt)
      return true
    },
    closeHold: (key: string, id: string, keepMs: number) => {
      if (!isLive(key, HOLDS)) return
      if (keepMs <= 0) {
        q.deleteField.run(key, HOLDS, id)
        if (q.countFields.get(key, HOLDS)!.n === 0) q.deleteEntry.run(key, HOLDS)
        return
      }
      const t = now()
      if (q.closeHold.run(t, t + keepMs, key, id).changes > 0) extendHolds(key, t + keepMs)
    },
    delete: (key: string) => {
      q.deleteFields.run(key)
      q.deleteEntries.run(key)
    },
  }

  /** A set of holds lives as long as its longest hold. */
  function extendHolds(key: string, expiresAt: number): void {
    const current = q.header.get(key, HOLDS)?.expires_at ?? 0
    if (current !== null && current < expiresAt) q.setExpiry.run(expiresAt, key, HOLDS)
  }

  if (!db.readonly) sweepAll()
  const ledger = createSqliteLedger(db, { write })

  return {
    ledger,
    database: db,
    async get(key) {
      return q.getValue.get(key, now())?.value
    },
    set(key, value, options?: SetOptions) {
      return write(() => {
        // The expiry is computed when the write runs, as the claim's comparison is.
        const expiresAt = expiry(options)
        return (options?.ifAbsent ? q.claimValue.run(key, value, expiresAt, now()).changes : q.setValue.run(key, value, expiresAt).changes) > 0
      })
    },
    delete(key) {
      return write(() => void tx.delete(key))
    },
    incrementFields(key, increments, options) {
      return write(() => tx.incrementFields(key, increments, expiry(options)))
    },
    async readFields(key) {
      const out: Record<string, number> = {}
      for (const row of q.liveFields.all(key, HASH, key, HASH, now())) out[row.field] = row.num ?? 0
      return out
    },
    setTextFields(key, fields, options) {
      return write(() => tx.setTextFields(key, fields, expiry(options)))
    },
    async readTextFields(key) {
      const out: Record<string, string> = {}
      for (const row of q.liveFields.all(key, TEXT, key, TEXT, now())) out[row.field] = row.text ?? ''
      return out
    },
    async addDistinct(key, members, options) {
      if (members.length === 0) return
      await write(() => tx.addDistinct(key, members, expiry(options)))
    },
    async countDistinct(keys) {
      return keys.length === 0 ? 0 : tx.countDistinct(keys)
    },
    incrementRanked(key, member, by, options) {
      return write(() => tx.incrementRanked(key, member, by, expiry(options), options?.cap))
    },
    async readRanked(key, range = {}) {
      const offset = range.offset ?? 0
      // SQLite reads LIMIT -1 as no limit.
      return q.ranked.all(key, key, now(), range.limit ?? -1, offset)
    },
    async countRanked(key) {
      return isLive(key, RANKING) ? q.countFields.get(key, RANKING)!.n : 0
    },
    async placeHold(key, id, hold) {
      const amount = decimal(hold.amount)
      const limit = decimal(hold.limit)
      return write(() => tx.placeHold(key, id, amount, limit, Math.floor(hold.since), Math.max(1, Math.ceil(hold.ttlMs))))
    },
    closeHold(key, id, options = {}) {
      return write(() => tx.closeHold(key, id, Math.max(0, Math.ceil(options.keepMs ?? 0))))
    },
    sweep: sweepAll,
    async close() {
      // Writes already issued are committed before the file closes.
      closeWrites()
      if (owned && db.open) db.close()
    },
  }
}

/** A non-negative decimal integer of any size. */
function decimal(value: string): bigint {
  const parsed = BigInt(value)
  if (parsed < 0n) throw new RangeError('a hold amount or limit cannot be negative')
  return parsed
}
