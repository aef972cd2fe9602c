/**
 * A dev chain without Multicall3 (a plain anvil): every verify is a `misconfigured` fault (500),
 * and its message tells the operator what to do, not only what is missing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, FacilitatorError } from '../../src/index.js'
import { exactEvm, signExactEvmPayment } from '../../src/evm/index.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

let world: EvmFixture

beforeAll(async () => {
  world = await startEvmFixture()
})
afterAll(async () => {
  await world?.stop()
})

describe('Multicall3 missing', () => {
  it('verify throws misconfigured, naming the address and the chain, and saying how to deploy it or where to point the option', async () => {
    // No code at this address on the fixture's anvil: the same answer a fresh anvil gives at the canonical one.
    const nowhere = '0x00000000000000000000000000000000000ca11a'
    const base = world.adapterConfig()
    const facilitator = createFacilitator({
      schemes: [exactEvm({ ...base, networks: base.networks.map((network) => ({ ...network, multicall3: nowhere })) })],
    })
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })

    const fault = await facilitator.verify({ x402Version: 2, paymentPayload, paymentRequirements: requirements }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(fault).toBeInstanceOf(FacilitatorError)
    const error = fault as FacilitatorError
    expect(error.code).toBe('misconfigured')
    expect(error.status).toBe(500)
    expect(error.message).toContain(`Multicall3 is not deployed at ${nowhere} on eip155:84532`)
    expect(error.message).toMatch(/anvil_setCode/)
    expect(error.message).toMatch(/multicall3 option/)
    expect(error.message).toMatch(/docs\/local-development\.md/)
    await facilitator.close()
  })
})
