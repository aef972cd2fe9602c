import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const exporter = new InMemorySpanExporter()
const contextManager = new AsyncLocalStorageContextManager()
beforeAll(() => {
  // What an application does to turn tracing on: an SDK with a context manager.
  context.setGlobalContextManager(contextManager.enable())
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
})
afterAll(() => {
  trace.disable()
  context.disable()
})

describe('tracing', () => {
  it('makes verify and settle spans with their store calls as children, and no address or payload in any attribute', async () => {
    const adapter = createLedgerAdapter()
    adapter.balances.set('0xpayer', 100n)
    const facilitator = createFacilitator({ schemes: [adapter] })
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5', nonce: 'traced' })
    exporter.reset()
    await facilitator.verify(body)
    await facilitator.settle(body)
    await expect(facilitator.verify({ nonsense: true })).rejects.toMatchObject({ code: 'invalid_request' })

    const spans = exporter.getFinishedSpans()
    const verifies = spans.filter((span) => span.name === 'x402.verify')
    expect(verifies).toHaveLength(2)
    expect(verifies[0]!.attributes).toEqual({ 'x402.network': 'eip155:31337', 'x402.scheme': 'exact', 'x402.version': 2, 'x402.outcome': 'valid' })
    expect(verifies[1]!.status).toMatchObject({ code: 2, message: 'invalid_request' })
    const settle = spans.find((span) => span.name === 'x402.settle')!
    expect(settle.attributes['x402.outcome']).toBe('success')
    const storeCalls = spans.filter((span) => span.name === 'x402.store')
    expect(storeCalls.length).toBeGreaterThanOrEqual(3)
    // Every store call of the settle is its child, in the same trace.
    for (const child of storeCalls) {
      expect(child.spanContext().traceId).toBe(settle.spanContext().traceId)
      expect(child.parentSpanContext?.spanId).toBe(settle.spanContext().spanId)
    }
    expect(storeCalls.map((span) => span.attributes['x402.store.operation'])).toEqual(expect.arrayContaining(['claiming the payment', 'holding the payer\'s balance']))
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toMatch(/0xpayer|0xshop|signature/)
  })

  it('makes each RPC call of a verify a child span naming the method and the host only', async () => {
    const { startEvmFixture } = await import('../support/evm-fixture.js')
    const { exactEvm } = await import('../../src/evm/evm-schemes.js')
    const { signExactEvmPayment } = await import('../../src/evm/exact/sign-payment.js')
    const world = await startEvmFixture()
    try {
      const keyed = `${world.node.rpcUrl}/?apikey=SECRET-KEY`
      const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ networks: [{ ...world.adapterConfig().networks[0]!, rpcUrls: [keyed] }] }))] })
      const payer = await world.newPayer(1_000n)
      const requirements = world.requirementsV2({ amount: '10' })
      const body = { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements }
      await facilitator.verify(body) // the first verify also reads the fee quote
      exporter.reset()
      expect((await facilitator.verify(body)).isValid).toBe(true)
      const spans = exporter.getFinishedSpans()
      const verify = spans.find((span) => span.name === 'x402.verify')!
      const rpc = spans.filter((span) => span.name === 'x402.rpc' && span.parentSpanContext?.spanId === verify.spanContext().spanId)
      expect(rpc.map((span) => span.attributes['rpc.method']).sort()).toEqual(['eth_call', 'eth_getCode'])
      expect(rpc[0]!.attributes['server.address']).toBe(new URL(world.node.rpcUrl).host)
      expect(JSON.stringify(spans.map((span) => span.attributes))).not.toMatch(/SECRET-KEY|apikey/)
    } finally {
      await world.stop()
    }
  })

  it('traces only while an SDK is registered: one removed is no longer called, one registered later is used at once', async () => {
    const adapter = createLedgerAdapter()
    adapter.balances.set('0xpayer', 100n)
    const facilitator = createFacilitator({ schemes: [adapter] })
    const body = (nonce: string) => ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '5', nonce })
    const late = new InMemorySpanExporter()
    try {
      trace.disable()
      exporter.reset()
      expect((await facilitator.settle(body('untraced'))).success).toBe(true)
      expect(exporter.getFinishedSpans()).toHaveLength(0)
      // Registered after the facilitator was made, as an application that starts its SDK late does.
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(late)] }))
      expect((await facilitator.settle(body('traced-late'))).success).toBe(true)
      const settle = late.getFinishedSpans().find((span) => span.name === 'x402.settle')
      expect(settle?.attributes['x402.outcome']).toBe('success')
      expect(late.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === settle?.spanContext().spanId).length).toBeGreaterThan(0)
      expect(exporter.getFinishedSpans()).toHaveLength(0)
    } finally {
      trace.disable()
      trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
    }
  })
})
