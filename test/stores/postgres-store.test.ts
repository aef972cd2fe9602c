import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migratePostgres, POSTGRES_SCHEMA_VERSION } from '../../src/stores/postgres/postgres-migrations.js'
import { createPostgresStore, type PostgresStore } from '../../src/stores/postgres/postgres-store.js'
import { ledgerConformance, sampleEntry } from '../ledger/ledger-conformance.js'
import { startPostgresServer, type PostgresServer } from '../support/postgres-server.js'
import { settlementStoreConformance } from './settlement-store-conformance.js'
import { statsStoreConformance } from './stats-store-conformance.js'
import type { Store } from '../../src/stores/store.js'
import type { StoreFactory } from './key-value-cases.js'

let server: PostgresServer
let admin: pg.Client
let run = 0
beforeAll(async () => {
  server = await startPostgresServer()
  admin = new pg.Client(server.url)
  await admin.connect()
})
afterAll(async () => {
  await admin?.end()
  await server?.stop()
})

let clock = 1_000_000
// Each test gets a schema of its own on the shared server, created and migrated by the store itself.
const factory: StoreFactory<Store> = {
  create: async () => createPostgresStore({ connectionString: server.url, schema: `conformance_${++run}`, now: () => clock }),
  advance: async (ms) => {
    clock += ms
  },
}
settlementStoreConformance('postgres store', factory)
statsStoreConformance('postgres store', factory)

ledgerConformance('postgres', {
  create: async () => {
    const store = createPostgresStore({ connectionString: server.url, schema: `ledger_${++run}` })
    return { ledger: store.ledger, close: () => store.close() }
  },
})

