import { describe, expect, it, vi } from 'vitest'
import {
  createFacilitator,
  createMemoryStore,
  createRegistry,
  FacilitatorError,
  type SchemeAdapter,
  type SettleEvent,
  type VerifyEvent,
} from '../../src/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const payer = '0xpayer'
const shop = '0xshop'

function setup(options: Parameters<typeof createLedgerAdapter>[0] = {}) {
  const adapter = createLedgerAdapter(options)
  adapter.balances.set(payer, 10_000n)
  return adapter
}

describe('registry', () => {
  it('dispatches on exact (version, scheme, network)', () => {
    const registry = createRegistry([setup({ network: 'eip155:8453', v1Name: 'base' })])
    expect(registry.find(2, 'exact', 'eip155:8453')).toBeDefined()
    expect(registry.find(1, 'exact', 'base')).toBeDefined()
    expect(registry.find(2, 'exact', 'eip155:1')).toBeUndefined()
    expect(registry.find(2, 'exact', 'base')).toBeUndefined()
    expect(registry.find(1, 'exact', 'eip155:8453')).toBeUndefined()
    expect(registry.find(2, 'upto', 'eip155:8453')).toBeUndefined()
  })

  it('lists each kind once per version and signers by family', () => {
    const registry = createRegistry([setup({ network: 'eip155:8453', v1Name: 'base' })])
    expect(registry.supported()).toEqual({
      kinds: [
        { x402Version: 1, scheme: 'exact', network: 'base' },
        { x402Version: 2, scheme: 'exact', network: 'eip155:8453' },
      ],
      extensions: [],
      signers: { 'eip155:*': ['0x000000000000000000000000000000000000fa11'] },
    })
  })

  it('lists the extensions adapters honour, those hooks serve and configured ones, each once; none when nothing serves one', async () => {
    const plain = setup({ network: 'eip155:8453' })
    expect((await createFacilitator({ schemes: [plain] }).supported()).extensions).toEqual([])
    const honouring: SchemeAdapter = { ...setup({ network: 'eip155:1' }), extensions: ['eip2612GasSponsoring'] }
    const upto: SchemeAdapter = { ...setup({ network: 'eip155:1' }), scheme: 'upto', extensions: ['eip2612GasSponsoring'] }
    expect(createRegistry([honouring, upto]).supported().extensions).toEqual(['eip2612GasSponsoring'])
    const catalogLike = { extensions: ['bazaar'], afterSettle: () => undefined }
    const facilitator = createFacilitator({ schemes: [honouring, upto], hooks: [catalogLike], extensions: ['bazaar', 'custom'] })
    expect((await facilitator.supported()).extensions).toEqual(['eip2612GasSponsoring', 'bazaar', 'custom'])
  })

  it('refuses two adapters for the same kind at configuration time', () => {
    expect(() => createRegistry([setup(), setup()])).toThrow(FacilitatorError)
  })
})

