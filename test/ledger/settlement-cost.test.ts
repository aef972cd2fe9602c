/**
 * What the facilitator spends, end to end on real chains: each ledger row of a sent transaction
 * records its cost in the chain's native smallest unit, and `/metrics` counts it by network and
 * by what became of the transaction. Checked against the chain itself: the signer's (fee payer's)
 * balance drop equals the recorded cost, on anvil (EVM) and on LiteSVM (Solana).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  appendTransactionMessageInstructions,
  type Blockhash,
  createSolanaRpc,
  createTransactionMessage,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit'
import { getTransferCheckedInstruction } from '@solana-program/token'
import { FailedTransactionMetadata } from 'litesvm'
import type { Address, Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PaymentContext, SchemeAdapter } from '../../src/core/adapter.js'
import { createFacilitator } from '../../src/core/facilitator.js'
import { transferWithAuthorizationBytesCalldata } from '../../src/evm/calldata.js'
import { exactEvm } from '../../src/evm/exact-evm.js'
import { receiptCost } from '../../src/evm/receipt-poller.js'
import { signExactEvmPayment } from '../../src/evm/sign-payment.js'
import { createLedgerRecorder } from '../../src/ledger/ledger-recorder.js'
import { createMemoryLedger } from '../../src/ledger/memory-ledger.js'
import type { SettlementLedger } from '../../src/ledger/settlement-ledger.js'
import { createMetrics, type FacilitatorMetrics } from '../../src/ops/metrics.js'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { createSqliteStore } from '../../src/stores/sqlite/sqlite-store.js'
import { buildExactSvmTransaction } from '../../src/svm/build-transaction.js'
import { exactSvm } from '../../src/svm/exact-svm.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, createTokenAccount, lamportsOf, scenarioPaymentBody, scenarioRequirements, startSolanaTestRpc, tokenBalance, type PaymentScenario } from '../support/svm-fixtures.js'

/** The counter's value for one network and outcome (0 when the series does not exist). */
async function counted(metrics: FacilitatorMetrics, network: string, outcome: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric('x402_settlement_cost_total')
  const values = (await metric!.get()).values
  return values.find((value) => value.labels.network === network && value.labels.outcome === outcome)?.value ?? 0
}

async function rowsOf(ledger: SettlementLedger) {
  return (await ledger.read({ order: 'asc' })).entries
}

