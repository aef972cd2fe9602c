import { http, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { x402Client } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { createPaymentHeader } from 'x402/client'
import { createFacilitator, type Facilitator } from '../../src/index.js'
import { exactEvm, EVM_REJECTION, signExactEvmPayment } from '../../src/evm/index.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirements } from '../../src/schemas/requirements.js'
import { deploySmartWallet, deployTestToken, fundPayer } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

let world: EvmFixture
let facilitator: Facilitator
/** HTTP requests the adapter sent to the node. */
let rpcRequests = 0

const body = (paymentPayload: unknown, paymentRequirements: PaymentRequirements) => ({
  x402Version: (paymentPayload as { x402Version: number }).x402Version,
  paymentPayload,
  paymentRequirements,
})

beforeAll(async () => {
  world = await startEvmFixture()
  facilitator = createFacilitator({
    schemes: [
      exactEvm(
        world.adapterConfig({
          // Batching as our default transport does: a verify's two calls go as one request.
          transport: (url) => http(url, { batch: true, retryCount: 0, onFetchRequest: () => void rpcRequests++ }),
          // A quote that does not age during these tests, so that the counts are the verifies' own requests
          // (its refresh, off the verify path, is tested in exact-evm-simulation.test.ts).
          feeCacheMs: 600_000,
        }),
      ),
    ],
  })
  // The very first verify reads the fee quote its simulations carry; every later one uses it.
  await world.warmUp(facilitator)
})
afterAll(async () => world?.stop())

describe('exactEvm supported()', () => {
  it('lists the network under its v1 name and CAIP-2 id, with the signers under eip155:*', async () => {
    const supported = await facilitator.supported()
    expect(supported.kinds).toEqual([
      { x402Version: 1, scheme: 'exact', network: 'base-sepolia' },
      { x402Version: 2, scheme: 'exact', network: 'eip155:84532' },
    ])
    expect(supported.signers).toEqual({ 'eip155:*': world.signers.map((s) => s.address) })
  })
})

describe('exactEvm verify: valid payments', () => {
  it('accepts a v2 payment from a plain account in exactly one RPC request', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    rpcRequests = 0
    const started = performance.now()
    const answer = await facilitator.verify(body(paymentPayload, requirements))
    const elapsed = performance.now() - started
    expect(answer).toEqual({ isValid: true, payer: payer.address })
    expect(rpcRequests).toBe(1)
    console.info(`[measure] valid verify: ${rpcRequests} RPC request, ${elapsed.toFixed(1)} ms`)
  })

  it('measures sequential verify latency of valid payments (one request each)', async () => {
    const requirements = world.requirementsV2()
    const payer = await world.newPayer()
    const payments = await Promise.all(Array.from({ length: 60 }, () => signExactEvmPayment({ signer: payer, requirements })))
    const durations: number[] = []
    rpcRequests = 0
    for (const paymentPayload of payments) {
      const started = performance.now()
      const answer = await facilitator.verify(body(paymentPayload, requirements))
      durations.push(performance.now() - started)
      expect(answer.isValid).toBe(true)
    }
    expect(rpcRequests).toBe(payments.length)
    const sorted = durations.slice(10).sort((a, b) => a - b)
    const median = sorted[Math.floor(sorted.length / 2)]!
    const p95 = sorted[Math.floor(sorted.length * 0.95)]!
    console.info(`[measure] verify latency over ${sorted.length} valid payments: median ${median.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms`)
  })

  it('accepts a payload made by the official @x402/evm v2 client', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmScheme(payer))
    const paymentPayload = await client.createPaymentPayload({
      x402Version: 2,
      resource: { url: 'https://example.test/paid', description: 'paid', mimeType: 'application/json' },
      accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: { name: world.token.name, version: world.token.version } }],
    })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
  })

  it('accepts a payload made by the official v1 x402 client (base-sepolia)', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV1()
    const header = await createPaymentHeader(payer, 1, {
      scheme: 'exact',
      network: 'base-sepolia',
      maxAmountRequired: requirements.maxAmountRequired,
      asset: world.token.address,
      payTo: world.payTo,
      resource: 'https://example.test/paid',
      description: 'paid',
      mimeType: 'application/json',
      maxTimeoutSeconds: 60,
      extra: { name: world.token.name, version: world.token.version },
    })
    const paymentPayload: unknown = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
  })

  it('accepts SPEC.md\'s reduced form (authorization.amount and asset)', async () => {
    const payer = await world.newPayer()
    const requirements = world.requirementsV1()
    const signed = await signExactEvmPayment({ signer: payer, requirements })
    const { value, ...rest } = authorizationOf(signed)
    const paymentPayload = { ...signed, payload: { ...signed.payload, authorization: { ...rest, amount: value, asset: world.token.address } } }
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
  })

  it('accepts an ERC-1271 smart wallet signing with its owner\'s key, priced by an estimate in a second request', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(world.node, owner.address)
    await fundPayer(world.node, world.token, wallet, 1_000_000n)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: { ...owner, address: wallet }, requirements })
    rpcRequests = 0
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: wallet })
    // The first request finds code at the payer; the token runs the wallet's isValidSignature at our
    // expense, so the second estimates the exact settlement as the signer, with the fees.
    expect(rpcRequests).toBe(2)
  })

  it('accepts an ERC-1271 smart wallet on a token whose (v,r,s) overload only recovers (FiatToken v2.0, v2.1): asked again with the bytes overload', async () => {
    const legacy = await deployTestToken(world.node, { vrsRecoversOnly: true })
    const knowing = createFacilitator({
      schemes: [
        exactEvm(
          world.adapterConfig({
            networks: [{ network: 'eip155:84532', rpcUrls: [world.node.rpcUrl], assets: [{ address: legacy.address, name: legacy.name, version: legacy.version }] }],
            transport: (url) => http(url, { batch: true, retryCount: 0, onFetchRequest: () => void rpcRequests++ }),
            feeCacheMs: 600_000,
          }),
        ),
      ],
    })
    await world.warmUp(knowing)
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(world.node, owner.address)
    await fundPayer(world.node, legacy, wallet, 1_000_000n)
    const requirements = world.requirementsV2({ asset: legacy.address })
    const paymentPayload = await signExactEvmPayment({ signer: { ...owner, address: wallet }, requirements })
    rpcRequests = 0
    expect(await knowing.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: wallet })
    // The (v,r,s) simulation fails and the payer has code; then the wallet's check and an estimate of the bytes overload.
    expect(rpcRequests).toBe(2)
    // A plain account on the same token still takes one request.
    const payer = await world.newPayer()
    await fundPayer(world.node, legacy, payer.address, 1_000_000n)
    rpcRequests = 0
    expect(await knowing.verify(body(await signExactEvmPayment({ signer: payer, requirements }), requirements))).toEqual({ isValid: true, payer: payer.address })
    expect(rpcRequests).toBe(1)
  })

  it('accepts an undeployed ERC-6492 wallet from an allow-listed factory, in a single request', async () => {
    const { owner, wallet, paymentPayload, requirements } = await world.counterfactualPayment()
    rpcRequests = 0
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: wallet })
    expect(rpcRequests).toBe(1)
    // Verify deploys nothing: the factory ran inside an eth_call.
    expect(await world.node.publicClient.getCode({ address: wallet })).toBeUndefined()
    expect(owner.address).not.toBe(wallet)
  })
})

