// The ledger entry (`x402-facilitator/ledger`): one row per settlement, its recorder, route and CSV form.
export {
  LEDGER_DEFAULT_LIMIT,
  LEDGER_MAX_LIMIT,
  ledgerEntrySchema,
  ledgerPageSchema,
  ledgerStatusSchema,
  type LedgerEntry,
  type LedgerPage,
  type LedgerQuery,
  type LedgerStatus,
  type NewLedgerEntry,
  type SettlementLedger,
} from './settlement-ledger.js'
export { createMemoryLedger, type MemoryLedgerOptions } from './memory-ledger.js'
export { createLedgerRecorder, type LedgerRecorderOptions } from './ledger-recorder.js'
export { LEDGER_CSV_COLUMNS, ledgerCsv } from './ledger-csv.js'
export { LEDGER_PATH, ledgerRoute, type LedgerRouteOptions } from './ledger-route.js'
