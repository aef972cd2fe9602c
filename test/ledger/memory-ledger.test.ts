import { describe, expect, it } from 'vitest'
import { createMemoryLedger } from '../../src/ledger/memory-ledger.js'
import { ledgerConformance, sampleEntry } from './ledger-conformance.js'

ledgerConformance('memory', { create: async () => ({ ledger: createMemoryLedger() }) })

describe('memory ledger', () => {
  it('keeps at most maxEntries rows, forgetting the oldest', async () => {
    const ledger = createMemoryLedger({ maxEntries: 10 })
    for (let i = 0; i < 3_000; i++) await ledger.append(sampleEntry(i))
    const { entries } = await ledger.read({ limit: 1000, order: 'asc' })
    expect(entries).toHaveLength(10)
    expect(entries[0]!.transaction).toBe(`0x${(2_990).toString(16).padStart(64, '0')}`)
  })
})