describe('verify', () => {
  it('accepts a valid payment and names the payer', async () => {
    const adapter = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'n1' })
    expect(await facilitator.verify(body)).toEqual({ isValid: true, payer })
  })

  it('answers unsupported kinds as rejections, not throws', async () => {
    const adapter = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'n1' }, 'eip155:1')
    expect(await facilitator.verify(body)).toMatchObject({ isValid: false, invalidReason: 'invalid_network' })
    const upto = structuredClone(body)
    upto.paymentRequirements.scheme = 'upto'
    upto.paymentPayload.accepted.scheme = 'upto'
    expect(await facilitator.verify(upto)).toMatchObject({ isValid: false, invalidReason: 'unsupported_scheme' })
    const v3 = structuredClone(body) as { paymentPayload: { x402Version: number } }
    v3.paymentPayload.x402Version = 3
    expect(await facilitator.verify(v3)).toMatchObject({ isValid: false, invalidReason: 'invalid_x402_version' })
  })

  it('rejects a v2 payload whose accepted requirements differ', async () => {
    const adapter = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    for (const [field, value] of [['payTo', '0xelse'], ['amount', '1'], ['asset', 'OTHER'], ['network', 'eip155:1']] as const) {
      const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'n1' })
      ;(body.paymentPayload.accepted as Record<string, unknown>)[field] = value
      const answer = await facilitator.verify(body)
      expect(answer, field).toMatchObject({ isValid: false, invalidReason: 'accepted_requirements_mismatch' })
      expect(answer.invalidMessage).toContain(field)
    }
  })

  it('rejects a v1 payload naming another network than its requirements', async () => {
    const adapter = setup({ network: 'eip155:8453', v1Name: 'base' })
    const facilitator = createFacilitator({ schemes: [adapter] })
    const t = { from: payer, to: shop, value: '100', nonce: 'n1' }
    const body = {
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: 'exact', network: 'base-sepolia', payload: { ...t, signature: adapter.sign(t) } },
      paymentRequirements: { scheme: 'exact', network: 'base', maxAmountRequired: '100', asset: 'LEDGER', payTo: shop, resource: 'https://r', description: '', mimeType: '', maxTimeoutSeconds: 60 },
    }
    expect(await facilitator.verify(body)).toMatchObject({ isValid: false, invalidReason: 'network_mismatch' })
    body.paymentPayload.network = 'base'
    expect(await facilitator.verify(body)).toEqual({ isValid: true, payer })
  })

  it('throws invalid_request naming the field for a malformed body', async () => {
    const facilitator = createFacilitator({ schemes: [setup()] })
    const error = await facilitator.verify({ paymentPayload: { x402Version: 2 } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorError)
    expect(error).toMatchObject({ code: 'invalid_request', status: 400 })
    expect((error as Error).message).toMatch(/^paymentPayload\.accepted/)
  })

  it('lets a before-hook reject and after-hooks observe with a duration', async () => {
    const adapter = setup()
    const events: VerifyEvent[] = []
    const facilitator = createFacilitator({
      schemes: [adapter],
      hooks: [
        { beforeVerify: (ctx) => (ctx.amount > 1000n ? { reason: 'amount_too_high', message: 'over the limit' } : undefined) },
        { afterVerify: (event) => void events.push(event) },
      ],
    })
    expect(await facilitator.verify(ledgerBody(adapter, { from: payer, to: shop, value: '5000', nonce: 'a' }))).toEqual({
      isValid: false,
      invalidReason: 'amount_too_high',
      invalidMessage: 'over the limit',
    })
    await facilitator.verify(ledgerBody(adapter, { from: payer, to: shop, value: '50', nonce: 'b' }))
    expect(events.map((e) => e.result.isValid)).toEqual([false, true])
    expect(events[1]?.context?.network).toBe('eip155:31337')
    expect(events[1]?.durationMs).toBeGreaterThanOrEqual(0)
  })

  it('keeps answers when an after-hook fails, and reports the error', async () => {
    const adapter = setup()
    const onError = vi.fn()
    const facilitator = createFacilitator({
      schemes: [adapter],
      onError,
      hooks: [{ afterVerify: () => Promise.reject(new Error('stats down')) }, { afterSettle: () => { throw new Error('sync boom') } }],
    })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '50', nonce: 'c' })
    expect(await facilitator.verify(body)).toEqual({ isValid: true, payer })
    expect((await facilitator.settle(body)).success).toBe(true)
    await facilitator.drain()
    expect(onError).toHaveBeenCalledTimes(2)
  })

  it('answers a timeout fault when an adapter hangs past the budget', async () => {
    const adapter = setup()
    const hanging: typeof adapter = { ...adapter, verify: () => new Promise(() => undefined) }
    const facilitator = createFacilitator({ schemes: [hanging], timeouts: { verifyMs: 50 } })
    const started = Date.now()
    const error = await facilitator.verify(ledgerBody(adapter, { from: payer, to: shop, value: '1', nonce: 'd' })).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'timeout', status: 504 })
    expect(Date.now() - started).toBeLessThan(1000)
  })

  it('never shows a foreign error message (which may hold secrets) to callers', async () => {
    const adapter = setup()
    const leaky: typeof adapter = { ...adapter, verify: () => Promise.reject(new Error('connect https://rpc.example/key=SECRET123')) }
    const facilitator = createFacilitator({ schemes: [leaky] })
    const error = await facilitator.verify(ledgerBody(adapter, { from: payer, to: shop, value: '1', nonce: 'e' })).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'internal_error', message: 'internal error' })
    expect(JSON.stringify((error as FacilitatorError).toBody())).not.toContain('SECRET123')
  })
})

