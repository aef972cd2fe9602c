/**
 * What the ledger recorder writes for each kind of settle outcome, through a real
 * facilitator and the test ledger adapter (an in-memory "chain" with HMAC signatures).
 */
import { describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createLedgerRecorder } from '../../src/ledger/ledger-recorder.js'
import { createMemoryLedger } from '../../src/ledger/memory-ledger.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import type { Store } from '../../src/stores/store.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const PAYER = '0xAbCdEf0000000000000000000000000000000001'
const SHOP = '0x5000000000000000000000000000000000000005'

function setup(options: { confirmDelayMs?: number; settleMs?: number; store?: Store; revert?: boolean } = {}) {
  const adapter = createLedgerAdapter({ confirmDelayMs: options.confirmDelayMs, revertWhen: () => options.revert === true })
  adapter.balances.set(PAYER, 1_000_000n)
  const ledger = createMemoryLedger()
  const facilitator = createFacilitator({
    schemes: [adapter],
    store: options.store ?? createMemoryStore(),
    hooks: [createLedgerRecorder({ ledger, recordedDelayMs: 0 })],
    timeouts: { settleMs: options.settleMs ?? 10_000 },
  })
  const rows = async () => {
    await facilitator.drain()
    return (await ledger.read({ order: 'asc' })).entries
  }
  return { adapter, ledger, facilitator, rows }
}

