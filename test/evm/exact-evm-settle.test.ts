import { createServer } from 'node:net'
import { parseEventLogs, serializeErc6492Signature, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import { createFacilitator, FacilitatorError, REJECTION, type BroadcastRecord, type SchemeAdapter } from '../../src/index.js'
import { exactEvm, EVM_REJECTION, privateKeySigner, signExactEvmPayment } from '../../src/evm/index.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirements } from '../../src/schemas/requirements.js'
import { delegateAccount, deployGasBurningWallet, deploySmartWallet, deployTestToken, deployWalletFactory, fundPayer, tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { noJournal, resumeDirectly, settleDirectly, verifyDirectly } from '../support/adapter-steps.js'

let world: EvmFixture

const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements) => ({
  x402Version: paymentPayload.x402Version,
  paymentPayload,
  paymentRequirements,
})

/** The context the core would hand the adapter, to drive settle/resume directly. */
function contextOf(adapter: SchemeAdapter, paymentPayload: PaymentPayload, requirements: PaymentRequirements, budgetMs = 30_000) {
  const parsed = parsePaymentRequest(body(paymentPayload, requirements))
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(createRegistry([adapter]), parsed.request, AbortSignal.timeout(budgetMs))
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  return routed.context
}


async function transfersOf(hash: Hex) {
  const receipt = await world.node.publicClient.getTransactionReceipt({ hash })
  return { receipt, used: parseEventLogs({ abi: world.token.abi, logs: receipt.logs, eventName: 'AuthorizationUsed' }) }
}

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
})
afterAll(async () => world?.stop())

