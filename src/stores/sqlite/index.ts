// Entry of `x402-facilitator/stores/sqlite`: needs the optional peer better-sqlite3.
export { createSqliteStore, type SqliteStore, type SqliteStoreOptions, type SqliteSynchronous } from './sqlite-store.js'
export { createSqliteLedger, type SqliteLedgerOptions } from './sqlite-ledger.js'
export { SQLITE_SCHEMA_VERSION } from './sqlite-schema.js'