describe('settlement cost on EVM (anvil)', () => {
  let world: EvmFixture
  beforeAll(async () => {
    world = await startEvmFixture()
  })
  afterAll(async () => {
    await world?.stop()
  })

  const gasMoney = (address: Address) => world.node.publicClient.getBalance({ address })

  function setup(adapter: SchemeAdapter = exactEvm(world.adapterConfig())) {
    const ledger = createMemoryLedger()
    const metrics = createMetrics()
    const facilitator = createFacilitator({ schemes: [adapter], hooks: [createLedgerRecorder({ ledger }), metrics.hooks] })
    return { ledger, metrics, facilitator }
  }

  it('a settled payment records gas used × effective gas price, what the signer paid, and counts it as landed', async () => {
    const { ledger, metrics, facilitator } = setup()
    const signer = world.signers[0]!.address
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ amount: '100' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    // A verify sends nothing and costs nothing.
    expect(await facilitator.verify({ x402Version: 2, paymentPayload, paymentRequirements: requirements })).toMatchObject({ isValid: true })
    const before = await gasMoney(signer)
    const answer = await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
    expect(answer).toMatchObject({ success: true })
    await facilitator.drain()
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: answer.transaction as Hex })
    const cost = receipt.gasUsed * receipt.effectiveGasPrice
    expect(cost).toBeGreaterThan(0n)
    expect(before - (await gasMoney(signer))).toBe(cost)
    const [row, ...more] = await rowsOf(ledger)
    expect(more).toEqual([])
    expect(row).toMatchObject({ status: 'settled', transaction: answer.transaction, cost: cost.toString() })
    expect(await counted(metrics, 'eip155:84532', 'landed')).toBe(Number(cost))
    expect(await counted(metrics, 'eip155:84532', 'reverted')).toBe(0)
    // The repeat is answered from the record: no row, nothing counted again.
    await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
    await facilitator.drain()
    expect(await rowsOf(ledger)).toHaveLength(1)
    expect(await counted(metrics, 'eip155:84532', 'landed')).toBe(Number(cost))
    metrics.close()
  })

  it('a payment refused before sending records no cost and counts nothing', async () => {
    const { ledger, metrics, facilitator } = setup()
    const payer = await world.newPayer(10n)
    const requirements = world.requirementsV2({ amount: '100' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    expect(await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements: requirements })).toMatchObject({ success: false, errorReason: 'insufficient_funds' })
    await facilitator.drain()
    expect(await rowsOf(ledger)).toMatchObject([{ status: 'failed', transaction: null, cost: null }])
    expect((await metrics.registry.getSingleMetric('x402_settlement_cost_total')!.get()).values).toEqual([])
    metrics.close()
  })

  it('a settlement the chain reverts records the gas it burnt, counted as reverted', async () => {
    const real = exactEvm(world.adapterConfig())
    // The payer's front-run (the fault injected): between verify and the facilitator's send, the same
    // authorization goes on chain from another account, so the facilitator's transaction reverts.
    const frontRun = async (ctx: PaymentContext) => {
      const { signature, authorization: a } = ctx.payload.payload as { signature: Hex; authorization: Record<string, string> }
      const message = { from: a.from as Address, to: a.to as Address, value: BigInt(a.value!), validAfter: BigInt(a.validAfter!), validBefore: BigInt(a.validBefore!), nonce: a.nonce as Hex }
      const hash = await world.node.walletClient().sendTransaction({ to: world.token.address, data: transferWithAuthorizationBytesCalldata(message, signature), chain: world.node.chain, account: world.node.accounts[0]! })
      expect((await world.node.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    }
    const adapter: SchemeAdapter = { ...real, settle: async (ctx, payment, journal, reservation) => (await frontRun(ctx), real.settle(ctx, payment, journal, reservation)) }
    const { ledger, metrics, facilitator } = setup(adapter)
    const signer = world.signers[0]!.address
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ amount: '100' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const before = await gasMoney(signer)
    const answer = await facilitator.settle({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
    expect(answer).toMatchObject({ success: false, errorReason: 'transaction_failed' })
    await facilitator.drain()
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: answer.transaction as Hex })
    expect(receipt.status).toBe('reverted')
    const cost = receipt.gasUsed * receipt.effectiveGasPrice
    expect(before - (await gasMoney(signer))).toBe(cost)
    expect(await rowsOf(ledger)).toMatchObject([{ status: 'failed', errorReason: 'transaction_failed', transaction: answer.transaction, cost: cost.toString() }])
    expect(await counted(metrics, 'eip155:84532', 'reverted')).toBe(Number(cost))
    expect(await counted(metrics, 'eip155:84532', 'landed')).toBe(0)
    metrics.close()
  })

  it('a pending settlement records no cost; the call that finishes it records the whole cost once', async () => {
    const { ledger, metrics, facilitator } = setup(exactEvm(world.adapterConfig({ receiptTimeoutMs: 300, rebroadcastIntervalMs: 0 })))
    const signer = world.signers[0]!.address
    const payer = await world.newPayer()
    const requirements = world.requirementsV2({ amount: '100' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const body = { x402Version: 2, paymentPayload, paymentRequirements: requirements }
    const before = await gasMoney(signer)
    await world.node.testClient.setAutomine(false)
    let first
    try {
      first = await facilitator.settle(body)
      expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending' })
      await world.node.testClient.mine({ blocks: 1 })
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    const second = await facilitator.settle(body)
    expect(second).toMatchObject({ success: true, transaction: first.transaction })
    await facilitator.drain()
    const spent = before - (await gasMoney(signer))
    expect(spent).toBeGreaterThan(0n)
    expect((await rowsOf(ledger)).map((row) => [row.status, row.resumed, row.cost])).toEqual([
      ['pending', false, null],
      ['settled', true, spent.toString()],
    ])
    expect(await counted(metrics, 'eip155:84532', 'landed')).toBe(Number(spent))
    metrics.close()
  })
})

describe('the cost of an EVM receipt', () => {
  it('is gas used × effective gas price, plus the L1 data fee an OP-stack chain (Base) states; unknown without the first two', () => {
    // Fields of a Base mainnet receipt of a USDC transferWithAuthorization (anvil states no l1Fee, even in optimism mode).
    const base = { status: '0x1', blockNumber: '0x1a2b3c4', gasUsed: '0x1482d', effectiveGasPrice: '0x5f5e100', l1Fee: '0x2d79883d2000' }
    expect(receiptCost(base)).toBe(0x1482dn * 0x5f5e100n + 0x2d79883d2000n)
    expect(receiptCost({ ...base, l1Fee: null })).toBe(0x1482dn * 0x5f5e100n)
    expect(receiptCost({ status: '0x1', blockNumber: '0x1' })).toBeUndefined()
    expect(receiptCost({ ...base, effectiveGasPrice: 'not hex' })).toBeUndefined()
  })
})

describe('settlement cost on Solana (LiteSVM), in the SQLite ledger', () => {
  let chain: LiteSvmRpc
  let s: PaymentScenario
  const dir = mkdtempSync(join(tmpdir(), 'x402-cost-'))
  beforeAll(async () => {
    chain = await startSolanaTestRpc()
    s = await createPaymentScenario(chain.svm)
  })
  afterAll(async () => {
    await chain?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  function setup(file: string, wrap: (adapter: SchemeAdapter) => SchemeAdapter = (adapter) => adapter) {
    const store = createSqliteStore({ path: join(dir, file) })
    const metrics = createMetrics()
    const adapter = exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 5_000 })
    const facilitator = createFacilitator({ schemes: [wrap(adapter)], store, hooks: [createLedgerRecorder({ ledger: store.ledger }), metrics.hooks] })
    return { store, metrics, facilitator }
  }

  it('a settled payment records the signature and priority fees in lamports, what the fee payer paid', async () => {
    const { store, metrics, facilitator } = setup('landed.sqlite')
    // A priority fee of 30,000 units at 50,000 micro-lamports: 1,500 lamports.
    const requirements = scenarioRequirements(s, 1_000n)
    const { value: blockhash } = await createSolanaRpc(chain.url).getLatestBlockhash().send()
    const transaction = await buildExactSvmTransaction({
      payer: s.payer, feePayer: s.feePayer.address, mint: s.mint, payTo: s.payTo, amount: 1_000n, decimals: s.decimals, tokenProgram: s.tokenProgram, blockhash,
      computeUnitLimit: 30_000, computeUnitPrice: 50_000n,
    })
    const before = lamportsOf(chain.svm, s.feePayer.address)
    const answer = await facilitator.settle({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements })
    expect(answer).toMatchObject({ success: true })
    await facilitator.drain()
    const spent = before - lamportsOf(chain.svm, s.feePayer.address)
    // Two signatures (fee payer and payer) at 5,000 lamports, plus the priority fee.
    expect(spent).toBe(11_500n)
    expect(await rowsOf(store.ledger)).toMatchObject([{ status: 'settled', transaction: answer.transaction, cost: spent.toString() }])
    expect(await counted(metrics, SOLANA_DEVNET, 'landed')).toBe(Number(spent))
    metrics.close()
    await facilitator.close()
  })

  it('a transaction that fails on chain records the fee it still cost, counted as reverted', async () => {
    // The fault injected: between verify and the send, the payer empties its token account, so the
    // transfer fails on chain (the fee payer pays the fee all the same).
    // Made before the payment (the fixtures' `execute` expires the blockhash the payment will name).
    const elsewhere = await createTokenAccount(chain.svm, { payer: s.authority, owner: s.authority.address, mint: s.mint, tokenProgram: s.tokenProgram })
    const drain = async () => {
      const amount = tokenBalance(chain.svm, s.payerAta)
      // Sent on the current blockhash (`execute` would expire it, and with it the payment's).
      const message = pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(s.payer, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: chain.svm.latestBlockhash() as Blockhash, lastValidBlockHeight: 1_000_000n }, m),
        (m) => appendTransactionMessageInstructions([getTransferCheckedInstruction({ source: s.payerAta, mint: s.mint, destination: elsewhere, authority: s.payer, amount, decimals: s.decimals }, { programAddress: s.tokenProgram })], m),
      )
      expect(chain.svm.sendTransaction(await signTransactionMessageWithSigners(message))).not.toBeInstanceOf(FailedTransactionMetadata)
      expect(tokenBalance(chain.svm, s.payerAta)).toBe(0n)
    }
    const { store, metrics, facilitator } = setup('failed.sqlite', (adapter) => ({ ...adapter, settle: async (ctx, payment, journal, reservation) => (await drain(), adapter.settle(ctx, payment, journal, reservation)) }))
    const body = await scenarioPaymentBody(chain.url, s, 1_000n)
    const before = lamportsOf(chain.svm, s.feePayer.address)
    const answer = await facilitator.settle(body)
    expect(answer).toMatchObject({ success: false, errorReason: 'transaction_failed' })
    await facilitator.drain()
    const spent = before - lamportsOf(chain.svm, s.feePayer.address)
    expect(spent).toBeGreaterThanOrEqual(10_000n)
    expect(await rowsOf(store.ledger)).toMatchObject([{ status: 'failed', errorReason: 'transaction_failed', transaction: answer.transaction, cost: spent.toString() }])
    expect(await counted(metrics, SOLANA_DEVNET, 'reverted')).toBe(Number(spent))
    expect(await counted(metrics, SOLANA_DEVNET, 'landed')).toBe(0)
    metrics.close()
    await facilitator.close()
  })
})
