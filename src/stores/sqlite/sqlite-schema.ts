import type Database from 'better-sqlite3'
import type { SqliteSynchronous } from './sqlite-store.js'

/** Version 3: one settled row per transaction in the ledger (see the schema's description below). */
const LEDGER_SETTLED_ONCE = `
   -- Files of older versions may hold a transaction's settled row twice (two calls that both finished it).
   -- The first (lowest id) stays; the later ones move, whole, to x402_ledger_duplicates, which the library never reads.
   CREATE TABLE x402_ledger_duplicates AS SELECT * FROM x402_ledger WHERE 0;
   INSERT INTO x402_ledger_duplicates SELECT * FROM x402_ledger AS l
     WHERE l.status = 'settled' AND l.transaction_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM x402_ledger AS k
       WHERE k.status = 'settled' AND k.network = l.network AND k.transaction_id = l.transaction_id AND k.id < l.id);
   DROP TRIGGER x402_ledger_no_delete;
   DELETE FROM x402_ledger WHERE id IN (SELECT id FROM x402_ledger_duplicates);
   CREATE TRIGGER x402_ledger_no_delete BEFORE DELETE ON x402_ledger
     BEGIN SELECT RAISE(ABORT, 'the settlement ledger is append-only'); END;
   CREATE UNIQUE INDEX x402_ledger_settled_transaction ON x402_ledger (network, transaction_id)
     WHERE status = 'settled' AND transaction_id IS NOT NULL;
   -- An older library's plain INSERT of a second settled row is skipped as ON CONFLICT DO NOTHING would, not failed.
   CREATE TRIGGER x402_ledger_settled_once BEFORE INSERT ON x402_ledger
     WHEN NEW.status = 'settled' AND NEW.transaction_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM x402_ledger WHERE status = 'settled' AND network = NEW.network AND transaction_id = NEW.transaction_id)
     BEGIN SELECT RAISE(IGNORE); END;`

/**
 * The SQLite schema, by version (`PRAGMA user_version`). Each step runs once, in
 * order, inside one IMMEDIATE transaction: two processes opening a new file at
 * once migrate it once.
 *
 * - `x402_entries`: one row per key and kind (`v` value, `h` numeric hash, `t` text
 *   hash, `d` distinct-count sketch, `r` ranking, `b` holds on a balance), with its
 *   expiry; a value's string is in `value`.
 * - `x402_fields`: the fields of hashes, rankings (score in `num`), sketch registers
 *   (index in `field`, rank in `num`) and holds (amount in `text`).
 * - `x402_ledger`: the settlement ledger, append-only (triggers refuse UPDATE and DELETE).
 * - `x402_ledger_duplicates` (version 3): the second and later settled rows of a transaction
 *   that older versions wrote, moved out of the ledger; kept for audit, never read.
 *
 * Version 2 adds `x402_ledger.cost` (what the settle's transactions cost, a decimal string in the
 * chain's smallest unit; NULL in the rows written before it). Version 3 holds the ledger to one
 * `settled` row per transaction (network and transaction id): a unique partial index, which appends
 * meet with ON CONFLICT DO NOTHING, so a retry that writes the row a crash lost never writes a second one.
 * Steps only add, but for version 3's move of older duplicate rows (see LEDGER_SETTLED_ONCE), so a
 * process of an older library keeps working on a newer file.
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE x402_entries (
     key TEXT NOT NULL,
     kind TEXT NOT NULL,
     value TEXT,
     expires_at INTEGER,
     PRIMARY KEY (key, kind)
   ) WITHOUT ROWID;
   CREATE INDEX x402_entries_expiry ON x402_entries (expires_at) WHERE expires_at IS NOT NULL;
   CREATE TABLE x402_fields (
     key TEXT NOT NULL,
     kind TEXT NOT NULL,
     field TEXT NOT NULL,
     num REAL,
     text TEXT,
     closed_at INTEGER,
     expires_at INTEGER,
     PRIMARY KEY (key, kind, field)
   ) WITHOUT ROWID;
   -- Holds of a balance by when they close and expire: a hold is placed without reading the ones that no longer count.
   CREATE INDEX x402_fields_holds_closed ON x402_fields (key, closed_at) WHERE kind = 'b';
   CREATE INDEX x402_fields_holds_expiry ON x402_fields (key, expires_at) WHERE kind = 'b';
   CREATE TABLE x402_ledger (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     recorded_at INTEGER NOT NULL,
     started_at INTEGER NOT NULL,
     status TEXT NOT NULL,
     resumed INTEGER NOT NULL,
     error_reason TEXT,
     error_message TEXT,
     network TEXT NOT NULL,
     scheme TEXT NOT NULL,
     x402_version INTEGER NOT NULL,
     payer TEXT,
     pay_to TEXT NOT NULL,
     asset TEXT NOT NULL,
     amount TEXT NOT NULL,
     transaction_id TEXT,
     resource_url TEXT
   );
   CREATE INDEX x402_ledger_recorded_at ON x402_ledger (recorded_at);
   CREATE INDEX x402_ledger_payer ON x402_ledger (payer, id);
   CREATE INDEX x402_ledger_pay_to ON x402_ledger (pay_to, id);
   CREATE TRIGGER x402_ledger_no_update BEFORE UPDATE ON x402_ledger
     BEGIN SELECT RAISE(ABORT, 'the settlement ledger is append-only'); END;
   CREATE TRIGGER x402_ledger_no_delete BEFORE DELETE ON x402_ledger
     BEGIN SELECT RAISE(ABORT, 'the settlement ledger is append-only'); END;`,
  `ALTER TABLE x402_ledger ADD COLUMN cost TEXT;`,
  // 3: one settled row per transaction (LEDGER_SETTLED_ONCE, above).
  LEDGER_SETTLED_ONCE,
]

/** The schema version this library writes. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length

/**
 * Sets the connection up (WAL, synchronous, busy timeout) and brings the schema to the current
 * version (`toVersion`: no further, for the tests of an upgrade).
 */
export function openSqliteSchema(db: Database.Database, options: { synchronous: SqliteSynchronous; busyTimeoutMs: number; toVersion?: number }): void {
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs))}`)
  // Only takes effect on a new file (before its first table): pages of deleted rows can then go back to the file system.
  db.pragma('auto_vacuum = INCREMENTAL')
  if (!db.memory) db.pragma('journal_mode = WAL')
  db.pragma(`synchronous = ${options.synchronous === 'FULL' ? 'FULL' : 'NORMAL'}`)
  // The write-ahead log is truncated back to this size after a checkpoint instead of keeping its largest size.
  db.pragma('journal_size_limit = 16777216')
  if (db.readonly) return
  const migrate = db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number
    const target = Math.min(options.toVersion ?? SQLITE_SCHEMA_VERSION, SQLITE_SCHEMA_VERSION)
    if (version >= target) return
    for (let next = version; next < target; next++) db.exec(MIGRATIONS[next]!)
    db.pragma(`user_version = ${target}`)
  })
  migrate.immediate()
}
