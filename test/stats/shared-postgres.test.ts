/**
 * Two facilitator instances on one PostgreSQL database: a payment settled once
 * and counted once, statistics and the catalog adding up across them.
 */
import { describe } from 'vitest'
import { usePostgresStores } from '../support/postgres-server.js'
import { sharedCatalogCase, sharedStatsCases, type SharedStore } from './shared-stats-cases.js'

const postgres = usePostgresStores()
const shared: SharedStore = { store: (schema) => postgres.store(schema), catalog: true }

describe('two facilitators sharing one PostgreSQL database', () => {
  sharedStatsCases(shared)
  sharedCatalogCase(shared)
})
