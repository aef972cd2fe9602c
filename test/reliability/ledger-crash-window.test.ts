/**
 * The ledger's crash window (issue #30): a process that dies after the settlement record says
 * `settled` and before its ledger append lost that row, and the retry, answered from the record,
 * did not write it. Now a retry writes it, and retries never write a second one: the ledger keeps
 * one settled row per transaction. On a SQLite file and a PostgreSQL schema a child process is
 * killed with SIGKILL right after the record is written; in memory the first append fails instead.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createLedgerRecorder } from '../../src/ledger/ledger-recorder.js'
import { createMemoryLedger } from '../../src/ledger/memory-ledger.js'
import type { LedgerEntry, SettlementLedger } from '../../src/ledger/settlement-ledger.js'
import { decodeSettlementRecord } from '../../src/settlement/settlement-record.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { createPostgresStore } from '../../src/stores/postgres/postgres-store.js'
import { createSqliteStore } from '../../src/stores/sqlite/sqlite-store.js'
import type { Store } from '../../src/stores/store.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'
import { startPostgresServer, type PostgresServer } from '../support/postgres-server.js'

const SCRIPT = fileURLToPath(new URL('./fixtures/ledger-settle-process.ts', import.meta.url))
const PAYER = '0xAbCdEf0000000000000000000000000000000007'
const SHOP = '0x5000000000000000000000000000000000000005'
// Same secret as the child's adapter: the bodies signed here verify there.
const signer = createLedgerAdapter()

type Opened = { store: Store; ledger: SettlementLedger; close(): Promise<void> }

/** A backend under the crash: how a child process reaches it, and how this process opens it (as another instance). */
interface Backend {
  env: Record<string, string>
  open(): Opened
}

/** Runs one settle of `body` in a child process that SIGKILLs itself once the record says settled. */
async function settleAndDie(backend: Backend, body: object): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    env: { ...process.env, ...backend.env, BODY: JSON.stringify(body), PAYER, BALANCE: '1000000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const signal = await new Promise<NodeJS.Signals | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the settle process did not die in time:\n${output}`))
    }, 30_000)
    child.once('exit', (_code, signal) => {
      clearTimeout(timer)
      resolve(signal)
    })
  })
  if (signal !== 'SIGKILL') throw new Error(`the settle process was to die by SIGKILL after the settled record, and exited otherwise:\n${output}`)
}

const settledRows = async (ledger: SettlementLedger, transaction: string): Promise<LedgerEntry[]> =>
  (await ledger.read({ status: 'settled', limit: 1000 })).entries.filter((e) => e.transaction === transaction)

