import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ledgerEntrySchema, type NewLedgerEntry, type SettlementLedger } from '../../src/ledger/settlement-ledger.js'

/** Builds a fresh, empty ledger for one test. */
export interface LedgerFactory {
  create(): Promise<{ ledger: SettlementLedger; close?(): Promise<void> }>
}

const T0 = Date.parse('2026-11-20T12:00:00.000Z')
const PAYER = '0x1111111111111111111111111111111111111111'
const OTHER_PAYER = '0x2222222222222222222222222222222222222222'
const SHOP = '0x3333333333333333333333333333333333333333'

/** A ledger row; `i` spreads them a minute apart. */
export function sampleEntry(i: number, overrides: Partial<NewLedgerEntry> = {}): NewLedgerEntry {
  return {
    recordedAt: T0 + i * 60_000,
    startedAt: T0 + i * 60_000 - 40,
    status: 'settled',
    resumed: false,
    errorReason: null,
    errorMessage: null,
    network: 'eip155:8453',
    scheme: 'exact',
    x402Version: 2,
    payer: PAYER,
    payTo: SHOP,
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    amount: '10000',
    transaction: `0x${i.toString(16).padStart(64, '0')}`,
    resourceUrl: 'https://api.example.com/weather',
    ...overrides,
  }
}

