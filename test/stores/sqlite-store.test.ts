import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { openSqliteSchema, SQLITE_SCHEMA_VERSION } from '../../src/stores/sqlite/sqlite-schema.js'
import { createSqliteStore } from '../../src/stores/sqlite/sqlite-store.js'
import { ledgerConformance, sampleEntry } from '../ledger/ledger-conformance.js'
import { settlementStoreConformance } from './settlement-store-conformance.js'
import { statsStoreConformance } from './stats-store-conformance.js'
import type { Store } from '../../src/stores/store.js'
import type { StoreFactory } from './key-value-cases.js'

const dir = mkdtempSync(join(tmpdir(), 'x402-sqlite-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let clock = 1_000_000
let run = 0
// A real file per test (WAL, the default synchronous), on a clock the test moves.
const factory: StoreFactory<Store> = {
  create: async () => createSqliteStore({ path: join(dir, `conformance-${++run}.sqlite`), now: () => clock }),
  advance: async (ms) => {
    clock += ms
  },
}
settlementStoreConformance('sqlite store', factory)
statsStoreConformance('sqlite store', factory)

let ledgers = 0
ledgerConformance('sqlite', {
  create: async () => {
    const store = createSqliteStore({ path: join(dir, `ledger-${++ledgers}.sqlite`) })
    return { ledger: store.ledger, close: () => store.close() }
  },
})

describe('sqlite store', () => {
  it('keeps claims, counters, sketches, rankings, holds and ledger rows across a reopen of the file', async () => {
    const path = join(dir, 'reopen.sqlite')
    const first = createSqliteStore({ path })
    await first.set('settlement:exact:x', '{"state":"settled"}', { ifAbsent: true, ttlMs: 60_000 })
    await first.incrementFields('stats:all', { n: 2 })
    await first.addDistinct('payers', ['a', 'b'])
    await first.incrementRanked('catalog:index', 'r1', 3)
    await first.placeHold('hold:x', 'p1', { amount: '700', limit: '1000', since: 0, ttlMs: 60_000 })
    await first.ledger.append(sampleEntry(0))
    await first.close()

    const second = createSqliteStore({ path })
    expect(await second.get('settlement:exact:x')).toBe('{"state":"settled"}')
    expect(await second.set('settlement:exact:x', 'again', { ifAbsent: true })).toBe(false)
    expect(await second.readFields('stats:all')).toEqual({ n: 2 })
    expect(await second.countDistinct(['payers'])).toBe(2)
    expect(await second.readRanked('catalog:index')).toEqual([{ member: 'r1', score: 3 }])
    expect(await second.placeHold('hold:x', 'p2', { amount: '400', limit: '1000', since: 0, ttlMs: 60_000 })).toBe(false)
    expect((await second.ledger.read()).entries).toHaveLength(1)
    await second.close()
  })

  it('commits the writes issued together in one transaction, each atomic: one that fails midway leaves nothing', async () => {
    const store = createSqliteStore({ path: join(dir, 'batch.sqlite') })
    const changes = () => store.database.prepare('SELECT total_changes() AS n').get() as { n: number }
    const before = changes().n
    // The second field cannot be bound (an object): that write fails after its first field was written.
    const bad = { a: 1, b: {} } as unknown as Record<string, number>
    const results = await Promise.allSettled([
      store.incrementFields('h', { n: 1 }),
      store.incrementFields('broken', bad),
      store.set('claim', 'x', { ifAbsent: true }),
      store.incrementFields('h', { n: 1 }),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    expect(await store.readFields('h')).toEqual({ n: 2 })
    expect(await store.readFields('broken')).toEqual({})
    expect(await store.get('claim')).toBe('x')
    expect(changes().n).toBeGreaterThan(before)
    await store.close()
  })

  it('opens in WAL mode with the synchronous level asked for', async () => {
    const normal = createSqliteStore({ path: join(dir, 'normal.sqlite') })
    const full = createSqliteStore({ path: join(dir, 'full.sqlite'), synchronous: 'FULL' })
    expect(normal.database.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(normal.database.pragma('synchronous', { simple: true })).toBe(1)
    expect(full.database.pragma('synchronous', { simple: true })).toBe(2)
    await Promise.all([normal.close(), full.close()])
  })

  it('shares claims and counters between two stores on one file (as two processes would)', async () => {
    const path = join(dir, 'shared.sqlite')
    const a = createSqliteStore({ path })
    const b = createSqliteStore({ path })
    expect(await a.set('claim', 'a', { ifAbsent: true, ttlMs: 10_000 })).toBe(true)
    expect(await b.set('claim', 'b', { ifAbsent: true, ttlMs: 10_000 })).toBe(false)
    await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).incrementFields('h', { n: 1 })))
    expect(await a.readFields('h')).toEqual({ n: 100 })
    await a.ledger.append(sampleEntry(0))
    await b.ledger.append(sampleEntry(1))
    expect((await a.ledger.read()).entries.map((e) => e.id)).toEqual([2, 1])
    await Promise.all([a.close(), b.close()])
  })

  it('sweeps expired keys so that expiring traffic does not grow the file', async () => {
    let now = 0
    const path = join(dir, 'sweep.sqlite')
    const store = createSqliteStore({ path, now: () => now, sweepEveryWrites: 500 })
    const pages = () => store.database.pragma('page_count', { simple: true }) as number
    const rows = () => (store.database.prepare('SELECT (SELECT count(*) FROM x402_entries) + (SELECT count(*) FROM x402_fields) AS n').get() as { n: number }).n
    const day = async (d: number) => {
      // A day of traffic whose keys all expire within the hour: claims, counters, sketches, text.
      for (let i = 0; i < 1_000; i++) {
        await store.set(`settlement:${d}:${i}`, 'x'.repeat(200), { ttlMs: 3_600_000 })
        await store.incrementFields(`stats:${d}:${i % 50}`, { n: 1, v: i }, { ttlMs: 3_600_000 })
        await store.addDistinct(`payers:${d}:${i % 20}`, [`0x${i}`], { ttlMs: 3_600_000 })
        await store.setTextFields(`catalog:${d}:${i % 100}`, { url: `https://x.example/${i}` }, { ttlMs: 3_600_000 })
      }
      now += 86_400_000
    }
    await day(0)
    await day(1)
    const afterTwoDays = pages()
    for (let d = 2; d < 12; d++) await day(d)
    store.sweep()
    // Ten more days of the same traffic: the file has not grown, and only the last day's keys are left before the sweep.
    expect(pages()).toBeLessThanOrEqual(afterTwoDays * 1.2)
    expect(rows()).toBe(0)
    expect(await store.get(`settlement:11:0`)).toBeUndefined()
    console.info(`[sqlite] pages after 2 days ${afterTwoDays}, after 12 days ${pages()} (${store.database.pragma('page_size', { simple: true })} bytes each)`)
    await store.close()
  })

  it('keeps the ledger append-only: the file refuses UPDATE and DELETE of its rows', async () => {
    const store = createSqliteStore({ path: join(dir, 'append-only.sqlite') })
    await store.ledger.append(sampleEntry(0))
    expect(() => store.database.prepare(`UPDATE x402_ledger SET amount = '1'`).run()).toThrow(/append-only/)
    expect(() => store.database.prepare('DELETE FROM x402_ledger').run()).toThrow(/append-only/)
    expect((await store.ledger.read()).entries[0]!.amount).toBe('10000')
    await store.close()
  })

  it('upgrades a file of schema version 1 (no ledger cost): its rows read with cost null, new rows keep theirs, an older writer still appends', async () => {
    const path = join(dir, 'version-1.sqlite')
    // The file as version 1 of the library left it: its schema, and a row appended with its statement.
    const old = new Database(path)
    openSqliteSchema(old, { synchronous: 'NORMAL', busyTimeoutMs: 1_000, toVersion: 1 })
    const columns = (db: Database.Database) => (db.prepare(`SELECT name FROM pragma_table_info('x402_ledger')`).all() as { name: string }[]).map((c) => c.name)
    expect(old.pragma('user_version', { simple: true })).toBe(1)
    expect(columns(old)).not.toContain('cost')
    const versionOneInsert = `INSERT INTO x402_ledger
      (recorded_at, started_at, status, resumed, error_reason, error_message, network, scheme, x402_version, payer, pay_to, asset, amount, transaction_id, resource_url)
      VALUES (@recordedAt, @startedAt, @status, @resumed, @errorReason, @errorMessage, @network, @scheme, @x402Version, @payer, @payTo, @asset, @amount, @transaction, @resourceUrl)`
    const { cost: _none, ...before } = { ...sampleEntry(0), resumed: 0 }
    old.prepare(versionOneInsert).run(before)
    await new Promise((resolve) => setTimeout(resolve, 0))

    // Opened by this version: migrated in place, the old row kept.
    const store = createSqliteStore({ path })
    expect(store.database.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
    expect(columns(store.database)).toContain('cost')
    await store.ledger.append(sampleEntry(1, { cost: '21000000000000' }))
    // A process of the older library on the upgraded file (its statement names no cost) still appends,
    // and its plain INSERT of a transaction's second settled row is skipped, not failed (schema version 3).
    old.prepare(versionOneInsert).run({ ...before, recordedAt: before.recordedAt + 120_000, transaction: `0x${'2'.repeat(64)}` })
    expect(old.prepare(versionOneInsert).run({ ...before, recordedAt: before.recordedAt + 180_000 }).changes).toBe(0)
    const rows = (await store.ledger.read({ order: 'asc' })).entries
    expect(rows.map((row) => [row.recordedAt.slice(11, 16), row.amount, row.cost])).toEqual([
      ['12:00', '10000', null],
      ['12:01', '10000', '21000000000000'],
      ['12:02', '10000', null],
    ])
    // Still append-only after the change of table.
    expect(() => store.database.prepare(`UPDATE x402_ledger SET cost = '1'`).run()).toThrow(/append-only/)
    old.close()
    await store.close()
    // Opening again migrates nothing more.
    const again = createSqliteStore({ path })
    expect((await again.ledger.read()).entries).toHaveLength(3)
    await again.close()
  })

  it('upgrades a file of schema version 2 holding a transaction settled twice: the first row stays, the later moves aside, later appends are unique', async () => {
    const path = join(dir, 'version-2-duplicates.sqlite')
    // The file as version 2 left it after two calls both finished one transaction (and a pending row before them).
    const old = new Database(path)
    openSqliteSchema(old, { synchronous: 'NORMAL', busyTimeoutMs: 1_000, toVersion: 2 })
    const versionTwoInsert = old.prepare(`INSERT INTO x402_ledger
      (recorded_at, started_at, status, resumed, error_reason, error_message, network, scheme, x402_version, payer, pay_to, asset, amount, transaction_id, resource_url, cost)
      VALUES (@recordedAt, @startedAt, @status, @resumed, @errorReason, @errorMessage, @network, @scheme, @x402Version, @payer, @payTo, @asset, @amount, @transaction, @resourceUrl, @cost)`)
    const tx = `0x${'d'.repeat(64)}`
    const row = (i: number, overrides: Partial<ReturnType<typeof sampleEntry>> = {}) => ({ cost: null, ...sampleEntry(i, { transaction: tx, ...overrides }), resumed: 0 })
    versionTwoInsert.run(row(0, { status: 'pending', errorReason: 'settlement_pending' }))
    versionTwoInsert.run(row(1, { cost: '500' }))
    versionTwoInsert.run(row(2, { cost: '700' }))
    versionTwoInsert.run(row(3, { transaction: `0x${'e'.repeat(64)}` }))
    versionTwoInsert.run(row(4))
    old.close()

    const store = createSqliteStore({ path })
    expect(store.database.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
    const summary = (rows: { recordedAt: string; status: string; transaction: string | null; cost: string | null }[]) =>
      rows.map((r) => [r.recordedAt.slice(11, 16), r.status, r.transaction?.slice(0, 4), r.cost])
    expect(summary((await store.ledger.read({ order: 'asc' })).entries)).toEqual([
      ['12:00', 'pending', '0xdd', null],
      ['12:01', 'settled', '0xdd', '500'],
      ['12:03', 'settled', '0xee', null],
    ])
    // The later duplicates are kept whole, aside, with their ids.
    const aside = store.database.prepare('SELECT id, cost FROM x402_ledger_duplicates ORDER BY id').all()
    expect(aside).toEqual([{ id: 3, cost: '700' }, { id: 5, cost: null }])
    // From now on an append of a settled transaction's row again is skipped, whichever writer sends it.
    await store.ledger.append(sampleEntry(5, { transaction: tx }))
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.ledger.append(sampleEntry(6 + i, { transaction: `0x${'f'.repeat(64)}` }))))
    expect(summary((await store.ledger.read({ order: 'asc' })).entries)).toEqual([
      ['12:00', 'pending', '0xdd', null],
      ['12:01', 'settled', '0xdd', '500'],
      ['12:03', 'settled', '0xee', null],
      ['12:06', 'settled', '0xff', null],
    ])
    // Still append-only after the move.
    expect(() => store.database.prepare('DELETE FROM x402_ledger').run()).toThrow(/append-only/)
    expect(() => store.database.prepare(`UPDATE x402_ledger SET cost = '1'`).run()).toThrow(/append-only/)
    await store.close()
  })
})