describe('postgres store', () => {
  it('migrates a new database once when instances start at the same moment', async () => {
    const stores = Array.from({ length: 8 }, () => createPostgresStore({ connectionString: server.url, schema: 'migrate_race' }))
    // Without the advisory lock, racing CREATE SCHEMA / CREATE TABLE fail with duplicate-key errors.
    await Promise.all(stores.map((store) => store.ready()))
    const { rows } = await admin.query('SELECT version FROM migrate_race.schema_migrations ORDER BY version')
    expect(rows.map((r) => r.version)).toEqual(Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1))
    // Every instance works on it, and a later start finds nothing to do.
    await Promise.all(stores.map((store, i) => store.incrementFields('h', { n: i })))
    const late = createPostgresStore({ connectionString: server.url, schema: 'migrate_race' })
    expect(await late.readFields('h')).toEqual({ n: 28 })
    await Promise.all([...stores, late].map((store) => store.close()))
  })

  it('sends the calls of one turn as one statement, and a call that fails there fails alone', async () => {
    const store = createPostgresStore({ connectionString: server.url, schema: 'batches' })
    await store.ready()
    // Count the statements the store sends through its pool.
    const sent: string[] = []
    const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown
    ;(store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
      sent.push((args[0] as { text: string }).text)
      return query(...args)
    }
    // PostgreSQL text cannot hold a NUL character: that set fails, in the middle of the others.
    const results = await Promise.allSettled([
      store.set('a', '1'),
      store.set('b', 'bad\u0000value'),
      store.set('c', '3', { ifAbsent: true }),
      store.placeHold('hold', 'p', { amount: '5', limit: '10', since: 0, ttlMs: 60_000 }),
    ])
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'failed'))).toEqual([true, 'failed', true, true])
    // The four calls went as one statement, and after it failed as four of one call each.
    expect(sent).toHaveLength(5)
    expect(sent.every((text) => text.includes('run_batch'))).toBe(true)
    // Reads of one turn go together too, in a batch of their own.
    expect(await Promise.all([store.get('a'), store.get('b'), store.get('c'), store.readFields('none')])).toEqual(['1', undefined, '3', {}])
    expect(sent).toHaveLength(6)
    await store.close()
  })

  it('refuses a schema name that is not a plain identifier', () => {
    expect(() => createPostgresStore({ connectionString: server.url, schema: 'x"; DROP TABLE y; --' })).toThrow(/plain SQL identifier/)
  })

  it('shares claims, counters, sketches, rankings, holds and the ledger between two instances', async () => {
    const [a, b] = [0, 1].map(() => createPostgresStore({ connectionString: server.url, schema: 'shared' })) as [PostgresStore, PostgresStore]
    expect(await a.set('claim', 'a', { ifAbsent: true, ttlMs: 10_000 })).toBe(true)
    expect(await b.set('claim', 'b', { ifAbsent: true, ttlMs: 10_000 })).toBe(false)
    await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).incrementFields('h', { n: 1 })))
    await a.addDistinct('d', ['x', 'y'])
    await b.addDistinct('d', ['y', 'z'])
    await a.incrementRanked('r', 'm', 1)
    await b.incrementRanked('r', 'm', 1)
    expect(await a.placeHold('hold', 'p1', { amount: '600', limit: '1000', since: 0, ttlMs: 60_000 })).toBe(true)
    expect(await b.placeHold('hold', 'p2', { amount: '600', limit: '1000', since: 0, ttlMs: 60_000 })).toBe(false)
    await a.ledger.append(sampleEntry(0))
    await b.ledger.append(sampleEntry(1))
    expect(await b.readFields('h')).toEqual({ n: 100 })
    expect(await a.countDistinct(['d'])).toBe(3)
    expect(await a.readRanked('r')).toEqual([{ member: 'm', score: 2 }])
    expect((await a.ledger.read()).entries.map((e) => e.recordedAt)).toEqual(['2026-11-20T12:01:00.000Z', '2026-11-20T12:00:00.000Z'])
    await Promise.all([a.close(), b.close()])
  })

  it('sweeps expired keys and their fields, and leaves a key written meanwhile alone', async () => {
    let now = 0
    const store = createPostgresStore({ connectionString: server.url, schema: 'sweep', now: () => now, sweepIntervalMs: 0 })
    for (let i = 0; i < 300; i++) {
      await store.set(`v${i}`, 'x', { ttlMs: 1_000 })
      await store.incrementFields(`h${i % 30}`, { n: 1 }, { ttlMs: 1_000 })
      await store.addDistinct(`d${i % 10}`, [`m${i}`], { ttlMs: 1_000 })
    }
    await store.set('forever', 'x')
    now = 5_000
    await store.incrementFields('h0', { n: 1 }, { ttlMs: 1_000 })
    expect(await store.sweep()).toBe(300 + 29 + 10)
    const count = async (table: string) => Number((await admin.query(`SELECT count(*) AS n FROM sweep.${table}`)).rows[0].n)
    // What is left: the value without expiry, and h0 with its one fresh field.
    expect(await count('entries')).toBe(2)
    expect(await count('fields')).toBe(1)
    expect(await store.readFields('h0')).toEqual({ n: 1 })
    await store.close()
  })

  it('keeps the ledger append-only: the database refuses UPDATE and DELETE of its rows', async () => {
    const store = createPostgresStore({ connectionString: server.url, schema: 'append_only' })
    await store.ledger.append(sampleEntry(0))
    await expect(admin.query(`UPDATE append_only.ledger SET amount = 1`)).rejects.toThrow(/append-only/)
    await expect(admin.query('DELETE FROM append_only.ledger')).rejects.toThrow(/append-only/)
    expect((await store.ledger.read()).entries[0]!.amount).toBe('10000')
    await store.close()
  })

  it('commits counters without waiting for the flush, on a pool of their own, and everything else with it', async () => {
    const store = createPostgresStore({ connectionString: server.url, schema: 'commits' })
    const setting = async (pool: pg.Pool) => (await pool.query(`SELECT source FROM pg_settings WHERE name = 'synchronous_commit'`)).rows[0].source as string
    // Set by the session's start-up options: the server's own default is untouched.
    expect(await setting(store.counterPool)).toBe('client')
    expect(await setting(store.pool)).not.toBe('client')
    const strict = createPostgresStore({ connectionString: server.url, schema: 'commits', counterCommits: 'sync' })
    expect(strict.counterPool).toBe(strict.pool)
    await Promise.all([store.close(), strict.close()])
  })

  it('fails fast on a server that is not there', async () => {
    const dead = createPostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:1/postgres', postgres: { connectionTimeoutMillis: 300 } })
    const started = performance.now()
    await expect(dead.set('claim', 'x', { ifAbsent: true })).rejects.toThrow()
    expect(performance.now() - started).toBeLessThan(1_000)
    await dead.close()
  })

  it('uses a given pool and leaves it open on close', async () => {
    const pool = new pg.Pool({ connectionString: server.url })
    // An application's own pool hears its idle clients' errors (the server stopping at the end of the run).
    pool.on('error', () => undefined)
    const store = createPostgresStore({ pool, schema: 'given_pool' })
    await store.set('a', '1')
    await store.close()
    expect((await pool.query(`SELECT value FROM given_pool.entries WHERE key = 'a'`)).rows[0].value).toBe('1')
    await pool.end()
  })

  it('upgrades a schema of version 1 (no ledger cost): its rows read with cost null, new rows keep theirs, an older instance still appends', async () => {
    // The schema as version 1 of the library left it, with a row appended through its batch statement.
    const pool = new pg.Pool({ connectionString: server.url })
    await migratePostgres(pool, 'version_one', 1)
    const columns = async () => (await admin.query(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'version_one' AND table_name = 'ledger'`)).rows.map((r) => r.column_name)
    expect(await columns()).not.toContain('cost')
    const { cost: _none, ...versionOneRow } = sampleEntry(0)
    const versionOneAppend = (row: object) => pool.query('SELECT version_one.run_batch($1::jsonb, $2::bigint)', [JSON.stringify([{ o: 'ledger', k: '', ...row }]), Date.now()])
    await versionOneAppend(versionOneRow)

    const store = createPostgresStore({ connectionString: server.url, schema: 'version_one' })
    await store.ready()
    expect((await admin.query('SELECT max(version) AS v FROM version_one.schema_migrations')).rows[0].v).toBe(POSTGRES_SCHEMA_VERSION)
    expect(await columns()).toContain('cost')
    await store.ledger.append(sampleEntry(1, { cost: '123456789012345678901234567890' }))
    // An instance of the older library on the upgraded schema: its batch op carries no cost. It calls the
    // batch function the upgrade replaced, so its second settled row of a transaction is skipped too.
    await versionOneAppend({ ...versionOneRow, recordedAt: versionOneRow.recordedAt + 120_000, transaction: `0x${'2'.repeat(64)}` })
    await versionOneAppend({ ...versionOneRow, recordedAt: versionOneRow.recordedAt + 180_000 })
    const rows = (await store.ledger.read({ order: 'asc' })).entries
    expect(rows.map((row) => [row.recordedAt.slice(11, 16), row.amount, row.cost])).toEqual([
      ['12:00', '10000', null],
      ['12:01', '10000', '123456789012345678901234567890'],
      ['12:02', '10000', null],
    ])
    await expect(admin.query(`UPDATE version_one.ledger SET cost = 1`)).rejects.toThrow(/append-only/)
    await store.close()
    await pool.end()
  })

  it('upgrades a schema of version 2 holding a transaction settled twice: the first row stays, the later moves aside, later appends are unique', async () => {
    // The schema as version 2 left it after two calls both finished one transaction, appended through its batch statement.
    const pool = new pg.Pool({ connectionString: server.url })
    await migratePostgres(pool, 'version_two', 2)
    const versionTwoAppend = (rows: object[]) => pool.query('SELECT version_two.run_batch($1::jsonb, $2::bigint)', [JSON.stringify(rows.map((row) => ({ o: 'ledger', k: '', ...row }))), Date.now()])
    const tx = `0x${'d'.repeat(64)}`
    await versionTwoAppend([
      sampleEntry(0, { transaction: tx, status: 'pending', errorReason: 'settlement_pending' }),
      sampleEntry(1, { transaction: tx, cost: '500' }),
      sampleEntry(2, { transaction: tx, cost: '700' }),
      sampleEntry(3, { transaction: `0x${'e'.repeat(64)}` }),
    ])
    await versionTwoAppend([sampleEntry(4, { transaction: tx })])

    // Two instances of this version start at once: one migrates, under the lock.
    const [a, b] = [0, 1].map(() => createPostgresStore({ connectionString: server.url, schema: 'version_two' })) as [PostgresStore, PostgresStore]
    await Promise.all([a.ready(), b.ready()])
    expect((await admin.query('SELECT max(version) AS v FROM version_two.schema_migrations')).rows[0].v).toBe(POSTGRES_SCHEMA_VERSION)
    const summary = (rows: { recordedAt: string; status: string; transaction: string | null; cost: string | null }[]) =>
      rows.map((r) => [r.recordedAt.slice(11, 16), r.status, r.transaction?.slice(0, 4), r.cost])
    expect(summary((await a.ledger.read({ order: 'asc' })).entries)).toEqual([
      ['12:00', 'pending', '0xdd', null],
      ['12:01', 'settled', '0xdd', '500'],
      ['12:03', 'settled', '0xee', null],
    ])
    // The later duplicates are kept whole, aside, with their ids.
    const aside = await admin.query('SELECT id::integer AS id, cost::text AS cost FROM version_two.ledger_duplicates ORDER BY id')
    expect(aside.rows).toEqual([{ id: 3, cost: '700' }, { id: 5, cost: null }])
    // From now on a settled transaction's row appended again is skipped: by this version's instances, racing,
    // and by an instance of version 2 (its batch statement is the function the upgrade replaced).
    const racing = `0x${'f'.repeat(64)}`
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).ledger.append(sampleEntry(6 + i, { transaction: racing }))))
    await a.ledger.append(sampleEntry(20, { transaction: tx }))
    await versionTwoAppend([sampleEntry(21, { transaction: tx })])
    const after = (await a.ledger.read({ order: 'asc' })).entries
    expect(after.map((r) => r.transaction?.slice(0, 4))).toEqual(['0xdd', '0xdd', '0xee', '0xff'])
    await expect(admin.query('DELETE FROM version_two.ledger')).rejects.toThrow(/append-only/)
    await Promise.all([a.close(), b.close()])
    await pool.end()
  })
})
