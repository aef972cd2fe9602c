import { join, resolve } from 'node:path'
import type { FacilitatorHooks } from 'x402-facilitator'
import { createLedgerRecorder, ledgerRoute } from 'x402-facilitator/ledger'
import type { ExtraRoute } from 'x402-facilitator/http'
import { createSqliteStore, type SqliteStore, type SqliteSynchronous } from 'x402-facilitator/stores/sqlite'

/** What a facilitator keeps in a data directory, ready to plug in. */
export interface DataDirectory {
  /** The directory (absolute). */
  readonly dir: string
  /** Its SQLite file: settlement claims and records, statistics, catalog, holds, rate limits and the ledger. */
  readonly file: string
  readonly store: SqliteStore
  /** Records every settle outcome in the file's ledger. */
  readonly hooks: readonly FacilitatorHooks[]
  /** `GET /ledger` (private: give the handler an `authenticate` hook that admits operators). */
  readonly routes: readonly ExtraRoute[]
  close(): Promise<void>
}

/**
 * A data directory for the node:http example: one SQLite file (`facilitator.sqlite`,
 * created with its directory), so the facilitator keeps what it remembers across
 * restarts with no server to run. `X402_DATA_DIR` names it where the caller does not.
 *
 * @example
 * const data = openDataDirectory(process.env.X402_DATA_DIR ?? './data')
 * const facilitator = createFacilitator({ schemes, store: data.store, hooks: [...data.hooks] })
 * await startNodeHttpServer(facilitator, {
 *   routes: [...data.routes],
 *   authenticate: (request, route) => route !== 'private' || request.headers.get('authorization') === `Bearer ${process.env.ADMIN_TOKEN}`,
 * })
 */
export function openDataDirectory(dir = process.env.X402_DATA_DIR ?? './data', options: { synchronous?: SqliteSynchronous } = {}): DataDirectory {
  const absolute = resolve(dir)
  const file = join(absolute, 'facilitator.sqlite')
  const store = createSqliteStore({ path: file, synchronous: options.synchronous })
  return {
    dir: absolute,
    file,
    store,
    hooks: [createLedgerRecorder({ ledger: store.ledger })],
    routes: [ledgerRoute(store.ledger)],
    close: () => store.close(),
  }
}