describe('exactEvm settle', () => {
  it('settles a plain-account v1 payment with the (v,r,s) overload and answers the v1 network name', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV1()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia', payer: payer.address })
    const { receipt, used } = await transfersOf(answer.transaction as Hex)
    expect(receipt.status).toBe('success')
    expect(used).toHaveLength(1)
    const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
    expect(tx.input.slice(0, 10)).toBe('0xe3ee160e') // transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBeGreaterThanOrEqual(1000n)
  })

  it('settles an ERC-1271 wallet: with the (v,r,s) overload where the token checks it as bytes (USDC v2.2), else with the bytes overload', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const legacy = await deployTestToken(world.node, { vrsRecoversOnly: true })
    for (const [token, selector] of [[world.token, '0xe3ee160e'], [legacy, '0xcf092995']] as const) {
      const owner = privateKeyToAccount(generatePrivateKey())
      const wallet = await deploySmartWallet(world.node, owner.address)
      await fundPayer(world.node, token, wallet, 5_000n)
      const requirements = world.requirementsV2({ asset: token.address })
      const paymentPayload = await signExactEvmPayment({ signer: { ...owner, address: wallet }, requirements })
      const answer = await facilitator.settle(body(paymentPayload, requirements))
      expect(answer).toMatchObject({ success: true, payer: wallet })
      const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
      expect(tx.input.slice(0, 10)).toBe(selector)
      // Priced by an estimate, as every smart wallet's settle is (its isValidSignature runs at our
      // expense), not sent with the fixed 150,000 of a plain account's.
      expect(tx.gas).not.toBe(150_000n)
      expect(await tokenBalance(world.node, token, wallet)).toBe(4_000n)
    }
  })

  it('deploys an undeployed ERC-6492 wallet through the allowed factory, then settles', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const { wallet, paymentPayload, requirements } = await world.counterfactualPayment({ balance: 5_000n })
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toMatchObject({ success: true, payer: wallet })
    expect(await world.node.publicClient.getCode({ address: wallet })).toMatch(/^0x[0-9a-f]+$/)
    expect(await tokenBalance(world.node, world.token, wallet)).toBe(4_000n)
  })

  it('refuses to deploy an ERC-6492 wallet whose deployment costs more than maxDeploymentGas; nothing is sent', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ maxDeploymentGas: 60_000n }))] })
    const { wallet, paymentPayload, requirements } = await world.counterfactualPayment({ balance: 5_000n })
    const nonces = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toMatchObject({ success: false, errorReason: EVM_REJECTION.settlementGasTooHigh, transaction: '' })
    expect(answer.errorMessage).toMatch(/deploying the payer's smart wallet needs about \d+ gas, above this facilitator's limit of 60000/)
    expect(await world.node.publicClient.getCode({ address: wallet })).toBeUndefined()
    expect(await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))).toEqual(nonces)
    expect(() => exactEvm(world.adapterConfig({ maxDeploymentGas: 20_000n }))).toThrow(/maxDeploymentGas/)
  })

  it('a replayed payment: the same facilitator answers the original hash, another one refuses the used nonce', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const first = await facilitator.settle(body(paymentPayload, requirements))
    expect(first.success).toBe(true)
    // The same facilitator answers the original outcome from its record (a retry after a lost answer).
    expect(await facilitator.settle(body(paymentPayload, requirements))).toEqual(first)
    const stranger = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const replay = await stranger.settle(body(paymentPayload, requirements))
    expect(replay).toMatchObject({ success: false, errorReason: EVM_REJECTION.nonceUsed, transaction: '' })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
  })

  it('concurrent duplicate settles: exactly one transfer on chain, every caller gets the same hash', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const before = await world.node.publicClient.getBlockNumber()
    const answers = await Promise.all(Array.from({ length: 12 }, () => facilitator.settle(body(paymentPayload, requirements))))
    const hashes = new Set(answers.map((a) => a.transaction))
    expect(answers.every((a) => a.success)).toBe(true)
    expect(hashes.size).toBe(1)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
    // Only one transaction of this payer's authorization reached the chain.
    const logs = await world.node.publicClient.getContractEvents({ address: world.token.address, abi: world.token.abi, eventName: 'AuthorizationUsed', fromBlock: before + 1n })
    expect(logs.filter((log) => (log.args as { authorizer?: string }).authorizer === payer.address)).toHaveLength(1)
  })

  it('100 concurrent distinct settles on one signer all land (local nonces)', async () => {
    const signer = world.signers[0]!
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [signer] }))] })
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2({ amount: '10' })
    const payments = await Promise.all(Array.from({ length: 100 }, () => signExactEvmPayment({ signer: payer, requirements })))
    const nonceBefore = await world.node.publicClient.getTransactionCount({ address: signer.address })
    const payToBefore = await tokenBalance(world.node, world.token, world.payTo)
    const started = performance.now()
    const answers = await Promise.all(payments.map((p) => facilitator.settle(body(p, requirements))))
    const elapsed = performance.now() - started
    const failures = answers.filter((a) => !a.success)
    expect(failures).toEqual([])
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(100)
    expect(await world.node.publicClient.getTransactionCount({ address: signer.address })).toBe(nonceBefore + 100)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 1000n)
    console.info(`[measure] 100 concurrent settles on one signer: ${elapsed.toFixed(0)} ms, ${(100_000 / elapsed).toFixed(1)} settles/s`)
  })

  it('settles through privateKeySigner (transactions signed on libsecp256k1)', async () => {
    const key = generatePrivateKey()
    const signer = privateKeySigner(key)
    await world.node.testClient.setBalance({ address: signer.address, value: 10n ** 18n })
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [signer] }))] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ amount: '10' })
    const payments = await Promise.all(Array.from({ length: 5 }, () => signExactEvmPayment({ signer: payer, requirements })))
    const answers = await Promise.all(payments.map((p) => facilitator.settle(body(p, requirements))))
    expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(Array(5).fill('success'))
    for (const answer of answers) {
      expect((await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })).from).toBe(signer.address.toLowerCase())
    }
    expect(await world.node.publicClient.getTransactionCount({ address: signer.address })).toBe(5)
  })

  it('a signer the node refuses for insufficient funds is left out: new settles answer 503 signer_unfunded, claim nothing, and settle once it is funded', async () => {
    const signer = privateKeySigner(generatePrivateKey()) // holds no ETH
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [signer], unfundedSignerCooldownMs: 300 }))] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ amount: '10' })
    const [first, second] = await Promise.all([0, 1].map(() => signExactEvmPayment({ signer: payer, requirements })))
    // The first meets the refusal in its verify: the simulation runs as the signer, with the fees and the
    // gas limit of the transaction, and the node will not run it for a key that cannot pay. Nothing is sent.
    const first503 = await facilitator.settle(body(first!, requirements)).then(() => undefined, (error: unknown) => error)
    expect(first503).toBeInstanceOf(FacilitatorError)
    expect(first503).toMatchObject({ code: 'signer_unfunded', status: 503 })
    expect((first503 as Error).message).toContain(signer.address)
    // The next is refused before anything is verified or claimed: the signer is left out for the cooldown.
    const refused = await facilitator.settle(body(second!, requirements)).then(() => undefined, (error: unknown) => error)
    expect(refused).toBeInstanceOf(FacilitatorError)
    expect(refused).toMatchObject({ code: 'signer_unfunded', status: 503 })
    expect((refused as Error).message).toContain('insufficient funds for gas')
    // Funded, and past the cooldown: both payments settle (neither was claimed).
    await world.node.testClient.setBalance({ address: signer.address, value: 10n ** 18n })
    await new Promise((resolve) => setTimeout(resolve, 350))
    expect(await facilitator.settle(body(first!, requirements))).toMatchObject({ success: true, payer: payer.address })
    expect(await facilitator.settle(body(second!, requirements))).toMatchObject({ success: true, payer: payer.address })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 20n)
    expect(await world.node.publicClient.getTransactionCount({ address: signer.address })).toBe(2)
  })

  it('spreads settles over several signers', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const [a, b] = world.signers
    const before = await Promise.all([a!, b!].map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ amount: '10' })
    const payments = await Promise.all(Array.from({ length: 10 }, () => signExactEvmPayment({ signer: payer, requirements })))
    const answers = await Promise.all(payments.map((p) => facilitator.settle(body(p, requirements))))
    expect(answers.every((x) => x.success)).toBe(true)
    const after = await Promise.all([a!, b!].map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))
    expect(after[0]! - before[0]!).toBeGreaterThan(0)
    expect(after[1]! - before[1]!).toBeGreaterThan(0)
    expect(after[0]! - before[0]! + (after[1]! - before[1]!)).toBe(10)
  })

  it('a reverted receipt is a failure that keeps the hash', async () => {
    const adapter = exactEvm(world.adapterConfig())
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const ctx = contextOf(adapter, paymentPayload, requirements)
    const verdict = await verifyDirectly(adapter, ctx)
    const first = await adapter.settle(ctx, verdict.payment, noJournal)
    expect(first.success).toBe(true)
    // adapter.settle trusts the core's verify; sending the used authorization again reverts on chain.
    const again = await adapter.settle(contextOf(adapter, paymentPayload, requirements), verdict.payment, noJournal)
    expect(again).toMatchObject({ success: false, errorReason: REJECTION.transactionFailed, payer: payer.address })
    expect(again.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    expect(again.transaction).not.toBe(first.transaction)
    expect((await world.node.publicClient.getTransactionReceipt({ hash: again.transaction as Hex })).status).toBe('reverted')
  })

  it('a plain signature of an account with code (EIP-7702): verify reads its code, settle prices it by an estimate, not the fixed limit', async () => {
    const adapter = exactEvm(world.adapterConfig())
    const payer = await world.newPayer()
    // A delegate that takes the payer's own signatures after burning about 110k gas.
    await delegateAccount(world.node, payer.address, 500n)
    const requirements = world.requirementsV2()
    const answer = await settleDirectly(adapter, contextOf(adapter, await signExactEvmPayment({ signer: payer, requirements }), requirements), noJournal)
    expect(answer).toMatchObject({ success: true, payer: payer.address })
    const { receipt, used } = await transfersOf(answer.transaction as Hex)
    expect(used).toHaveLength(1)
    expect(receipt.gasUsed).toBeGreaterThan(150_000n)
  })

  it('settle after a verify of the same context re-checks the clock: an authorization too close to expiry by then is refused, nothing sent', async () => {
    const adapter = exactEvm(world.adapterConfig({ settleMarginSeconds: 6 }))
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const signedAt = Math.floor(Date.now() / 1000)
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements, validForSeconds: 8 })
    const ctx = contextOf(adapter, paymentPayload, requirements)
    const verdict = await verifyDirectly(adapter, ctx)
    expect(verdict.response).toEqual({ isValid: true, payer: payer.address })
    // validBefore = signedAt + 8: with a 6 s margin it is too close once the clock passes signedAt + 2.
    await new Promise((resolve) => setTimeout(resolve, (signedAt + 3) * 1000 - Date.now() + 50))
    let journaled = false
    const answer = await adapter.settle(ctx, verdict.payment, { broadcasting: async () => void (journaled = true) })
    expect(answer).toMatchObject({ success: false, errorReason: EVM_REJECTION.validBefore, transaction: '', payer: payer.address })
    expect(journaled).toBe(false)
  })

  it('settle after a verify of the same context sends the payment verify checked', async () => {
    const adapter = exactEvm(world.adapterConfig())
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const ctx = contextOf(adapter, await signExactEvmPayment({ signer: payer, requirements }), requirements)
    const verdict = await verifyDirectly(adapter, ctx)
    expect(verdict.response).toEqual({ isValid: true, payer: payer.address })
    const answer = await adapter.settle(ctx, verdict.payment, noJournal)
    expect(answer).toMatchObject({ success: true, payer: payer.address })
    const { used } = await transfersOf(answer.transaction as Hex)
    expect(used).toHaveLength(1)
  })

  it('records the transaction before sending it, and resume() sends the recorded bytes after a crash', async () => {
    const adapter = exactEvm(world.adapterConfig())
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    let recorded: BroadcastRecord | undefined
    const crash = new Error('process died right after journaling')
    await expect(
      settleDirectly(adapter, contextOf(adapter, paymentPayload, requirements), {
        broadcasting: async (record) => {
          recorded = record
          throw crash
        },
      }),
    ).rejects.toBe(crash)
    expect(recorded?.raw).toMatch(/^0x/)
    const hash = recorded!.transaction as Hex
    expect(await world.node.publicClient.getTransaction({ hash }).catch(() => undefined)).toBeUndefined()
    const resumed = await resumeDirectly(adapter, contextOf(adapter, paymentPayload, requirements), recorded!)
    expect(resumed).toMatchObject({ success: true, transaction: hash, payer: payer.address })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
  })

  it('past the receipt bound it answers settlement_pending with the hash; a later settle finishes it', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ receiptTimeoutMs: 300 }))] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    await world.node.testClient.setAutomine(false)
    let pending
    try {
      pending = await facilitator.settle(body(paymentPayload, requirements))
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(pending).toMatchObject({ success: false, errorReason: REJECTION.settlementPending, payer: payer.address })
    expect(pending.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    await world.node.testClient.mine({ blocks: 1 })
    const finished = await facilitator.settle(body(paymentPayload, requirements))
    expect(finished).toMatchObject({ success: true, transaction: pending.transaction })
  })

  it('a sent transaction the node loses is offered again with the same bytes, and lands', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ rebroadcastIntervalMs: 200, receiptTimeoutMs: 10_000 }))] })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    await world.node.testClient.setAutomine(false)
    let settling: ReturnType<typeof facilitator.settle> | undefined
    let lost: Hex | undefined
    try {
      settling = facilitator.settle(body(paymentPayload, requirements))
      // Once the transaction waits in the pool, the node forgets it (as a restarted or evicting node would).
      for (let i = 0; i < 200 && !lost; i++) {
        const pool = await world.node.testClient.getTxpoolContent()
        lost = Object.values(pool.pending).flatMap((byNonce) => Object.values(byNonce)).map((tx) => tx.hash)[0]
        if (!lost) await new Promise((resolve) => setTimeout(resolve, 10))
      }
      expect(lost).toBeDefined()
      await world.node.testClient.dropTransaction({ hash: lost! })
      expect(await world.node.publicClient.getTransaction({ hash: lost! }).catch(() => undefined)).toBeUndefined()
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    const answer = await settling!
    expect(answer).toMatchObject({ success: true, transaction: lost, payer: payer.address })
    expect((await transfersOf(lost!)).used).toHaveLength(1)
  })

  it('honors the time budget (ctx.signal): a settle cut short after broadcast still keeps the hash', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())], timeouts: { settleMs: 400 } })
    const payer = await world.newPayer()
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    await world.node.testClient.setAutomine(false)
    const started = performance.now()
    let answer
    try {
      answer = await facilitator.settle(body(paymentPayload, requirements))
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(answer).toMatchObject({ success: false, errorReason: REJECTION.settlementPending })
    expect(answer.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    await world.node.testClient.mine({ blocks: 1 })
  })
})

