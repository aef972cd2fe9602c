// Entry of `x402-facilitator/stores/postgres`: needs the optional peer pg.
export { createPostgresStore, POSTGRES_STORE_DEFAULTS, type PostgresStore, type PostgresStoreOptions } from './postgres-store.js'
export { createPostgresLedger, type PostgresLedgerConnection } from './postgres-ledger.js'
export { migratePostgres, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js'