/** The scenario on one backend: a crash in the window, then one retry, then many retries at once on two instances. */
function describeCrashWindow(name: string, backend: () => Backend) {
  describe(`the ledger's crash window, on ${name}`, () => {
    it('a retry after a process died between the settled record and its append writes the row, once', async () => {
      const body = ledgerBody(signer, { from: PAYER, to: SHOP, value: '2500', nonce: `${name}-one` })
      await settleAndDie(backend(), body)

      const a = backend().open()
      try {
        // The window reproduced: the record says settled, and the ledger holds nothing of it.
        const record = decodeSettlementRecord(await a.store.get(`settlement:${PAYER}:${name}-one`))
        expect(record).toMatchObject({ state: 'settled', transaction: expect.stringMatching(/^[0-9a-f]{64}$/) })
        const transaction = (record as { transaction: string }).transaction
        expect((await a.ledger.read()).entries).toEqual([])

        // The retry of the same body is answered from the record, on an instance whose "chain" never saw the payment.
        const facilitator = createFacilitator({ schemes: [createLedgerAdapter()], store: a.store, hooks: [createLedgerRecorder({ ledger: a.ledger })] })
        expect(await facilitator.settle(body)).toMatchObject({ success: true, transaction, payer: PAYER })
        await facilitator.drain()
        const rows = await settledRows(a.ledger, transaction)
        expect(rows).toHaveLength(1)
        // What a row written from the record carries: the payment as the retry's request states it, no cost.
        expect(rows[0]).toMatchObject({
          status: 'settled',
          resumed: false,
          errorReason: null,
          network: 'eip155:31337',
          scheme: 'exact',
          payer: PAYER.toLowerCase(),
          payTo: SHOP,
          asset: 'LEDGER',
          amount: '2500',
          transaction,
          resourceUrl: 'https://api.example.com/weather',
          cost: null,
        })
        // Asked again: the same answer, and still one row.
        expect(await facilitator.settle(body)).toMatchObject({ success: true, transaction })
        await facilitator.drain()
        expect(await settledRows(a.ledger, transaction)).toHaveLength(1)
        expect((await a.ledger.read()).entries).toHaveLength(1)
      } finally {
        await a.close()
      }
    })

    it('many retries at once, on two instances, after the crash: one row', async () => {
      const body = ledgerBody(signer, { from: PAYER, to: SHOP, value: '900', nonce: `${name}-many` })
      await settleAndDie(backend(), body)

      const instances = [backend().open(), backend().open()]
      try {
        const facilitators = instances.map((i) => createFacilitator({ schemes: [createLedgerAdapter()], store: i.store, hooks: [createLedgerRecorder({ ledger: i.ledger })] }))
        const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => facilitators[i % 2]!.settle(body)))
        expect(answers.every((answer) => answer.success)).toBe(true)
        const transaction = answers[0]!.transaction
        expect(new Set(answers.map((answer) => answer.transaction))).toEqual(new Set([transaction]))
        await Promise.all(facilitators.map((f) => f.drain()))
        const rows = await settledRows(instances[0]!.ledger, transaction)
        expect(rows.map((row) => [row.status, row.amount, row.transaction])).toEqual([['settled', '900', transaction]])
      } finally {
        await Promise.all(instances.map((i) => i.close()))
      }
    })
  })
}

const dir = mkdtempSync(join(tmpdir(), 'x402-ledger-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const sqlitePath = join(dir, 'facilitator.sqlite')
describeCrashWindow('SQLite', () => ({
  env: { SQLITE_PATH: sqlitePath },
  open: () => {
    const store = createSqliteStore({ path: sqlitePath })
    return { store, ledger: store.ledger, close: () => store.close() }
  },
}))

let server: PostgresServer | undefined
beforeAll(async () => {
  server = await startPostgresServer()
})
afterAll(async () => {
  await server?.stop()
})
describeCrashWindow('PostgreSQL', () => ({
  env: { POSTGRES_URL: server!.url, POSTGRES_SCHEMA: 'ledger_crash' },
  open: () => {
    const store = createPostgresStore({ connectionString: server!.url, schema: 'ledger_crash' })
    return { store, ledger: store.ledger, close: () => store.close() }
  },
}))

describe("the ledger's crash window, in memory", () => {
  it('an append lost after the settled record (the first instance fails it) is written by the retries, once', async () => {
    // In memory nothing outlives a process: the first instance's append fails instead, after its record says settled.
    const store = createMemoryStore()
    const ledger = createMemoryLedger()
    const lost: SettlementLedger = { read: (query) => ledger.read(query), append: () => Promise.reject(new Error('the process died before the append')) }
    const adapter = createLedgerAdapter()
    adapter.balances.set(PAYER, 1_000_000n)
    const errors: unknown[] = []
    const first = createFacilitator({ schemes: [adapter], store, hooks: [createLedgerRecorder({ ledger: lost })], onError: (error) => void errors.push(error) })
    const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '2500', nonce: 'memory' })
    const settled = await first.settle(body)
    expect(settled).toMatchObject({ success: true })
    await first.drain()
    expect(errors).toHaveLength(1)
    expect((await ledger.read()).entries).toEqual([])

    const retries = [0, 1].map(() => createFacilitator({ schemes: [adapter], store, hooks: [createLedgerRecorder({ ledger })] }))
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => retries[i % 2]!.settle(body)))
    expect(answers.every((answer) => answer.success && answer.transaction === settled.transaction)).toBe(true)
    await Promise.all(retries.map((f) => f.drain()))
    expect((await ledger.read()).entries.map((row) => [row.status, row.amount, row.transaction, row.cost])).toEqual([['settled', '2500', settled.transaction, null]])
    // Nothing was sent again: one transfer on the "chain".
    expect(adapter.applied.size).toBe(1)
  })
})
