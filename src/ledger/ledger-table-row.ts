import { ledgerStatusSchema, type LedgerEntry } from './settlement-ledger.js'

/**
 * A ledger row as an SQL table holds it (SQLite's `x402_ledger`, PostgreSQL's `ledger`): the same
 * columns, each database with its own types for the id, the times and the flag.
 */
export interface LedgerTableRow<Id, Time, Flag> {
  id: Id
  recorded_at: Time
  started_at: Time
  status: string
  resumed: Flag
  error_reason: string | null
  error_message: string | null
  network: string
  scheme: string
  x402_version: number
  payer: string | null
  pay_to: string
  asset: string
  amount: string
  transaction_id: string | null
  resource_url: string | null
  /** Absent from a row read through an older schema's column list. */
  cost?: string | null
}

/** How one database's column types read back: the id as a number, a time as ISO 8601, the flag as a boolean. */
export interface LedgerColumnTypes<Id, Time, Flag> {
  id(value: Id): number
  time(value: Time): string
  flag(value: Flag): boolean
}

/** A table row as the ledger answers it (an unknown status reads as `failed`, never as settled). */
export function ledgerEntryFromRow<Id, Time, Flag>(row: LedgerTableRow<Id, Time, Flag>, types: LedgerColumnTypes<Id, Time, Flag>): LedgerEntry {
  return {
    id: types.id(row.id),
    recordedAt: types.time(row.recorded_at),
    startedAt: types.time(row.started_at),
    status: ledgerStatusSchema.catch('failed').parse(row.status),
    resumed: types.flag(row.resumed),
    errorReason: row.error_reason,
    errorMessage: row.error_message,
    network: row.network,
    scheme: row.scheme,
    x402Version: row.x402_version,
    payer: row.payer,
    payTo: row.pay_to,
    asset: row.asset,
    amount: row.amount,
    transaction: row.transaction_id,
    resourceUrl: row.resource_url,
    cost: row.cost ?? null,
  }
}