describe('exactEvm settle: the facilitator pays gas only for real payments', () => {
  // About 600k gas in isValidSignature, far above the default cap of 300k (and within what an estimate may try, 4 times the cap).
  const BURN_ROUNDS = 2_500n
  const signerNonces = () => Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))

  it('an asset that is no token (an EOA, an address without code) is refused and nothing is sent', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
    const before = await signerNonces()
    for (const asset of [world.node.accounts[0]!.address, privateKeyToAccount(generatePrivateKey()).address]) {
      const payer = await world.newPayer()
      const requirements = world.requirementsV2({ asset })
      const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
      const answer = await facilitator.settle(body(paymentPayload, requirements))
      expect(answer).toMatchObject({ success: false, errorReason: EVM_REJECTION.assetNotAToken, transaction: '', payer: payer.address })
    }
    expect(await signerNonces()).toEqual(before)
  })

  it('an ERC-1271 wallet whose isValidSignature burns gas above maxSettlementGas (default 300k) is refused by verify, and settle sends nothing', async () => {
    const signer = world.signers[0]!
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [signer] }))] })
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deployGasBurningWallet(world.node, owner.address, BURN_ROUNDS)
    await fundPayer(world.node, world.token, wallet, 5_000n)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: { ...owner, address: wallet }, requirements })
    // The signature is valid: only the price of settling it is refused, by verify already (its estimate).
    const verdict = await facilitator.verify(body(paymentPayload, requirements))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.settlementGasTooHigh, payer: wallet })
    expect(verdict.invalidMessage).toContain('300000')
    const nonceBefore = await world.node.publicClient.getTransactionCount({ address: signer.address })
    const refused = await facilitator.settle(body(paymentPayload, requirements))
    expect(refused).toMatchObject({ success: false, errorReason: EVM_REJECTION.settlementGasTooHigh, transaction: '', payer: wallet })
    expect(refused.errorMessage).toContain('300000')
    expect(await world.node.publicClient.getTransactionCount({ address: signer.address })).toBe(nonceBefore)
    expect(await tokenBalance(world.node, world.token, wallet)).toBe(5_000n)
    // No local nonce was taken either: the next settle of this signer uses the very next nonce.
    const payer = await world.newPayer()
    const next = await facilitator.settle(body(await signExactEvmPayment({ signer: payer, requirements }), requirements))
    expect(next.success).toBe(true)
    expect((await world.node.publicClient.getTransaction({ hash: next.transaction as Hex })).nonce).toBe(nonceBefore)
    // A facilitator that accepts the price settles the same payment.
    const generous = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ signers: [signer], maxSettlementGas: 10_000_000n }))] })
    expect(await generous.settle(body(paymentPayload, requirements))).toMatchObject({ success: true, payer: wallet })
    expect(await tokenBalance(world.node, world.token, wallet)).toBe(4_000n)
  })

  it('an undeployed ERC-6492 wallet that would burn gas above maxSettlementGas is refused by verify, and settle sends not even its deployment', async () => {
    const signer = world.signers[0]!
    const burningFactory = await deployWalletFactory(world.node, BURN_ROUNDS)
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ signers: [signer], erc6492Factories: [burningFactory.address], maxSettlementGas: 200_000n }))],
    })
    const owner = privateKeyToAccount(generatePrivateKey())
    const salt = generatePrivateKey()
    const wallet = await burningFactory.walletAddress(owner.address, salt)
    await fundPayer(world.node, world.token, wallet, 5_000n)
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({
      signer: { ...owner, address: wallet },
      requirements,
      wrapSignature: (signature) => serializeErc6492Signature({ address: burningFactory.address, data: burningFactory.deployCalldata(owner.address, salt), signature }),
    })
    // Its deployment followed by the transfer is estimated in verify's request: the transfer's share is above the cap.
    const verdict = await facilitator.verify(body(paymentPayload, requirements))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.settlementGasTooHigh, payer: wallet })
    expect(verdict.invalidMessage).toContain('200000')
    const nonceBefore = await world.node.publicClient.getTransactionCount({ address: signer.address })
    const refused = await facilitator.settle(body(paymentPayload, requirements))
    expect(refused).toMatchObject({ success: false, errorReason: EVM_REJECTION.settlementGasTooHigh, transaction: '', payer: wallet })
    expect(refused.errorMessage).toContain('200000')
    expect(await world.node.publicClient.getTransactionCount({ address: signer.address })).toBe(nonceBefore)
    expect(await world.node.publicClient.getCode({ address: wallet })).toBeUndefined()
    expect(await tokenBalance(world.node, world.token, wallet)).toBe(5_000n)
  })
})

