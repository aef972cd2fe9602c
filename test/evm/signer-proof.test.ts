/**
 * Where verify recovers the payer's signature offline. For a token the
 * facilitator knows, the simulation in the chain check runs the token's own
 * signature check, and the payer's code is read beside it: a payment the token
 * accepts needs no recovery (most of a verify's CPU), and a payer with code is
 * priced by an estimate. Every other outcome still recovers, so that a bad
 * signature is named as one. On any other token the signer is recovered, and
 * the payment is priced by an estimate in the same request. The recovery is watched, not replaced: the spy calls the real code.
 */
import { createPublicClient, custom, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { createFacilitator, type Facilitator } from '../../src/index.js'
import { exactEvm, EVM_REJECTION, signExactEvmPayment } from '../../src/evm/index.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirements } from '../../src/schemas/requirements.js'
import { recoverAuthorizationSigner } from '../../src/evm/crypto/recover-signer.js'
import { delegateAccount, deploySmartWallet, deployTestToken, fundPayer } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

vi.mock('../../src/evm/crypto/recover-signer.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/evm/crypto/recover-signer.js')>()
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
    // Batching as our default transport does: a verify's two calls go as one request.
    schemes: [
      exactEvm(
        world.adapterConfig({
          transport: (url) => http(url, { batch: true, retryCount: 0, onFetchRequest: () => void rpcRequests++ }),
          // A quote that does not age here: the counts are the verifies' own requests.
          feeCacheMs: 600_000,
        }),
      ),
    ],
  })
  // The first verify reads the fee quote; the later ones use it.
  await world.warmUp(facilitator)
})
afterAll(async () => world?.stop())
beforeEach(() => {
  recoveries.mockClear()
  rpcRequests = 0
})

describe('exactEvm: the offline signer recovery', () => {
  it('is skipped for a plain account whose payment the token accepts, in verify and in settle, which sends the fixed gas limit', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    expect(recoveries).not.toHaveBeenCalled()
    expect(rpcRequests).toBe(1)
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    expect(recoveries).not.toHaveBeenCalled()
    expect((await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })).gas).toBe(150_000n)
  })

  it('is skipped for a smart wallet the token accepts, which is then priced by an estimate (a second request)', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(world.node, owner.address)
    await fundPayer(world.node, world.token, wallet, 1_000_000n)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: { ...owner, address: wallet }, requirements })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: wallet })
    expect(recoveries).not.toHaveBeenCalled()
    expect(rpcRequests).toBe(2)
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: wallet })
    const gas = (await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })).gas
    expect(gas).toBeLessThan(150_000n)
    expect(gas).toBeGreaterThan(21_000n)
  })

  it('counts a payer whose code read failed as having code: accepted, and settled with a gas estimate', async () => {
    // Fault injection: every eth_getCode fails, everything else reaches anvil.
    const node = createPublicClient({ transport: http(world.node.rpcUrl) })
    const blind = createFacilitator({
      schemes: [
        exactEvm(
          world.adapterConfig({
            transport: () =>
              custom({
                async request({ method, params }) {
                  if (method === 'eth_getCode') throw new Error('injected eth_getCode failure')
                  return node.request({ method, params } as Parameters<typeof node.request>[0])
                },
              }),
          }),
        ),
      ],
    })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const settled = await blind.settle(body(await signExactEvmPayment({ signer: payer, requirements }), requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    expect((await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })).gas).not.toBe(150_000n)
  })

  it('runs for a token the facilitator does not know, even when the payment is valid', async () => {
    const other = await deployTestToken(world.node)
    const payer = await world.newPayer()
    await fundPayer(world.node, other, payer.address, 1_000_000n)
    const requirements = world.requirementsV2({ asset: other.address })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const answer = await facilitator.verify(body(paymentPayload, requirements))
    expect(answer).toEqual({ isValid: true, payer: payer.address })
    expect(recoveries).toHaveBeenCalledTimes(1)
    // The estimate that prices a token we do not know travels in the same request.
    expect(rpcRequests).toBe(1)
    // Its transfer may cost any gas: sent with the estimate and headroom, not the fixed limit of a known token.
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    const gas = (await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })).gas
    expect(gas).not.toBe(150_000n)
    expect(gas).toBeLessThanOrEqual(300_000n)
  })

  it('on a token it does not know, an EIP-7702 account is settled with a gas estimate, made in the verify\'s one request', async () => {
    const other = await deployTestToken(world.node)
    const payer = await world.newPayer()
    await fundPayer(world.node, other, payer.address, 1_000_000n)
    // The token, as USDC v2.2 does, asks the delegate, which burns about 110k gas first (500 rounds):
    // the transfer needs more than the fixed 150k limit.
    await delegateAccount(world.node, payer.address, 500n)
    const requirements = world.requirementsV2({ asset: other.address })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    expect(recoveries).toHaveBeenCalledTimes(1)
    expect(rpcRequests).toBe(1)
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    const used = (await world.node.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })).gasUsed
    expect(used).toBeGreaterThan(150_000n)
    expect(used).toBeLessThan(300_000n)
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

})