describe('settle', () => {
  it('settles once; a repeat of the same payment gets the same answer, its transaction, and sends nothing', async () => {
    const adapter = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 's1' })
    const first = await facilitator.settle(body)
    expect(first).toMatchObject({ success: true, payer, network: 'eip155:31337' })
    expect(first.transaction).toMatch(/^[0-9a-f]{64}$/)
    const again = await facilitator.settle(body)
    expect(again).toEqual(first)
    expect(adapter.applied.size).toBe(1)
    expect(adapter.balances.get(shop)).toBe(100n)
  })

  it('lets exactly one of 50 racing settles move money; all get its answer and transaction', async () => {
    const adapter = setup({ confirmDelayMs: 20 })
    const store = createMemoryStore()
    // Two facilitators on one store behave as one.
    const a = createFacilitator({ schemes: [adapter], store })
    const b = createFacilitator({ schemes: [adapter], store })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'race' })
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).settle(body)))
    const transactions = new Set(answers.map((r) => r.transaction))
    // One payment moves money once: every call for it learns how it landed.
    expect(answers.every((r) => r.success)).toBe(true)
    expect(transactions.size).toBe(1)
    expect(adapter.applied.size).toBe(1)
    expect(adapter.balances.get(payer)).toBe(9_900n)
  })

  it('does not claim an invalid payment, so a corrected retry is not blocked', async () => {
    const adapter = setup()
    adapter.balances.set(payer, 10n)
    const facilitator = createFacilitator({ schemes: [adapter] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'poor' })
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'insufficient_funds', transaction: '' })
    adapter.balances.set(payer, 1000n)
    expect(await facilitator.settle(body)).toMatchObject({ success: true })
  })

  it('keeps the transaction id when the adapter fails after broadcasting, and resumes on retry', async () => {
    const adapter = setup()
    let crash = true
    const flaky: typeof adapter = {
      ...adapter,
      async settle(ctx, payment, journal, reservation) {
        if (!crash) return adapter.settle(ctx, payment, journal, reservation)
        await journal.broadcasting({ transaction: 'tx-sent-then-lost' })
        throw new Error('socket hang up')
      },
      resume: (ctx, payload, record) => adapter.resume(ctx, payload, record),
    }
    const facilitator = createFacilitator({ schemes: [flaky] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'lost' })
    const first = await facilitator.settle(body)
    expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: 'tx-sent-then-lost' })
    crash = false
    const retried = await facilitator.settle(body)
    expect(retried).toMatchObject({ success: true, transaction: 'tx-sent-then-lost' })
    expect(adapter.applied.size).toBe(1)
  })

  it('answers a pending outcome with its transaction, then the final one on a later call', async () => {
    const adapter = setup()
    let confirmed = false
    const slow: typeof adapter = {
      ...adapter,
      async settle(ctx, payment, journal, reservation) {
        await journal.broadcasting({ transaction: 'tx-slow' })
        return { success: false, errorReason: 'settlement_pending', transaction: 'tx-slow', network: ctx.wireNetwork }
      },
      async resume(ctx, payload, record) {
        return confirmed
          ? { success: true, transaction: record.transaction, network: ctx.wireNetwork, payer }
          : { success: false, errorReason: 'settlement_pending', transaction: record.transaction, network: ctx.wireNetwork }
      },
    }
    const facilitator = createFacilitator({ schemes: [slow] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'slow' })
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: 'tx-slow' })
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: 'tx-slow' })
    confirmed = true
    expect(await facilitator.settle(body)).toMatchObject({ success: true, transaction: 'tx-slow' })
    // Once final, the record answers without asking the chain again.
    confirmed = false
    expect(await facilitator.settle(body)).toMatchObject({ success: true, transaction: 'tx-slow' })
  })

  it('frees the claim when a fault happens before anything was sent', async () => {
    const adapter = setup()
    let fail = true
    const flaky: typeof adapter = {
      ...adapter,
      settle: (ctx, payment, journal, reservation) => (fail ? Promise.reject(new FacilitatorError('rpc_unavailable', 'rpc down')) : adapter.settle(ctx, payment, journal, reservation)),
    }
    const facilitator = createFacilitator({ schemes: [flaky] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'retry' })
    await expect(facilitator.settle(body)).rejects.toMatchObject({ code: 'rpc_unavailable', status: 503 })
    fail = false
    expect(await facilitator.settle(body)).toMatchObject({ success: true })
  })

  it('reports settle events to after-hooks, with failures', async () => {
    const adapter = setup()
    const events: SettleEvent[] = []
    const facilitator = createFacilitator({ schemes: [adapter], hooks: [{ afterSettle: (e) => void events.push(e) }] })
    await facilitator.settle(ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'h1' }))
    await facilitator.settle(ledgerBody(adapter, { from: payer, to: '0xelse', value: '100', nonce: 'h2' }))
    expect(events.map((e) => [e.operation, e.result.success])).toEqual([
      ['settle', true],
      ['settle', true],
    ])
    const bad = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'h3' })
    bad.paymentPayload.payload.signature = '0'.repeat(64)
    await facilitator.settle(bad)
    expect(events[2]?.result).toMatchObject({ success: false, errorReason: 'invalid_signature' })
  })

  it('keeps two facilitators in one process apart', async () => {
    const one = setup()
    const two = setup()
    const f1 = createFacilitator({ schemes: [one] })
    const f2 = createFacilitator({ schemes: [two] })
    const t = { from: payer, to: shop, value: '100', nonce: 'same' }
    expect((await f1.settle(ledgerBody(one, t))).success).toBe(true)
    expect((await f2.settle(ledgerBody(two, t))).success).toBe(true)
    expect(one.applied.size).toBe(1)
    expect(two.applied.size).toBe(1)
  })
})