describe('ledger recorder', () => {
  it('writes one settled row with the payment: the replays answered from its record append it again, and are skipped', async () => {
    const { adapter, facilitator, rows } = setup()
    const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '2500', nonce: 'n1' })
    body.paymentPayload.resource.url = 'https://user:pw@api.example.com/weather?token=secret#frag'
    const answers = await Promise.all([facilitator.settle(body), facilitator.settle(body), facilitator.settle(body)])
    // Every caller learns the one settlement; the ledger keeps one settled row of its transaction.
    expect(answers.every((a) => a.success)).toBe(true)
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(1)
    const [row, ...more] = await rows()
    expect(more).toEqual([])
    expect(row).toMatchObject({
      status: 'settled',
      resumed: false,
      errorReason: null,
      network: 'eip155:31337',
      scheme: 'exact',
      x402Version: 2,
      payer: PAYER.toLowerCase(),
      payTo: SHOP,
      asset: 'LEDGER',
      amount: '2500',
      transaction: answers.find((a) => a.success)!.transaction,
      // A URL with credentials is no resource identity: nothing of it is kept.
      resourceUrl: null,
    })
    expect(Date.parse(row!.recordedAt)).toBeGreaterThanOrEqual(Date.parse(row!.startedAt))
    // No signature, payload or credential reaches the ledger.
    const text = JSON.stringify(row)
    expect(text).not.toContain(adapter.sign({ from: PAYER, to: SHOP, value: '2500', nonce: 'n1' }))
    expect(text).not.toContain('secret')
    expect(text).not.toContain('pw')
  })

  it('writes no row for a failure answered from a record: another payment of the same authorization, a failed payment asked again', async () => {
    const { adapter, facilitator, rows } = setup({ revert: true })
    const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'once' })
    const reverted = await facilitator.settle(body)
    expect(reverted).toMatchObject({ success: false, errorReason: 'transaction_failed' })
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'transaction_failed', transaction: reverted.transaction })
    const other = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '99', nonce: 'once' })
    expect(await facilitator.settle(other)).toMatchObject({ success: false, errorReason: 'duplicate_settlement' })
    expect((await rows()).map((r) => [r.status, r.errorReason])).toEqual([['failed', 'transaction_failed']])
  })

  it('lets a live settling call write the row: a row from the record waits recordedDelayMs, and the settling call\'s, with its cost, is kept', async () => {
    // Two instances on one store and one ledger; the settling instance's append is slow (a busy database).
    const run = async (recordedDelayMs: number | undefined) => {
      const adapter = createLedgerAdapter({ confirmDelayMs: 50 })
      adapter.balances.set(PAYER, 1_000_000n)
      const costed: typeof adapter = { ...adapter, settle: async (ctx, payment, journal, reservation) => ((ctx.cost = 4242n), adapter.settle(ctx, payment, journal, reservation)) }
      const store = createMemoryStore()
      const ledger = createMemoryLedger()
      const slow: typeof ledger = { read: (q) => ledger.read(q), append: async (entry) => (await new Promise((r) => setTimeout(r, 200)), ledger.append(entry)) }
      const settling = createFacilitator({ schemes: [costed], store, hooks: [createLedgerRecorder({ ledger: slow })] })
      const waiting = createFacilitator({ schemes: [costed], store, hooks: [createLedgerRecorder({ ledger, recordedDelayMs })] })
      const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'race' })
      const first = settling.settle(body)
      await new Promise((r) => setTimeout(r, 10))
      const answers = await Promise.all([first, waiting.settle(body)])
      expect(answers.map((a) => a.success)).toEqual([true, true])
      await Promise.all([settling.drain(), waiting.drain()])
      return (await ledger.read()).entries.map((r) => [r.status, r.cost])
    }
    expect(await run(undefined)).toEqual([['settled', '4242']])
    // Without the wait, the retry's row (no cost) lands first and the settling call's is the one skipped.
    expect(await run(0)).toEqual([['settled', null]])
  })

  it('keeps the origin and path of a resource URL, never its query', async () => {
    const { adapter, facilitator, rows } = setup()
    const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '1', nonce: 'q' })
    body.paymentPayload.resource.url = 'https://api.example.com/weather/oslo?apiKey=k-123'
    await facilitator.settle(body)
    expect((await rows())[0]!.resourceUrl).toBe('https://api.example.com/weather/oslo')
  })

  it('writes a failed row with its code for a refusal, with nothing sent', async () => {
    const { adapter, facilitator, rows } = setup()
    const bad = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'bad' })
    bad.paymentPayload.payload.signature = '0'.repeat(64)
    expect(await facilitator.settle(bad)).toMatchObject({ success: false, errorReason: 'invalid_signature' })
    const poor = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '5000000', nonce: 'poor' })
    expect(await facilitator.settle(poor)).toMatchObject({ success: false, errorReason: 'insufficient_funds' })
    expect((await rows()).map((r) => [r.status, r.errorReason, r.transaction, r.payer])).toEqual([
      ['failed', 'invalid_signature', null, PAYER.toLowerCase()],
      ['failed', 'insufficient_funds', null, PAYER.toLowerCase()],
    ])
  })

  it('writes a failed row for a settlement the chain reverted, with its transaction', async () => {
    // A hostile payer's trick: the transfer passes verify and reverts on "chain".
    const { adapter, facilitator, rows } = setup({ revert: true })
    const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'rev' })
    const answer = await facilitator.settle(body)
    expect(answer).toMatchObject({ success: false, errorReason: 'transaction_failed' })
    expect(await rows()).toMatchObject([{ status: 'failed', errorReason: 'transaction_failed', transaction: answer.transaction }])
  })

  it('writes a pending row, then a resumed settled row when a later settle finishes it', async () => {
    const { adapter, facilitator, rows } = setup({ confirmDelayMs: 400, settleMs: 150 })
    const body = ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'slow' })
    const first = await facilitator.settle(body)
    expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    await new Promise((resolve) => setTimeout(resolve, 500))
    const second = await facilitator.settle(body)
    expect(second).toMatchObject({ success: true, transaction: first.transaction })
    expect((await rows()).map((r) => [r.status, r.resumed, r.errorReason, r.transaction])).toEqual([
      ['pending', false, 'settlement_pending', first.transaction],
      ['settled', true, null, first.transaction],
    ])
  })

  it('writes a failed row with the fault code when the store fails, and none for a request no adapter serves', async () => {
    const broken: Store = { ...createMemoryStore(), set: () => Promise.reject(new Error('disk full')) }
    const { adapter, facilitator, rows } = setup({ store: broken })
    await expect(facilitator.settle(ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'f' }))).rejects.toMatchObject({ code: 'store_unavailable' })
    await facilitator.settle(ledgerBody(adapter, { from: PAYER, to: SHOP, value: '100', nonce: 'x' }, 'eip155:1'))
    expect((await rows()).map((r) => [r.status, r.errorReason, r.transaction])).toEqual([['failed', 'store_unavailable', null]])
  })
})