describe('exactEvm RPC faults', () => {
  it('an unreachable RPC is an rpc_unavailable fault whose message never quotes the URL', async () => {
    const port = await closedPort()
    const secretUrl = `http://127.0.0.1:${port}/v2/SECRET-API-KEY`
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [secretUrl] }] }))],
    })
    const requirements = world.requirementsV2()
    const paymentPayload = await signExactEvmPayment({ signer: await world.newPayer(), requirements })
    const error = await facilitator.verify(body(paymentPayload, requirements)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorError)
    expect((error as FacilitatorError).code).toBe('rpc_unavailable')
    expect((error as FacilitatorError).status).toBe(503)
    expect((error as FacilitatorError).message).not.toContain('SECRET')
    expect((error as FacilitatorError).message).not.toContain(String(port))
    const settled = await facilitator.settle(body(paymentPayload, requirements)).catch((e: unknown) => e)
    expect((settled as FacilitatorError).code).toBe('rpc_unavailable')
  })

  it('falls back to the next RPC URL when the first is down', async () => {
    const port = await closedPort()
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [`http://127.0.0.1:${port}`, world.node.rpcUrl] }] }))],
    })
    const requirements = world.requirementsV2()
    const payer = await world.newPayer()
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    expect(await facilitator.settle(body(paymentPayload, requirements))).toMatchObject({ success: true })
  })
})

/** A loopback port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  if (typeof address !== 'object' || address === null) throw new Error('no port')
  return address.port
}