describe('exactEvm verify: every rejection has its own code', () => {
  const reject = async (paymentPayload: unknown, requirements: PaymentRequirements, reason: string, f = facilitator) => {
    const answer = await f.verify(body(paymentPayload, requirements))
    expect(answer.isValid).toBe(false)
    expect(answer.invalidReason).toBe(reason)
    expect(answer.invalidMessage).toEqual(expect.any(String))
    return answer
  }
  const signedBy = async (overrides: Parameters<typeof signExactEvmPayment>[0]['overrides'], requirements: PaymentRequirements = world.requirementsV2(), payer?: LocalAccount) =>
    signExactEvmPayment({ signer: payer ?? (await world.newPayer()), requirements, overrides })

  it('invalid_payload: a malformed nonce, a missing signature, no value — before any RPC', async () => {
    const requirements = world.requirementsV2()
    const good = await signedBy({}, requirements)
    rpcRequests = 0
    const badNonce = { ...good, payload: { ...good.payload, authorization: { ...authorizationOf(good), nonce: '0x1234' } } }
    const answer = await reject(badNonce, requirements, EVM_REJECTION.invalidPayload)
    expect(answer.invalidMessage).toContain('paymentPayload.payload.authorization.nonce')
    await reject({ ...good, payload: { authorization: authorizationOf(good) } }, requirements, EVM_REJECTION.invalidPayload)
    const { value: _value, ...noValue } = authorizationOf(good)
    await reject({ ...good, payload: { ...good.payload, authorization: noValue } }, requirements, EVM_REJECTION.invalidPayload)
    expect(rpcRequests).toBe(0)
  })

  it('invalid_payment_requirements: an asset that is no address', async () => {
    const requirements = world.requirementsV2({ asset: 'USDC' })
    const good = await signedBy({}, world.requirementsV2())
    await reject({ ...good, accepted: requirements }, requirements, EVM_REJECTION.invalidRequirements)
  })

  it('asset mismatch: authorization.asset names another token', async () => {
    const requirements = world.requirementsV1()
    const good = await signedBy({}, requirements)
    const other = privateKeyToAccount(generatePrivateKey()).address
    await reject({ ...good, payload: { ...good.payload, authorization: { ...authorizationOf(good), asset: other } } }, requirements, EVM_REJECTION.assetMismatch)
  })

  it('asset not allowed: restrictAssets accepts only configured tokens', async () => {
    const strict = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'base-sepolia', rpcUrls: [world.node.rpcUrl], restrictAssets: true }] }))],
    })
    const requirements = world.requirementsV2()
    await reject(await signedBy({}, requirements), requirements, EVM_REJECTION.assetNotAllowed, strict)
  })

  it('missing EIP-712 domain: no extra.name/version and an unknown token', async () => {
    const requirements = world.requirementsV2({ extra: {} })
    const paymentPayload = await signedBy({ name: world.token.name, version: world.token.version }, requirements)
    const unknowing = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [world.node.rpcUrl] }] }))] })
    await reject(paymentPayload, requirements, EVM_REJECTION.missingDomain, unknowing)
    // A configured token brings its domain along.
    expect(await facilitator.verify(body(paymentPayload, requirements))).toMatchObject({ isValid: true })
  })

  it('recipient mismatch', async () => {
    await reject(await signedBy({ to: privateKeyToAccount(generatePrivateKey()).address }), world.requirementsV2(), EVM_REJECTION.recipientMismatch)
  })

  it('value mismatch: less and more than required are both refused (exact equality)', async () => {
    await reject(await signedBy({ value: 999n }), world.requirementsV2(), EVM_REJECTION.valueMismatch)
    await reject(await signedBy({ value: 1001n }), world.requirementsV2(), EVM_REJECTION.valueMismatch)
  })

  it('validAfter in the future; validBefore inside the settle margin', async () => {
    const now = BigInt(Math.floor(Date.now() / 1000))
    await reject(await signedBy({ validAfter: now + 3600n }), world.requirementsV2(), EVM_REJECTION.validAfter)
    await reject(await signedBy({ validBefore: now + 2n }), world.requirementsV2(), EVM_REJECTION.validBefore)
    await reject(await signedBy({ validBefore: now - 10n }), world.requirementsV2(), EVM_REJECTION.validBefore)
  })

  it('signature: for the wrong chain id, the wrong token domain, or by another key', async () => {
    await reject(await signedBy({ chainId: 8453 }), world.requirementsV2(), EVM_REJECTION.signature)
    await reject(await signedBy({ name: 'Other Coin' }), world.requirementsV2(), EVM_REJECTION.signature)
    await reject(await signedBy({ version: '1' }), world.requirementsV2(), EVM_REJECTION.signature)
    const payer = await world.newPayer()
    const stranger = privateKeyToAccount(generatePrivateKey())
    const forged = await signExactEvmPayment({ signer: { ...stranger, address: payer.address }, requirements: world.requirementsV2() })
    await reject(forged, world.requirementsV2(), EVM_REJECTION.signature)
  })

  it('signature: a payment signed for another token contract', async () => {
    const other = await deployTestToken(world.node)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({
      signer: await world.newPayer(),
      requirements: { ...requirements, asset: other.address },
    })
    await reject({ ...paymentPayload, accepted: requirements }, requirements, EVM_REJECTION.signature)
  })

  it('ERC-1271: a smart wallet signature by someone other than its owner', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(world.node, owner.address)
    await fundPayer(world.node, world.token, wallet, 1_000_000n)
    const intruder = privateKeyToAccount(generatePrivateKey())
    const paymentPayload = await signExactEvmPayment({ signer: { ...intruder, address: wallet }, requirements: world.requirementsV2() })
    await reject(paymentPayload, world.requirementsV2(), EVM_REJECTION.signature)
  })

  it('ERC-6492: a wrapper naming a factory outside the allow-list is refused before any RPC', async () => {
    const rogueFactory = privateKeyToAccount(generatePrivateKey()).address
    const { paymentPayload, requirements } = await world.counterfactualPayment({ factory: rogueFactory })
    rpcRequests = 0
    await reject(paymentPayload, requirements, EVM_REJECTION.factoryNotAllowed)
    expect(rpcRequests).toBe(0)
  })

  it('ERC-6492: an undeployed wallet when the facilitator does not deploy wallets', async () => {
    const noDeploy = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ deployErc6492Wallets: false }))] })
    const { paymentPayload, requirements } = await world.counterfactualPayment()
    await reject(paymentPayload, requirements, EVM_REJECTION.undeployedWallet, noDeploy)
  })

  it('insufficient funds', async () => {
    const poor = await world.newPayer(999n)
    await reject(await signedBy({}, world.requirementsV2(), poor), world.requirementsV2(), EVM_REJECTION.insufficientFunds)
  })

  it('a used nonce (the payment was settled already)', async () => {
    const requirements = world.requirementsV2()
    const paymentPayload = await signedBy({}, requirements)
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled.success).toBe(true)
    await reject(paymentPayload, requirements, EVM_REJECTION.nonceUsed)
  })

  it('asset not a token: an EOA, an address without code or a contract that is no token, refused in the one request', async () => {
    const eoa = world.node.accounts[0]!.address
    const nobody = privateKeyToAccount(generatePrivateKey()).address
    for (const asset of [eoa, nobody, world.factory.address]) {
      // Signed for that "token": the signature recovers offline, only the chain can tell.
      const requirements = world.requirementsV2({ asset })
      const paymentPayload = await signedBy({}, requirements)
      rpcRequests = 0
      const answer = await reject(paymentPayload, requirements, EVM_REJECTION.assetNotAToken)
      expect(answer.invalidMessage).toContain(asset)
      expect(rpcRequests).toBe(1)
    }
  })

  it('a failed simulation: the token\'s real domain version differs from the one in extra', async () => {
    // Signed and recovered for version "9": valid offline, but the token checks its own domain.
    const requirements = world.requirementsV2({ extra: { name: world.token.name, version: '9' } })
    const answer = await reject(await signedBy({}, requirements), requirements, EVM_REJECTION.simulationFailed)
    expect(answer.invalidMessage).toContain('FiatTokenV2: invalid signature')
  })

  it('extra.name other than a known token\'s EIP-712 name: refused offline, as the official facilitator names it', async () => {
    const requirements = world.requirementsV2({ extra: { name: 'Fake Coin', version: '2' } })
    rpcRequests = 0
    const answer = await reject(await signedBy({}, requirements), requirements, EVM_REJECTION.tokenNameMismatch)
    expect(answer.invalidMessage).toContain('Fake Coin')
    expect(rpcRequests).toBe(0)
  })
})

function authorizationOf(paymentPayload: PaymentPayload): Record<string, unknown> {
  const authorization = paymentPayload.payload.authorization
  if (typeof authorization !== 'object' || authorization === null) throw new Error('no authorization')
  return { ...authorization }
}
