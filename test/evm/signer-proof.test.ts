/**
 * Where verify recovers the payer's signature offline. A plain account's valid
 * payment is proven by the token itself, in the simulation of the chain check,
 * so the recovery (most of a verify's CPU) is skipped; every other outcome
 * still recovers, so that a bad signature is named as one and a smart wallet
 * is told from a plain account. The recovery is watched, not replaced: the
 * spy calls the real code.
 */
import { http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { createFacilitator, type Facilitator } from '../../src/index.js'
import { exactEvm, EVM_REJECTION, signExactEvmPayment } from '../../src/evm/index.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirements } from '../../src/schemas/requirements.js'
import { recoverAuthorizationSigner } from '../../src/evm/recover-signer.js'
import { deploySmartWallet, fundPayer } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

vi.mock('../../src/evm/recover-signer.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/evm/recover-signer.js')>()
  return { ...real, recoverAuthorizationSigner: vi.fn(real.recoverAuthorizationSigner) }
})
const recoveries = vi.mocked(recoverAuthorizationSigner)

let world: EvmFixture
let facilitator: Facilitator
let rpcRequests = 0

const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements) => ({ x402Version: 2, paymentPayload, paymentRequirements })

beforeAll(async () => {
  world = await startEvmFixture()
  facilitator = createFacilitator({
    schemes: [exactEvm(world.adapterConfig({ transport: (url) => http(url, { retryCount: 0, onFetchRequest: () => void rpcRequests++ }) }))],
  })
})
afterAll(async () => world?.stop())
beforeEach(() => {
  recoveries.mockClear()
  rpcRequests = 0
})

describe('exactEvm: the offline signer recovery', () => {
  it('is skipped for a plain account whose payment the token accepts, in verify and in settle', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    expect(recoveries).not.toHaveBeenCalled()
    expect(rpcRequests).toBe(1)
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    expect(recoveries).not.toHaveBeenCalled()
  })

  it('runs when a check fails, so that a valid signature hears the real reason', async () => {
    const poor = await world.newPayer(999n)
    const requirements = world.requirementsV2()
    const answer = await facilitator.verify(body(await signExactEvmPayment({ signer: poor, requirements }), requirements))
    expect(answer).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.insufficientFunds })
    expect(recoveries).toHaveBeenCalledTimes(1)
    expect(rpcRequests).toBe(1)
  })

  it('names a forged signature of a plain account as a bad signature, in one request', async () => {
    const payer = await world.newPayer()
    const stranger = privateKeyToAccount(generatePrivateKey())
    const requirements = world.requirementsV2()
    const forged = await signExactEvmPayment({ signer: { ...stranger, address: payer.address }, requirements })
    const answer = await facilitator.verify(body(forged, requirements))
    expect(answer).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.signature, payer: payer.address })
    expect(recoveries).toHaveBeenCalledTimes(1)
    expect(rpcRequests).toBe(1)
  })

  it('runs for a payer with code: a smart wallet is told from a plain account', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(world.node, owner.address)
    await fundPayer(world.node, world.token, wallet, 1_000_000n)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: { ...owner, address: wallet }, requirements })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: wallet })
    expect(recoveries).toHaveBeenCalledTimes(1)
    expect(rpcRequests).toBe(1)
  })
})