describe('required amount', () => {
  it('reads maxAmountRequired in v1 even when a stray amount is present', async () => {
    const adapter = setup({ network: 'eip155:8453', v1Name: 'base' })
    const facilitator = createFacilitator({ schemes: [adapter] })
    const t = { from: payer, to: shop, value: '1', nonce: 'stray' }
    const body = {
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: 'exact', network: 'base', payload: { ...t, signature: adapter.sign(t) } },
      paymentRequirements: { scheme: 'exact', network: 'base', maxAmountRequired: '1000', amount: '1', asset: 'LEDGER', payTo: shop },
    }
    expect(await facilitator.verify(body)).toMatchObject({ isValid: false, invalidReason: 'amount_mismatch' })
    const garbage = structuredClone(body)
    garbage.paymentRequirements.amount = 'abc'
    expect(await facilitator.verify(garbage)).toMatchObject({ isValid: false, invalidReason: 'amount_mismatch' })
  })
})

describe('settlement identity', () => {
  it('never answers a different payment that shares the key with the first one\'s settlement', async () => {
    const adapter = setup()
    const facilitator = createFacilitator({ schemes: [adapter] })
    const first = await facilitator.settle(ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'k' }))
    expect(first.success).toBe(true)
    // Same payer and nonce (same key), another recipient: not the settled payment.
    const other = await facilitator.settle(ledgerBody(adapter, { from: payer, to: '0xother', value: '100', nonce: 'k' }))
    // Refused before anything is sent, naming the settlement that spent the authorization.
    expect(other).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: first.transaction })
    expect(adapter.applied.size).toBe(1)
  })

  it('lets one caller resume an orphaned broadcast while racing callers wait for it', async () => {
    const adapter = setup()
    let resumes = 0
    const orphaning: typeof adapter = {
      ...adapter,
      async settle(ctx, payment, journal, reservation) {
        await journal.broadcasting({ transaction: 'tx-orphan' })
        throw new Error('process died')
      },
      async resume(ctx, payload, record) {
        resumes++
        await new Promise((r) => setTimeout(r, 30))
        return adapter.resume(ctx, payload, record)
      },
    }
    const facilitator = createFacilitator({ schemes: [orphaning] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'orphan' })
    expect(await facilitator.settle(body)).toMatchObject({ errorReason: 'settlement_pending', transaction: 'tx-orphan' })
    const answers = await Promise.all(Array.from({ length: 10 }, () => facilitator.settle(body)))
    expect(resumes).toBe(1)
    expect(answers.every((a) => a.success)).toBe(true)
    expect(new Set(answers.map((a) => a.transaction))).toEqual(new Set(['tx-orphan']))
  })
})

