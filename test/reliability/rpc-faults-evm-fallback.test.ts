/**
 * A hanging first RPC URL (the endpoint accepts the request and never answers)
 * in front of a healthy second one: each URL's request bound (`rpcTimeoutMs`)
 * must hand the request to the second URL well within the verify budget, with
 * the default bounds as well as with short ones, and a settle through the
 * same pair must land exactly one transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { authorizationsUsed, body, timed } from './support.js'

/** The facilitator's default verify budget. */
const DEFAULT_VERIFY_MS = 10_000

describe('EVM: a hanging first RPC URL hands over to the second within the verify budget', () => {
  let world: EvmFixture
  let hanging: FaultProxy
  let healthy: FaultProxy
  beforeAll(async () => {
    world = await startEvmFixture({ signerCount: 1 })
    ;[hanging, healthy] = await Promise.all([startFaultProxy(world.node.rpcUrl), startFaultProxy(world.node.rpcUrl)])
    hanging.setMode({ kind: 'hang' })
  })
  afterAll(async () => {
    await Promise.all([hanging?.close(), healthy?.close()])
    await world?.stop()
  })

  const facilitatorVia = (overrides: Partial<ExactEvmConfig>, timeouts?: { verifyMs: number; settleMs: number }) =>
    createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [hanging.url, healthy.url] }], ...overrides }))],
      ...(timeouts ? { timeouts } : {}),
    })
  const payment = async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    return { payer, request: body(await signExactEvmPayment({ signer: payer, requirements }), requirements) }
  }

  it('with the default bounds, verify answers from the second URL after one request bound, not the whole budget', async () => {
    const f = facilitatorVia({})
    const { payer, request } = await payment()
    const healthyBefore = healthy.requests
    // The first verify of a facilitator reads the fee quote its simulation carries, then checks the chain:
    // two requests one after the other, each one default request bound (4 s) on the hanging URL, within the budget.
    const first = await timed(f.verify(request))
    expect(first.value).toEqual({ isValid: true, payer: payer.address })
    expect(first.ms).toBeGreaterThanOrEqual(7_800)
    expect(first.ms).toBeLessThan(DEFAULT_VERIFY_MS)
    // With the quote held, a verify is the chain check alone.
    const next = await payment()
    const verified = await timed(f.verify(next.request))
    expect(verified.value).toEqual({ isValid: true, payer: next.payer.address })
    expect(verified.ms).toBeGreaterThanOrEqual(3_900)
    expect(verified.ms).toBeLessThan(DEFAULT_VERIFY_MS / 2 + 1_000)
    expect(healthy.requests).toBeGreaterThan(healthyBefore)
  }, 30_000)

  it('with a short rpcTimeoutMs, verify and settle both go through the second URL within short budgets', async () => {
    const f = facilitatorVia({ rpcTimeoutMs: 300, receiptPollIntervalMs: 50 }, { verifyMs: 1_000, settleMs: 5_000 })
    const { payer, request } = await payment()
    const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
    const verified = await timed(f.verify(request))
    expect(verified.value).toEqual({ isValid: true, payer: payer.address })
    expect(verified.ms).toBeLessThan(1_000)
    const settled = await timed(f.settle(request))
    expect(settled.error).toBeUndefined()
    expect(settled.value).toMatchObject({ success: true, payer: payer.address })
    const used = await authorizationsUsed(world, payer.address, fromBlock)
    expect(used.map((log) => log.transactionHash)).toEqual([(settled.value as { transaction: string }).transaction])
  })

  it('rejects a non-positive rpcTimeoutMs as misconfiguration', () => {
    expect(() => facilitatorVia({ rpcTimeoutMs: 0 })).toThrow(/rpcTimeoutMs/)
  })
})