/** The behaviour every SettlementLedger must have. */
export function ledgerConformance(name: string, factory: LedgerFactory): void {
  describe(`${name} ledger conformance`, () => {
    let ledger: SettlementLedger
    let close: (() => Promise<void>) | undefined
    beforeEach(async () => {
      const made = await factory.create()
      ledger = made.ledger
      close = made.close
    })
    afterEach(async () => {
      await close?.()
    })

    it('keeps every field of a row, newest first by default', async () => {
      // A cost above 2^64 wei: kept exactly, as a decimal string.
      await ledger.append(sampleEntry(0, { cost: '123456789012345678901234567890' }))
      await ledger.append(
        sampleEntry(1, {
          status: 'failed',
          errorReason: 'transaction_failed',
          errorMessage: 'reverted: "FiatTokenV2: invalid signature", with, commas',
          payer: null,
          transaction: null,
          resourceUrl: null,
          x402Version: 1,
          amount: (2n ** 200n).toString(),
          network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
          asset: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
          payTo: 'SoLShop1111111111111111111111111111111111111',
        }),
      )
      const { entries, nextCursor } = await ledger.read()
      expect(nextCursor).toBeUndefined()
      expect(entries).toHaveLength(2)
      for (const entry of entries) ledgerEntrySchema.parse(entry)
      const [failed, settled] = entries
      expect(settled).toMatchObject({
        recordedAt: '2026-11-20T12:00:00.000Z',
        startedAt: '2026-11-20T11:59:59.960Z',
        status: 'settled',
        resumed: false,
        errorReason: null,
        network: 'eip155:8453',
        scheme: 'exact',
        x402Version: 2,
        payer: PAYER,
        payTo: SHOP,
        // EVM addresses are kept in lower case, so that filters match however a client wrote them.
        asset: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
        amount: '10000',
        transaction: `0x${'0'.repeat(64)}`,
        resourceUrl: 'https://api.example.com/weather',
        cost: '123456789012345678901234567890',
      })
      expect(failed).toMatchObject({
        status: 'failed',
        errorReason: 'transaction_failed',
        errorMessage: 'reverted: "FiatTokenV2: invalid signature", with, commas',
        payer: null,
        transaction: null,
        resourceUrl: null,
        x402Version: 1,
        amount: (2n ** 200n).toString(),
        // Solana addresses are case-sensitive: kept as written.
        payTo: 'SoLShop1111111111111111111111111111111111111',
        // No cost given (nothing sent, or an appender that predates the field): null.
        cost: null,
      })
      expect(failed!.id).toBeGreaterThan(settled!.id)
    })

    it('filters by payer and payTo (EVM case-insensitively), network (CAIP-2 or v1 name), status and time', async () => {
      await ledger.append(sampleEntry(0))
      await ledger.append(sampleEntry(1, { payer: OTHER_PAYER, status: 'pending', errorReason: 'settlement_pending' }))
      await ledger.append(sampleEntry(2, { network: 'eip155:84532', resumed: true }))
      await ledger.append(sampleEntry(3, { payTo: OTHER_PAYER, status: 'failed', errorReason: 'insufficient_funds', transaction: null }))
      const ids = async (query: Parameters<SettlementLedger['read']>[0]) => (await ledger.read(query)).entries.map((e) => e.recordedAt.slice(11, 16))
      expect(await ids({ payer: OTHER_PAYER.toUpperCase().replace('0X', '0x') })).toEqual(['12:01'])
      expect(await ids({ payer: PAYER, order: 'asc' })).toEqual(['12:00', '12:02', '12:03'])
      expect(await ids({ payTo: OTHER_PAYER })).toEqual(['12:03'])
      expect(await ids({ network: 'base-sepolia' })).toEqual(['12:02'])
      expect(await ids({ network: 'eip155:8453', status: 'settled' })).toEqual(['12:00'])
      expect(await ids({ status: 'pending' })).toEqual(['12:01'])
      // `from` is inclusive, `to` exclusive; dates as ISO strings, Date objects or epoch ms.
      expect(await ids({ from: '2026-11-20T12:01:00Z', to: new Date(T0 + 3 * 60_000) })).toEqual(['12:02', '12:01'])
      expect(await ids({ from: T0 + 60_000 + 1 })).toEqual(['12:03', '12:02'])
      expect((await ledger.read({ status: 'settled', network: 'eip155:84532' })).entries[0]).toMatchObject({ resumed: true })
    })

    it('pages through every row exactly once with the cursor, in both orders', async () => {
      for (let i = 0; i < 23; i++) await ledger.append(sampleEntry(i, { payer: i % 3 === 0 ? OTHER_PAYER : PAYER }))
      for (const order of ['desc', 'asc'] as const) {
        const seen: number[] = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = await ledger.read({ payer: PAYER, limit: 5, order, cursor })
          seen.push(...page.entries.map((e) => e.id))
          cursor = page.nextCursor
          pages++
        } while (cursor)
        // 15 rows of PAYER: three full pages and no empty fourth one.
        expect(pages).toBe(3)
        expect(seen).toHaveLength(15)
        expect(new Set(seen).size).toBe(15)
        const sorted = [...seen].sort((a, b) => a - b)
        expect(seen).toEqual(order === 'asc' ? sorted : sorted.reverse())
      }
    })

    it('keeps a zero cost apart from no cost, and refuses a cost that is not a decimal integer', async () => {
      await ledger.append(sampleEntry(0, { cost: '0' }))
      await ledger.append(sampleEntry(1, { cost: null }))
      expect((await ledger.read({ order: 'asc' })).entries.map((e) => e.cost)).toEqual(['0', null])
      await expect(ledger.append(sampleEntry(2, { cost: '1.5' }))).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'cost' } })
      await expect(ledger.append(sampleEntry(3, { cost: '-1' }))).rejects.toMatchObject({ code: 'invalid_request' })
      const { entries } = await ledger.read()
      expect(entries).toHaveLength(2)
      // A row from an older server (no cost field) still reads, as no cost.
      const { cost: _gone, ...older } = entries[0]!
      expect(ledgerEntrySchema.parse(older).cost).toBeNull()
    })

    it('refuses malformed queries with invalid_request naming the field', async () => {
      await ledger.append(sampleEntry(0))
      await expect(ledger.read({ limit: 0 })).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'limit' } })
      await expect(ledger.read({ limit: 1001 })).rejects.toMatchObject({ code: 'invalid_request' })
      await expect(ledger.read({ from: 'yesterday-ish' })).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'from' } })
      await expect(ledger.read({ cursor: 'not a cursor' })).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'cursor' } })
      // A cursor of the other order would skip rows: refused.
      for (let i = 1; i < 4; i++) await ledger.append(sampleEntry(i))
      const { nextCursor } = await ledger.read({ limit: 2 })
      await expect(ledger.read({ order: 'asc', cursor: nextCursor })).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'cursor' } })
    })

    it('keeps one settled row per transaction: the first stands, later ones are skipped, racing ones too', async () => {
      const tx = `0x${'a'.repeat(64)}`
      await ledger.append(sampleEntry(0, { transaction: tx, status: 'pending', errorReason: 'settlement_pending' }))
      await ledger.append(sampleEntry(1, { transaction: tx, resumed: true, cost: '21000' }))
      // A retry answered from the record appends it again, with what it knows: skipped, not an error.
      await ledger.append(sampleEntry(2, { transaction: tx, cost: null }))
      // Not settled rows, another network's transaction and rows without a transaction are not covered.
      await ledger.append(sampleEntry(3, { transaction: tx, status: 'failed', errorReason: 'transaction_failed' }))
      await ledger.append(sampleEntry(4, { transaction: tx, network: 'eip155:84532' }))
      await ledger.append(sampleEntry(5, { transaction: null }))
      await ledger.append(sampleEntry(6, { transaction: null }))
      // Many appends of one settled transaction at the same moment (retries on several instances): one row.
      const raced = `0x${'b'.repeat(64)}`
      await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.append(sampleEntry(7 + i, { transaction: raced }))))
      const { entries } = await ledger.read({ order: 'asc' })
      expect(entries.map((e) => [e.recordedAt.slice(11, 16), e.status, e.network, e.transaction, e.cost])).toEqual([
        ['12:00', 'pending', 'eip155:8453', tx, null],
        ['12:01', 'settled', 'eip155:8453', tx, '21000'],
        ['12:03', 'failed', 'eip155:8453', tx, null],
        ['12:04', 'settled', 'eip155:84532', tx, null],
        ['12:05', 'settled', 'eip155:8453', null, null],
        ['12:06', 'settled', 'eip155:8453', null, null],
        [expect.any(String), 'settled', 'eip155:8453', raced, null],
      ])
      expect(entries.filter((e) => e.status === 'settled' && e.transaction === raced)).toHaveLength(1)
    })

    it('loses no row when many are appended at once', async () => {
      await Promise.all(Array.from({ length: 200 }, (_, i) => ledger.append(sampleEntry(i))))
      const seen = new Set<string>()
      let cursor: string | undefined
      do {
        const page = await ledger.read({ limit: 1000, cursor })
        for (const entry of page.entries) seen.add(entry.transaction!)
        cursor = page.nextCursor
      } while (cursor)
      expect(seen.size).toBe(200)
    })
  })
}
