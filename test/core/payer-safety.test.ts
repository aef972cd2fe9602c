/**
 * What the core does so that hostile or over-eager payers cost the facilitator
 * nothing: holds on the payer's balance against racing overspends, and a budget
 * of settlements the chain refused after verify passed. Run on the ledger
 * adapter, whose "chain" reverts a transfer its balance no longer covers; the
 * same rules on anvil and LiteSVM are in test/reliability/overspend.test.ts.
 */
import { describe, expect, it } from 'vitest'
import { createFacilitator, createMemoryStore } from '../../src/index.js'
import { createLedgerAdapter, ledgerBody, type LedgerAdapterOptions } from '../support/ledger-adapter.js'

const payer = '0xpayer'
const shop = '0xshop'

function ledger(balance: bigint, options: LedgerAdapterOptions = {}) {
  const adapter = createLedgerAdapter({ confirmDelayMs: 5, ...options })
  adapter.balances.set(payer, balance)
  return adapter
}

const transfer = (value: bigint, nonce: string, from = payer) => ({ from, to: shop, value: value.toString(), nonce })

describe('holds on the payer balance', () => {
  it('eight racing payments each for the whole balance: one lands, seven answer insufficient_funds and nothing reverts', async () => {
    const adapter = ledger(660_000n)
    const facilitator = createFacilitator({ schemes: [adapter] })
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => facilitator.settle(ledgerBody(adapter, transfer(660_000n, `n${i}`)))))
    expect(answers.filter((a) => a.success)).toHaveLength(1)
    const refused = answers.filter((a) => !a.success)
    expect(refused.map((a) => a.errorReason)).toEqual(Array(7).fill('insufficient_funds'))
    // Refused before anything was sent: no transaction id, and the ledger saw none of them.
    expect(refused.every((a) => a.transaction === '')).toBe(true)
    expect(adapter.reverted).toEqual([])
    expect(adapter.balances.get(payer)).toBe(0n)
  })

  it('without holds the same race reverts on chain (what the holds prevent)', async () => {
    const adapter = ledger(660_000n, { reportSpend: false })
    const facilitator = createFacilitator({ schemes: [adapter] })
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => facilitator.settle(ledgerBody(adapter, transfer(660_000n, `n${i}`)))))
    expect(answers.filter((a) => a.success)).toHaveLength(1)
    expect(adapter.reverted).toHaveLength(7)
  })

  it('a hundred payments the balance covers still settle in parallel', async () => {
    const adapter = ledger(100_000n, { confirmDelayMs: 50 })
    const facilitator = createFacilitator({ schemes: [adapter] })
    const started = performance.now()
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => facilitator.settle(ledgerBody(adapter, transfer(1_000n, `n${i}`)))))
    const elapsed = performance.now() - started
    expect(answers.every((a) => a.success)).toBe(true)
    expect(adapter.balances.get(payer)).toBe(0n)
    // One after the other would take 100 × 50 ms.
    expect(elapsed).toBeLessThan(2_500)
  })

  it('holds only what fits: of ten racing payments of 300 against 1,000, three settle', async () => {
    const adapter = ledger(1_000n)
    const facilitator = createFacilitator({ schemes: [adapter] })
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => facilitator.settle(ledgerBody(adapter, transfer(300n, `n${i}`)))))
    expect(answers.filter((a) => a.success)).toHaveLength(3)
    expect(answers.filter((a) => a.errorReason === 'insufficient_funds')).toHaveLength(7)
    expect(adapter.reverted).toEqual([])
    expect(adapter.balances.get(payer)).toBe(100n)
  })

  it('frees the hold of a payment that did not go through, so the next one settles', async () => {
    const adapter = ledger(1_000n, { revertWhen: (t) => t.value === 999n })
    const facilitator = createFacilitator({ schemes: [adapter] })
    const failed = await facilitator.settle(ledgerBody(adapter, transfer(999n, 'a')))
    expect(failed).toMatchObject({ success: false, errorReason: 'transaction_failed' })
    const next = await facilitator.settle(ledgerBody(adapter, transfer(1_000n, 'b')))
    expect(next.success).toBe(true)
  })

  it('two instances sharing a store share the holds', async () => {
    const store = createMemoryStore()
    const adapterA = ledger(500n)
    // One chain seen by two processes.
    const adapterB = createLedgerAdapter({ confirmDelayMs: 5, balances: adapterA.balances })
    const a = createFacilitator({ schemes: [adapterA], store })
    const b = createFacilitator({ schemes: [adapterB], store })
    const answers = await Promise.all([
      a.settle(ledgerBody(adapterA, transfer(500n, 'x'))),
      b.settle(ledgerBody(adapterB, transfer(500n, 'y'))),
    ])
    expect(answers.filter((x) => x.success)).toHaveLength(1)
    expect(answers.find((x) => !x.success)?.errorReason).toBe('insufficient_funds')
  })
})

