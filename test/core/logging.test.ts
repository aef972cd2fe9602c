import { Writable } from 'node:stream'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError } from '../../src/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

/** A real pino logger writing JSON lines into an array. */
function capture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: pino({ level: 'info' }, stream), lines }
}

describe('logger', () => {
  it('logs faults, settlements that did not land and refused payers once each, with structured fields and no secret', async () => {
    const { logger, lines } = capture()
    const adapter = createLedgerAdapter({ revertWhen: (t) => t.value === 7n })
    adapter.balances.set('0xpayer', 1_000n)
    const broken = { ...adapter, verify: async () => Promise.reject(new FacilitatorError('rpc_unavailable', 'the RPC endpoint is unreachable', { cause: new Error('https://rpc.example/KEY-SECRET') })) }
    const facilitator = createFacilitator({ schemes: [adapter], logger, settlement: { payerFailures: { maxFailures: 1 } } })
    const down = createFacilitator({ schemes: [broken], logger })
    const pay = (value: string, nonce: string) => ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value, nonce })

    await facilitator.verify(pay('5', 'ok'))
    const landed = await facilitator.settle(pay('5', 'ok'))
    // A repeat is answered from the record: logged once, when it landed.
    await facilitator.settle(pay('5', 'ok'))
    await facilitator.settle(pay('7', 'reverts'))
    await facilitator.settle(pay('5', 'after'))
    await expect(down.verify(pay('5', 'x'))).rejects.toMatchObject({ code: 'rpc_unavailable' })
    await Promise.all([facilitator.drain(), down.drain()])

    // Nothing for the valid verify; the landed settle at info, once.
    expect(lines.map((l) => [l.level, l.event, l.code])).toEqual([
      [30, 'settled', undefined],
      [40, 'settlement_not_landed', 'transaction_failed'],
      [40, 'settlement_not_landed', 'payer_suspended'],
      [50, 'fault', 'rpc_unavailable'],
    ])
    expect(lines[0]).toMatchObject({ operation: 'settle', network: 'eip155:31337', scheme: 'exact', payer: '0xpayer', amount: '5', transaction: landed.transaction })
    expect(landed.transaction).toMatch(/./)
    expect(lines[1]).toMatchObject({ operation: 'settle', network: 'eip155:31337', scheme: 'exact', payer: '0xpayer' })
    expect(typeof lines[1]!.transaction).toBe('string')
    expect(lines[3]).toMatchObject({ operation: 'verify', status: 503, reason: 'the RPC endpoint is unreachable' })
    expect(JSON.stringify(lines)).not.toMatch(/KEY-SECRET|signature/)
  })
})