describe('crash recovery', () => {
  const key = (nonce: string) => `settlement:${payer}:${nonce}`

  it('takes over a claim whose caller died before sending, within the lease, and settles it', async () => {
    const adapter = setup()
    const store = createMemoryStore()
    // What a process killed between its claim and its send leaves: a claim nobody renews.
    await store.set(key('dead-claim'), JSON.stringify({ state: 'claimed', leaseUntil: Date.now() + 200, owner: 'dead' }), { ttlMs: 120_000 })
    const facilitator = createFacilitator({ schemes: [adapter], store, settlement: { leaseMs: 300 } })
    const started = Date.now()
    const answer = await facilitator.settle(ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'dead-claim' }))
    expect(answer).toMatchObject({ success: true, payer })
    // Answered once the dead lease ran out, not after the settle budget (60 s).
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(adapter.applied.size).toBe(1)
  })

  it('renews the lease of a live settle: a retry waits for it instead of taking over', async () => {
    const adapter = setup({ confirmDelayMs: 1_200 })
    let resumes = 0
    const counting: typeof adapter = { ...adapter, resume: (ctx, payload, record) => ((resumes += 1), adapter.resume(ctx, payload, record)) }
    const facilitator = createFacilitator({ schemes: [counting], settlement: { leaseMs: 300 } })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'alive' })
    const first = facilitator.settle(body)
    await new Promise((r) => setTimeout(r, 100))
    // Four leases pass while the first settle confirms: its renewals keep the retry waiting.
    const retry = await facilitator.settle(body)
    expect(await first).toMatchObject({ success: true })
    expect(retry).toMatchObject({ success: true, transaction: (await first).transaction })
    expect(resumes).toBe(0)
    expect(adapter.applied.size).toBe(1)
  })

  it('sends anew a journaled transaction that never reached the chain, once the payment checks out again', async () => {
    const adapter = setup()
    let settles = 0
    let dropped = 0
    const dying: typeof adapter = {
      ...adapter,
      async settle(ctx, payment, journal, reservation) {
        settles += 1
        if (settles === 1) {
          // The process dies between the journal write and the send.
          await journal.broadcasting({ transaction: 'tx-never-sent' })
          throw new Error('process died')
        }
        return adapter.settle(ctx, payment, journal, reservation)
      },
      async resume(ctx, payload, record) {
        if (record.transaction !== 'tx-never-sent') return adapter.resume(ctx, payload, record)
        // Its signer nonce went to another transaction after the restart.
        dropped += 1
        return { success: false, errorReason: 'transaction_dropped', transaction: record.transaction, network: ctx.wireNetwork }
      },
    }
    const failures: string[] = []
    const facilitator = createFacilitator({ schemes: [dying], settlement: { leaseMs: 300 }, hooks: [{ afterSettle: (e) => void failures.push(e.result.errorReason ?? 'ok') }] })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'dropped' })
    expect(await facilitator.settle(body)).toMatchObject({ errorReason: 'settlement_pending', transaction: 'tx-never-sent' })
    const retried = await facilitator.settle(body)
    expect(retried).toMatchObject({ success: true, payer })
    expect(retried.transaction).not.toBe('tx-never-sent')
    expect(dropped).toBe(1)
    expect(settles).toBe(2)
    expect(adapter.applied.size).toBe(1)
    expect(adapter.balances.get(shop)).toBe(100n)
    // Never answered to a client: the internal code stays inside the core.
    expect(failures).not.toContain('transaction_dropped')
  })

  it('refuses a dropped transaction\'s payment while it no longer checks out, without suspending the payer, and settles it once it does', async () => {
    const adapter = setup()
    adapter.balances.set(payer, 100n)
    const dying: typeof adapter = {
      ...adapter,
      async settle(ctx, payment, journal, reservation) {
        await journal.broadcasting({ transaction: 'tx-lost' })
        throw new Error('process died')
      },
      resume: async (ctx, payload, record) => ({ success: false, errorReason: 'transaction_dropped', transaction: record.transaction, network: ctx.wireNetwork }),
    }
    const store = createMemoryStore()
    const facilitator = createFacilitator({ schemes: [dying], store, settlement: { leaseMs: 300, payerFailures: { maxFailures: 1 } } })
    const body = ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'lost-for-good' })
    expect(await facilitator.settle(body)).toMatchObject({ errorReason: 'settlement_pending' })
    // Meanwhile the payer spent its balance elsewhere: the payment no longer checks out.
    adapter.balances.set(payer, 0n)
    expect(await facilitator.settle(body)).toMatchObject({ success: false, errorReason: 'insufficient_funds', transaction: '' })
    // Nothing of it is on chain: the payer's failure budget (1) was not charged, and once the balance
    // covers it again the same payment settles, once.
    adapter.balances.set(payer, 1_000n)
    const next = createFacilitator({ schemes: [{ ...adapter }], store })
    expect(await next.settle(ledgerBody(adapter, { from: payer, to: shop, value: '100', nonce: 'after' }))).toMatchObject({ success: true })
    expect(await next.settle(body)).toMatchObject({ success: true })
    expect(adapter.applied.size).toBe(2)
  })
})

describe('close', () => {
  it('waits for after-hooks, closes the adapters and the store, then refuses new calls with server_busy', async () => {
    const adapter = setup()
    const closed: string[] = []
    const store = createMemoryStore()
    let hookDone = false
    const facilitator = createFacilitator({
      schemes: [Object.assign(adapter, { close: async () => void closed.push('adapter') })],
      store: Object.assign(store, { close: async () => void closed.push('store') }),
      hooks: [{ afterVerify: () => new Promise<void>((resolve) => setTimeout(() => ((hookDone = true), resolve()), 30)) }],
    })
    expect((await facilitator.verify(ledgerBody(adapter, { from: payer, to: shop, value: '5', nonce: 'c1' }))).isValid).toBe(true)
    await facilitator.close()
    expect(hookDone).toBe(true)
    expect(closed).toEqual(['adapter', 'store'])
    await expect(facilitator.verify(ledgerBody(adapter, { from: payer, to: shop, value: '5', nonce: 'c2' }))).rejects.toMatchObject({ code: 'server_busy', status: 503 })
    await expect(facilitator.settle(ledgerBody(adapter, { from: payer, to: shop, value: '5', nonce: 'c3' }))).rejects.toMatchObject({ code: 'server_busy' })
  })
})
