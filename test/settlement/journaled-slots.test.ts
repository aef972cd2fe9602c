import { describe, expect, it } from 'vitest'
import { createFacilitator, createMemoryStore, type AdapterServices } from '../../src/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const payer = '0xpayer'
const shop = '0xshop'
const SENDER = 'ledger:0xsigner'

/**
 * A ledger adapter that numbers its transactions like an EVM signer and can die right after its
 * journal write (the transaction journaled, never sent): what a `kill -9` at that point leaves.
 */
function numbering(dieAfterJournal: () => boolean) {
  const adapter = createLedgerAdapter()
  adapter.balances.set(payer, 1_000n)
  let services: AdapterServices | undefined
  let next = 7
  const numbered: typeof adapter = {
    ...adapter,
    attach: (given) => void (services = given),
    async settle(ctx, payment, journal) {
      const sequence = next++
      await journal.broadcasting({ transaction: `tx-${payment.nonce}`, raw: `raw-${payment.nonce}`, slot: { sender: SENDER, sequence } })
      if (dieAfterJournal()) throw new Error('process died')
      return adapter.settle(ctx, payment, { broadcasting: async () => undefined })
    },
  }
  return { adapter, numbered, services: () => services! }
}

describe('journaled sender slots', () => {
  it('a restarted adapter finds the transactions a dead process journaled, in order, and none once they are settled', async () => {
    const store = createMemoryStore()
    let dying = true
    const first = numbering(() => dying)
    const dead = createFacilitator({ schemes: [first.numbered], store })
    for (const nonce of ['a', 'b']) {
      expect(await dead.settle(ledgerBody(first.adapter, { from: payer, to: shop, value: '100', nonce }))).toMatchObject({ errorReason: 'settlement_pending', transaction: `tx-${nonce}` })
    }

    // The restart: a new facilitator on the same store hands the adapter its services.
    dying = false
    const second = numbering(() => false)
    const restarted = createFacilitator({ schemes: [second.numbered], store, settlement: { leaseMs: 300 } })
    const journaled = await second.services().journaled(SENDER, 7)
    expect(journaled).toEqual([
      { transaction: 'tx-a', raw: 'raw-a', slot: { sender: SENDER, sequence: 7 } },
      { transaction: 'tx-b', raw: 'raw-b', slot: { sender: SENDER, sequence: 8 } },
    ])
    // From a later number, or for another sender: only what follows, nothing of others.
    expect((await second.services().journaled(SENDER, 8)).map((record) => record.transaction)).toEqual(['tx-b'])
    expect(await second.services().journaled('ledger:0xother', 7)).toEqual([])
    expect(await second.services().journaled(SENDER, 6)).toEqual([])

    // Once a retry finishes the first one, the run starts at the second.
    expect(await restarted.settle(ledgerBody(first.adapter, { from: payer, to: shop, value: '100', nonce: 'a' }))).toMatchObject({ success: true })
    expect(await second.services().journaled(SENDER, 7)).toEqual([])
    expect((await second.services().journaled(SENDER, 8)).map((record) => record.transaction)).toEqual(['tx-b'])
  })
})
