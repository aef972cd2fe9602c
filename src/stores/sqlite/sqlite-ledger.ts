import type Database from 'better-sqlite3'
import { ledgerEntryFromRow, type LedgerTableRow } from '../../ledger/ledger-table-row.js'
import { ledgerFilter, ledgerPage, ledgerRow, type LedgerEntry, type SettlementLedger } from '../../ledger/settlement-ledger.js'

/** A row of the table: ids, times and the flag in this database's types. */
type LedgerRow = LedgerTableRow<number, number, number>

/** How appends reach the file: at once, or in the store's write batches. */
export interface SqliteLedgerOptions {
  /** Runs a write (the store passes its batching; without, each append commits on its own). */
  write?: <T>(run: () => T) => Promise<T>
}

/**
 * The settlement ledger in the `x402_ledger` table of a SQLite database whose
 * schema `createSqliteStore` set up (the store's `ledger` is one, whose appends
 * commit with the store's other writes).
 *
 * @example
 * // partial
 * const store = createSqliteStore({ path: './data/facilitator.sqlite' })
 * const { entries } = await store.ledger.read({ status: 'failed', limit: 20 })
 */
export function createSqliteLedger(db: Database.Database, options: SqliteLedgerOptions = {}): SettlementLedger {
  const write = options.write ?? (async <T>(run: () => T) => run())
  // A transaction's second settled row is skipped, not failed: the file's unique index holds one (schema version 3).
  const insert = db.prepare(`INSERT INTO x402_ledger
    (recorded_at, started_at, status, resumed, error_reason, error_message, network, scheme, x402_version, payer, pay_to, asset, amount, transaction_id, resource_url, cost)
    VALUES (@recordedAt, @startedAt, @status, @resumed, @errorReason, @errorMessage, @network, @scheme, @x402Version, @payer, @payTo, @asset, @amount, @transaction, @resourceUrl, @cost)
    ON CONFLICT DO NOTHING`)
  // Statements by the filters a query uses, prepared once each.
  const selects = new Map<string, Database.Statement<unknown[], LedgerRow>>()

  return {
    async append(entry) {
      const row = ledgerRow(entry)
      await write(() => insert.run({ ...row, resumed: row.resumed ? 1 : 0 }))
    },
    async read(query) {
      const filter = ledgerFilter(query)
      const where: string[] = []
      const values: unknown[] = []
      const add = (clause: string, value: unknown) => {
        where.push(clause)
        values.push(value)
      }
      if (filter.afterId !== undefined) add(filter.order === 'asc' ? 'id > ?' : 'id < ?', filter.afterId)
      if (filter.fromMs !== undefined) add('recorded_at >= ?', filter.fromMs)
      if (filter.toMs !== undefined) add('recorded_at < ?', filter.toMs)
      if (filter.payer !== undefined) add('payer = ?', filter.payer)
      if (filter.payTo !== undefined) add('pay_to = ?', filter.payTo)
      if (filter.network !== undefined) add('network = ?', filter.network)
      if (filter.status !== undefined) add('status = ?', filter.status)
      const sql = `SELECT * FROM x402_ledger ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${filter.order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`
      let statement = selects.get(sql)
      if (!statement) {
        statement = db.prepare<unknown[], LedgerRow>(sql)
        selects.set(sql, statement)
      }
      const rows = statement.all(...values, filter.limit + 1)
      return ledgerPage(rows.map(toEntry), filter)
    },
  }
}

function toEntry(row: LedgerRow): LedgerEntry {
  return ledgerEntryFromRow(row, { id: (value) => value, time: (value) => new Date(value).toISOString(), flag: (value) => value === 1 })
}
