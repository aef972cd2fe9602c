import { describe, expect, it } from 'vitest'
import { adapterConformance } from '../../src/testing/index.js'
import type { SchemeAdapter } from '../../src/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const payer = 'alice'
const shop = 'shop'

function ledgerSetup() {
  const adapter = createLedgerAdapter()
  adapter.balances.set(payer, 1_000_000n)
  let nonce = 0
  return {
    adapter,
    payment: () => ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: `n${(nonce += 1)}` }),
    invalidPayment: () => {
      const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: `bad${(nonce += 1)}` })
      return { body: { ...body, paymentPayload: { ...body.paymentPayload, payload: { ...body.paymentPayload.payload, signature: '0'.repeat(64) } } }, reason: 'invalid_signature' }
    },
  }
}

describe('the adapter conformance kit, on the test ledger', () => {
  for (const check of adapterConformance(ledgerSetup())) it(check.name, () => check.run())
})

describe('the kit fails adapters that break the contract', () => {
  const failing = async (broken: (adapter: SchemeAdapter<any, any>) => SchemeAdapter<any, any>, name: RegExp) => {
    const setup = ledgerSetup()
    const check = adapterConformance({ ...setup, adapter: broken(setup.adapter) }).find((c) => name.test(c.name))!
    await expect(check.run()).rejects.toThrow()
  }

  it('one that sends without journaling first', () =>
    failing((adapter) => ({ ...adapter, settle: (ctx, payment) => adapter.settle(ctx, payment, { broadcasting: async () => undefined }) }), /journals/))

  it('one whose spent payments keep verifying valid', () =>
    failing((adapter) => ({ ...adapter, verify: async (ctx, payload) => ({ response: { isValid: true, payer }, payment: payload }) }), /once under a race/))

  it('one that names every payment by one key', () =>
    failing((adapter) => ({ ...adapter, parse: (ctx) => { const parsed = adapter.parse(ctx); return 'key' in parsed ? { ...parsed, key: 'same' } : parsed } }), /parse is offline/))
})
