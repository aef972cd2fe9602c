/**
 * A facilitator process on a SQLite file, killed with SIGKILL in the middle of a
 * settle (after the transaction was journaled in the file, before its
 * confirmation), then restarted on the same file: the retried settle answers the
 * original transaction, nothing is sent twice, and the ledger in the file says
 * what happened. The scenario is in crash-scenario.ts; this file describes the
 * SQLite file under it and adds the ledger check.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { expect } from 'vitest'
import { createSqliteStore } from '../../src/stores/sqlite/sqlite-store.js'
import { describeCrashMidSettle } from './crash-scenario.js'

describeCrashMidSettle({
  names: { describe: 'crash in the middle of a settle, on SQLite', log: 'crash-sqlite', holder: 'the file', same: 'file', missing: 'the SQLite file' },
  async start() {
    const dir = mkdtempSync(join(tmpdir(), 'x402-crash-sqlite-'))
    const path = join(dir, 'facilitator.sqlite')
    return {
      listeningOn: `on ${path}`,
      env: { SQLITE_PATH: path },
      // Reads the file as another process, through its own connection.
      openRecords() {
        const reader = new Database(path)
        return {
          values: async () => (reader.prepare(`SELECT value FROM x402_entries WHERE kind = 'v' AND key LIKE 'settlement:%'`).all() as { value: string }[]).map((row) => row.value),
          close: () => reader.close(),
        }
      },
      async afterRetry({ transaction, payer, amount }) {
        // The ledger in the file: process 1 died before its outcome; process 2 wrote one row, marked resumed
        // (the repeat answered from the record appends it again, and is skipped). It is written after the answer: wait for it, bounded.
        const reader = createSqliteStore({ path })
        const rowsOf = async () => (await reader.ledger.read()).entries.filter((row) => row.transaction === transaction)
        let rows = await rowsOf()
        for (const deadline = Date.now() + 3_000; rows.length === 0 && Date.now() < deadline; rows = await rowsOf()) {
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
        expect(rows.map((row) => [row.status, row.resumed, row.transaction, row.payer, row.amount])).toEqual([
          ['settled', true, transaction, payer.address.toLowerCase(), amount],
        ])
        await reader.close()
      },
      async stop() {
        rmSync(dir, { recursive: true, force: true })
      },
    }
  },
})