describe('failure budget per payer', () => {
  it('after three settlements reverted on chain, the payer is refused before anything is sent; others are not', async () => {
    const adapter = ledger(1_000_000n, { revertWhen: (t) => t.from === payer })
    adapter.balances.set('0xhonest', 1_000n)
    const facilitator = createFacilitator({ schemes: [adapter] })
    for (let i = 0; i < 3; i++) {
      const answer = await facilitator.settle(ledgerBody(adapter, transfer(10n, `r${i}`)))
      expect(answer).toMatchObject({ success: false, errorReason: 'transaction_failed' })
    }
    await facilitator.drain()
    const refused = await facilitator.settle(ledgerBody(adapter, transfer(10n, 'r3')))
    expect(refused).toMatchObject({ success: false, errorReason: 'payer_suspended', transaction: '', payer })
    expect(refused.errorMessage).toMatch(/refused or reverted by the chain/)
    expect(adapter.reverted).toHaveLength(3)
    // Verify is not refused (it costs the facilitator no gas), and other payers settle.
    expect((await facilitator.verify(ledgerBody(adapter, transfer(10n, 'r4')))).isValid).toBe(true)
    expect((await facilitator.settle(ledgerBody(adapter, transfer(10n, 'h1', '0xhonest')))).success).toBe(true)
  })

  it('forgets the failures after the window, and can be turned off', async () => {
    const adapter = ledger(1_000_000n, { revertWhen: (t) => t.value === 1n })
    const facilitator = createFacilitator({ schemes: [adapter], settlement: { payerFailures: { maxFailures: 1, windowMs: 150 } } })
    expect((await facilitator.settle(ledgerBody(adapter, transfer(1n, 'a')))).errorReason).toBe('transaction_failed')
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect((await facilitator.settle(ledgerBody(adapter, transfer(2n, 'b')))).errorReason).toBe('payer_suspended')
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await facilitator.settle(ledgerBody(adapter, transfer(2n, 'c')))).success).toBe(true)

    const unbounded = ledger(1_000_000n, { revertWhen: (t) => t.value === 1n })
    const off = createFacilitator({ schemes: [unbounded], settlement: { payerFailures: false } })
    for (let i = 0; i < 5; i++) expect((await off.settle(ledgerBody(unbounded, transfer(1n, `x${i}`)))).errorReason).toBe('transaction_failed')
  })

  it('keeps payers apart whose addresses differ only in case (base58 is case-sensitive), and folds EVM hex', async () => {
    const adapter = ledger(0n, { revertWhen: (t) => t.from === 'FeeDfaceGrind' })
    for (const who of ['FeeDfaceGrind', 'feedfacegrind']) adapter.balances.set(who, 1_000n)
    const facilitator = createFacilitator({ schemes: [adapter], settlement: { payerFailures: { maxFailures: 1 } } })
    expect((await facilitator.settle(ledgerBody(adapter, transfer(1n, 'a', 'FeeDfaceGrind')))).errorReason).toBe('transaction_failed')
    expect((await facilitator.settle(ledgerBody(adapter, transfer(1n, 'b', 'FeeDfaceGrind')))).errorReason).toBe('payer_suspended')
    // Another account, not a spelling of the same one.
    expect((await facilitator.settle(ledgerBody(adapter, transfer(1n, 'c', 'feedfacegrind')))).success).toBe(true)

    const evm = '0xAbCdEf0000000000000000000000000000000001'
    const hex = ledger(0n, { revertWhen: (t) => t.from === evm })
    hex.balances.set(evm, 1_000n)
    hex.balances.set(evm.toLowerCase(), 1_000n)
    const strict = createFacilitator({ schemes: [hex], settlement: { payerFailures: { maxFailures: 1 } } })
    await strict.settle(ledgerBody(hex, transfer(1n, 'd', evm)))
    // The same EVM address in another case is the same payer.
    expect((await strict.settle(ledgerBody(hex, transfer(1n, 'e', evm.toLowerCase())))).errorReason).toBe('payer_suspended')
  })

  it('also refuses by the balance paid from (a Solana source account), not only by the payer address', async () => {
    const adapter = ledger(1_000n, { revertWhen: (t) => t.value === 1n })
    const facilitator = createFacilitator({ schemes: [adapter], settlement: { payerFailures: { maxFailures: 1 } } })
    expect((await facilitator.settle(ledgerBody(adapter, transfer(1n, 'a')))).errorReason).toBe('transaction_failed')
    await new Promise((resolve) => setTimeout(resolve, 10))
    // Forget the address's count: the account's count alone still refuses.
    await facilitator.store.delete(`payer-failures:eip155:31337:${payer}`)
    expect(await facilitator.store.readFields(`payer-failures:ledger:${payer}`)).toEqual({ failures: 1 })
    expect((await facilitator.settle(ledgerBody(adapter, transfer(2n, 'b')))).errorReason).toBe('payer_suspended')
  })

  it('a settlement that only stays pending is not counted', async () => {
    const adapter = ledger(1_000n, { confirmDelayMs: 400 })
    const facilitator = createFacilitator({ schemes: [adapter], timeouts: { settleMs: 100 }, settlement: { payerFailures: { maxFailures: 1 } } })
    const pending = await facilitator.settle(ledgerBody(adapter, transfer(10n, 'p')))
    expect(pending.errorReason).toBe('settlement_pending')
    await new Promise((resolve) => setTimeout(resolve, 450))
    const relaxed = createFacilitator({ schemes: [adapter], store: facilitator.store, settlement: { payerFailures: { maxFailures: 1 } } })
    expect((await relaxed.settle(ledgerBody(adapter, transfer(10n, 'q')))).success).toBe(true)
  })
})
