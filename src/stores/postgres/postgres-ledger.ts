import type pg from 'pg'
import { ledgerEntryFromRow, type LedgerTableRow } from '../../ledger/ledger-table-row.js'
import { ledgerFilter, ledgerPage, ledgerRow, type LedgerEntry, type NewLedgerEntry, type SettlementLedger } from '../../ledger/settlement-ledger.js'

/** A row of the table: ids, times and the flag in this database's types. */
type LedgerRow = LedgerTableRow<string, Date, boolean>

/** How the ledger reaches the database: the store's query (after its migration), and its quoted schema. */
export interface PostgresLedgerConnection {
  query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>>
  schema: string
  /** Appends a checked row (the store sends it with its other calls); without it, one INSERT each. */
  append?(row: NewLedgerEntry): Promise<void>
}

/**
 * The settlement ledger in the `ledger` table of the store's schema (the
 * store's `ledger` is one). Rows of every instance sharing the database are in
 * it; ids come from one identity column, so they are unique, and increase in the
 * order rows were appended (two instances appending at the same moment may
 * commit out of id order: read a range that ended a few seconds ago to be sure
 * every row of it is there). A transaction has one `settled` row: a second append of one is
 * skipped (the table's unique index, schema version 3).
 */
export function createPostgresLedger(connection: PostgresLedgerConnection): SettlementLedger {
  const s = connection.schema
  const insert = `INSERT INTO ${s}.ledger
    (recorded_at, started_at, status, resumed, error_reason, error_message, network, scheme, x402_version, payer, pay_to, asset, amount, transaction_id, resource_url, cost)
    VALUES (to_timestamp($1::double precision / 1000), to_timestamp($2::double precision / 1000), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::numeric, $14, $15, $16::numeric)
    ON CONFLICT DO NOTHING`
  return {
    async append(entry) {
      const row = ledgerRow(entry)
      if (connection.append) return connection.append(row)
      await connection.query(insert, [
        row.recordedAt,
        row.startedAt,
        row.status,
        row.resumed,
        row.errorReason,
        row.errorMessage,
        row.network,
        row.scheme,
        row.x402Version,
        row.payer,
        row.payTo,
        row.asset,
        row.amount,
        row.transaction,
        row.resourceUrl,
        row.cost,
      ])
    },
    async read(query) {
      const filter = ledgerFilter(query)
      const where: string[] = []
      const values: unknown[] = []
      const add = (clause: (n: string) => string, value: unknown) => {
        values.push(value)
        where.push(clause(`$${values.length}`))
      }
      if (filter.afterId !== undefined) add((n) => (filter.order === 'asc' ? `id > ${n}` : `id < ${n}`), filter.afterId)
      if (filter.fromMs !== undefined) add((n) => `recorded_at >= to_timestamp(${n}::double precision / 1000)`, filter.fromMs)
      if (filter.toMs !== undefined) add((n) => `recorded_at < to_timestamp(${n}::double precision / 1000)`, filter.toMs)
      if (filter.payer !== undefined) add((n) => `payer = ${n}`, filter.payer)
      if (filter.payTo !== undefined) add((n) => `pay_to = ${n}`, filter.payTo)
      if (filter.network !== undefined) add((n) => `network = ${n}`, filter.network)
      if (filter.status !== undefined) add((n) => `status = ${n}`, filter.status)
      values.push(filter.limit + 1)
      const text = `SELECT id, recorded_at, started_at, status, resumed, error_reason, error_message, network, scheme, x402_version,
          payer, pay_to, asset, amount::text AS amount, transaction_id, resource_url, cost::text AS cost
        FROM ${s}.ledger ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY id ${filter.order === 'asc' ? 'ASC' : 'DESC'} LIMIT $${values.length}`
      const { rows } = await connection.query<LedgerRow>(text, values)
      return ledgerPage(rows.map(toEntry), filter)
    },
  }
}

function toEntry(row: LedgerRow): LedgerEntry {
  return ledgerEntryFromRow(row, { id: Number, time: (value) => value.toISOString(), flag: (value) => value })
}
