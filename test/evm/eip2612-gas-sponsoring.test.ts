/**
 * The `eip2612GasSponsoring` extension on anvil: a payer with no Permit2 allowance pays through
 * Permit2 (exact and upto) with an EIP-2612 permit the proxy's `settleWithPermit` runs before the
 * transfer. Real Permit2, our proxies written to the spec, a token with EIP-2612 `permit`; payloads
 * from the official @x402/evm clients (which sign the permit when the 402 declares the extension and
 * the allowance is short), hostile variants signed here.
 */
import { x402Client } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { UptoEvmScheme } from '@x402/evm/upto/client'
import { decodeFunctionData, getAddress, parseEventLogs, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCatalog } from '../../src/catalog/index.js'
import { createFacilitator, createMemoryStore, REJECTION } from '../../src/index.js'
import { createHandler } from '../../src/http/index.js'
import {
  EIP2612_GAS_SPONSORING,
  EIP2612_REJECTION,
  evmSchemes,
  exactPermit2ProxyAbi,
  PERMIT2_ADDRESS,
  PERMIT2_REJECTION,
  uptoPermit2ProxyAbi,
  X402_EXACT_PERMIT2_PROXY,
  X402_UPTO_PERMIT2_PROXY,
} from '../../src/evm/index.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import { isRecord } from '../../src/schemas/parse-request.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { deployTestToken, tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { requestsDuring, startFaultProxy } from '../support/fault-proxy.js'
import { approvePermit2, installPermit2, newPermit2Payer, signEip2612Permit, type Eip2612PermitInfo } from '../support/permit2-contracts.js'

let world: EvmFixture
let facilitator: ReturnType<typeof createFacilitator>
let facilitatorAddress: string

const MAX_SETTLEMENT_GAS = 300_000n
const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirementsV2) => ({ x402Version: 2, paymentPayload, paymentRequirements })
const now = () => Math.floor(Date.now() / 1000)

/** The 402's extension declaration, in the shape of @x402/extensions' declareEip2612GasSponsoringExtension(). */
const declared = {
  [EIP2612_GAS_SPONSORING]: {
    info: { description: 'The facilitator accepts EIP-2612 gasless Permit to `Permit2` canonical contract.', version: '1' },
    schema: { type: 'object', required: ['from', 'asset', 'spender', 'amount', 'nonce', 'deadline', 'signature', 'version'] },
  },
}

function exactRequirements(): PaymentRequirementsV2 {
  return world.requirementsV2({ extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' } })
}

function uptoRequirements(): PaymentRequirementsV2 {
  return world.requirementsV2({ scheme: 'upto', amount: '5000', extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2', facilitatorAddress } })
}

/** A payer holding `amount` of the token and gas money, with no allowance to Permit2 unless told. */
const payerWith = (options: { amount?: bigint; approve?: bigint } = {}): Promise<LocalAccount> => newPermit2Payer(world, { ...options, approve: options.approve ?? 0n })

/** A payload of the official client for a 402 that declares `extensions` (it reads the allowance and the token nonce over RPC). */
async function officialPayload(payer: LocalAccount, requirements: PaymentRequirementsV2, extensions: Record<string, unknown> = declared): Promise<PaymentPayload> {
  const scheme = requirements.scheme === 'upto' ? new UptoEvmScheme(payer, { rpcUrl: world.node.rpcUrl }) : new ExactEvmScheme(payer, { rpcUrl: world.node.rpcUrl })
  const client = new x402Client().setSpendControls(false).register('eip155:84532', scheme)
  return (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://example.test/paid', description: 'paid', mimeType: 'application/json' },
    accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }],
    extensions,
  })) as PaymentPayload
}

type PermitInfo = Eip2612PermitInfo & { [other: string]: unknown }

function infoOf(payload: PaymentPayload): PermitInfo {
  const extensions = 'extensions' in payload && isRecord(payload.extensions) ? payload.extensions : undefined
  const info = (extensions?.[EIP2612_GAS_SPONSORING] as { info?: PermitInfo } | undefined)?.info
  if (!info) throw new Error('the payload carries no eip2612GasSponsoring info')
  return info
}

const signPermit = (signer: LocalAccount, fields: PermitInfo) => signEip2612Permit(world, signer, fields)

/** The official payload with its permit's fields changed and signed again by `signer` (the payer by default); `raw` skips re-signing. */
async function withPermit(base: PaymentPayload, signer: LocalAccount, change: (info: PermitInfo) => PermitInfo, raw = false): Promise<PaymentPayload> {
  const info = change(structuredClone(infoOf(base)))
  const signature = raw ? info.signature : await signPermit(signer, info)
  const extensions = (base as { extensions: Record<string, unknown> }).extensions
  return { ...base, extensions: { ...extensions, [EIP2612_GAS_SPONSORING]: { info: { ...info, signature } } } } as PaymentPayload
}

const allowance = (owner: Hex) => world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'allowance', args: [owner, PERMIT2_ADDRESS] }) as Promise<bigint>
const tokenNonce = (owner: Hex) => world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'nonces', args: [owner] }) as Promise<bigint>

/** Transactions the facilitator's signers sent (pending included): unchanged means nothing was sent. */
const sentByFacilitator = async () => {
  const counts = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
  return counts.reduce((a, b) => a + b, 0)
}

/** The settlement transaction: its decoded proxy call, its Transfer events, its gas limit and use. */
async function landed(hash: string, abi: typeof exactPermit2ProxyAbi | typeof uptoPermit2ProxyAbi) {
  const [tx, receipt] = await Promise.all([world.node.publicClient.getTransaction({ hash: hash as Hex }), world.node.publicClient.getTransactionReceipt({ hash: hash as Hex })])
  return {
    to: tx.to,
    from: tx.from,
    call: decodeFunctionData({ abi, data: tx.input }),
    transfers: parseEventLogs({ abi: world.token.abi, logs: receipt.logs, eventName: 'Transfer' }),
    gas: tx.gas,
    gasUsed: receipt.gasUsed,
  }
}

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  facilitator = createFacilitator({ schemes: evmSchemes(world.adapterConfig({ maxSettlementGas: MAX_SETTLEMENT_GAS })) })
  await world.warmUp(facilitator)
  const kind = (await facilitator.supported()).kinds.find((k) => k.scheme === 'upto')
  facilitatorAddress = (kind?.extra as { facilitatorAddress: string }).facilitatorAddress
}, 120_000)
afterAll(async () => world?.stop())

describe('eip2612GasSponsoring: exact through Permit2', () => {
  it('a payer with no Permit2 allowance pays with the official client\'s permit: settleWithPermit moves exactly the amount, once', async () => {
    const payer = await payerWith()
    expect(await allowance(payer.address)).toBe(0n)
    const requirements = exactRequirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const info = infoOf(paymentPayload)
    // What the official client signed: a permit of exactly the amount to Permit2, over the Permit2 deadline.
    expect(info).toMatchObject({ from: payer.address, asset: getAddress(world.token.address), spender: PERMIT2_ADDRESS, amount: '1000', nonce: '0', version: '1' })
    expect(info.deadline).toBe((paymentPayload.payload as { permit2Authorization: { deadline: string } }).permit2Authorization.deadline)

    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'eip155:84532', payer: payer.address })

    const tx = await landed(answer.transaction, exactPermit2ProxyAbi)
    expect(tx.to?.toLowerCase()).toBe(X402_EXACT_PERMIT2_PROXY.toLowerCase())
    expect(tx.call.functionName).toBe('settleWithPermit')
    expect(tx.call.args[0]).toMatchObject({ value: 1000n, deadline: BigInt(info.deadline) })
    expect(tx.transfers).toHaveLength(1)
    expect(tx.transfers[0]!.args).toMatchObject({ from: payer.address, to: world.payTo, value: 1000n })
    // Bounded as every settlement: the limit sent never above maxSettlementGas.
    expect(tx.gas).toBeLessThanOrEqual(MAX_SETTLEMENT_GAS)
    expect(tx.gasUsed).toBeLessThan(tx.gas)
    console.info(`[measure] exact settleWithPermit (permit + Permit2 transfer): gas used ${tx.gasUsed}, limit sent ${tx.gas}`)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1000n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
    // The permit ran (nonce spent) and the transfer used what it granted.
    expect(await tokenNonce(payer.address)).toBe(1n)
    expect(await allowance(payer.address)).toBe(0n)

    // A retry of the same payment learns how it landed; nothing is sent again.
    const again = await facilitator.settle(body(paymentPayload, requirements))
    expect(again).toEqual(answer)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1000n)
  })

  it('a payer whose allowance is enough: no permit from the official client (the declaration alone is ignored), and a permit it sends anyway is not run', async () => {
    const payer = await payerWith({ approve: 2n ** 256n - 1n })
    const requirements = exactRequirements()
    const plain = await officialPayload(payer, requirements)
    // The client merged the 402's declaration into the payload but signed nothing.
    expect(infoOf(plain)).not.toHaveProperty('signature')
    expect(await facilitator.verify(body(plain, requirements))).toEqual({ isValid: true, payer: payer.address })
    const first = await facilitator.settle(body(plain, requirements))
    expect(first).toMatchObject({ success: true })
    const plainTx = await landed(first.transaction, exactPermit2ProxyAbi)
    expect(plainTx.call.functionName).toBe('settle')
    console.info(`[measure] exact settle without a permit: gas used ${plainTx.gasUsed}, limit sent ${plainTx.gas}`)

    // A permit the allowance makes unneeded, stale (nonce 7) or current (nonce 0): settle sends plain `settle`, so the
    // permit never sets the allowance down to its value under another payment verified against the larger one.
    for (const nonce of ['7', '0']) {
      const base = await officialPayload(payer, requirements)
      const signed = await withPermit(
        { ...base, extensions: { [EIP2612_GAS_SPONSORING]: { info: { from: payer.address, asset: world.token.address, spender: PERMIT2_ADDRESS, amount: '1000', nonce, deadline: String(now() + 300), signature: '0x', version: '1' } } } } as PaymentPayload,
        payer,
        (info) => info,
      )
      expect(await facilitator.verify(body(signed, requirements))).toEqual({ isValid: true, payer: payer.address })
      const allowanceBefore = await allowance(payer.address)
      const settled = await facilitator.settle(body(signed, requirements))
      expect(settled).toMatchObject({ success: true })
      const tx = await landed(settled.transaction, exactPermit2ProxyAbi)
      expect(tx.call.functionName).toBe('settle')
      expect(tx.transfers).toHaveLength(1)
      expect(await allowance(payer.address)).toBeGreaterThanOrEqual(allowanceBefore - 1000n)
    }
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 3000n)
    // The permit was never run: the token nonce is untouched.
    expect(await tokenNonce(payer.address)).toBe(0n)
  })

  it('a permit the allowance makes unneeded cannot lower the allowance under a payment racing it: both land', async () => {
    const payer = await payerWith({ approve: 100_000n })
    const requirements = exactRequirements()
    const plain = await officialPayload(payer, requirements)
    const base = await officialPayload(payer, requirements)
    // A permit of exactly the amount with the current token nonce: run, it would set the allowance to 1000, then 0.
    const withSmallPermit = await withPermit(
      { ...base, extensions: { [EIP2612_GAS_SPONSORING]: { info: { from: payer.address, asset: world.token.address, spender: PERMIT2_ADDRESS, amount: '1000', nonce: '0', deadline: String(now() + 300), signature: '0x', version: '1' } } } } as PaymentPayload,
      payer,
      (info) => info,
    )
    const answers = await Promise.all([facilitator.settle(body(withSmallPermit, requirements)), facilitator.settle(body(plain, requirements))])
    expect(answers.map((a) => a.success)).toEqual([true, true])
    expect(await allowance(payer.address)).toBe(100_000n - 2000n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 2000n)
  })

  it('refuses each hostile permit with its own code before anything is sent', async () => {
    const payer = await payerWith()
    const stranger = privateKeyToAccount(generatePrivateKey())
    const other = await deployTestToken(world.node)
    const requirements = exactRequirements()
    const base = await officialPayload(payer, requirements)
    const cases: [string, Promise<PaymentPayload>][] = [
      [EIP2612_REJECTION.invalidFormat, withPermit(base, payer, (i) => ({ ...i, signature: i.signature.slice(0, 130) }), true)],
      [EIP2612_REJECTION.invalidFormat, withPermit(base, payer, (i) => ({ ...i, amount: '1e3' }), true)],
      [EIP2612_REJECTION.invalidFormat, withPermit(base, payer, (i) => ({ ...i, version: '2' }))],
      [EIP2612_REJECTION.invalidFormat, withPermit(base, payer, ({ deadline: _, ...i }) => i as PermitInfo, true)],
      [EIP2612_REJECTION.invalidFormat, withPermit(base, payer, (i) => ({ ...i, from: 'nobody' }), true)],
      [EIP2612_REJECTION.fromMismatch, withPermit(base, stranger, (i) => ({ ...i, from: stranger.address }))],
      [EIP2612_REJECTION.assetMismatch, withPermit(base, payer, (i) => ({ ...i, asset: other.address }))],
      [EIP2612_REJECTION.spenderNotPermit2, withPermit(base, payer, (i) => ({ ...i, spender: X402_EXACT_PERMIT2_PROXY }))],
      [EIP2612_REJECTION.deadlineExpired, withPermit(base, payer, (i) => ({ ...i, deadline: String(now() - 1) }))],
      [EIP2612_REJECTION.deadlineExpired, withPermit(base, payer, (i) => ({ ...i, deadline: String(now() + 2) }))],
      [EIP2612_REJECTION.amountMismatch, withPermit(base, payer, (i) => ({ ...i, amount: '999' }))],
      [EIP2612_REJECTION.amountMismatch, withPermit(base, payer, (i) => ({ ...i, amount: (2n ** 256n - 1n).toString() }))],
      // Well-formed but useless to the token: the simulation (which runs the permit) fails, and the reads say why.
      [PERMIT2_REJECTION.allowanceRequired, withPermit(base, stranger, (i) => i)],
      [PERMIT2_REJECTION.allowanceRequired, withPermit(base, payer, (i) => ({ ...i, nonce: '1' }))],
    ]
    const sent = await sentByFacilitator()
    for (const [code, pending] of cases) {
      const paymentPayload = await pending
      const verdict = await facilitator.verify(body(paymentPayload, requirements))
      expect(verdict, code).toMatchObject({ isValid: false, invalidReason: code, invalidMessage: expect.any(String), payer: payer.address })
      expect(await facilitator.settle(body(paymentPayload, requirements)), code).toMatchObject({ success: false, errorReason: code, transaction: '' })
    }
    expect(await sentByFacilitator()).toBe(sent)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n)
    expect(await tokenNonce(payer.address)).toBe(0n)
    // The messages say what the permit lacks.
    expect((await facilitator.verify(body(await cases[12]![1], requirements))).invalidMessage).toContain('refused the permit')
    expect((await facilitator.verify(body(await cases[13]![1], requirements))).invalidMessage).toContain('signed for token nonce 1')
  })

  it('refuses a signed erc20ApprovalGasSponsoring transaction of the official client, and never broadcasts it', async () => {
    const payer = await payerWith()
    const requirements = exactRequirements()
    const paymentPayload = await officialPayload(payer, requirements, { erc20ApprovalGasSponsoring: { info: { description: 'approve', version: '1' }, schema: {} } })
    expect(paymentPayload.extensions).toHaveProperty('erc20ApprovalGasSponsoring.info.signedTransaction', expect.stringMatching(/^0x/))
    const sent = await sentByFacilitator()
    const verdict = await facilitator.verify(body(paymentPayload, requirements))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: PERMIT2_REJECTION.erc20ApprovalNotSupported, invalidMessage: expect.stringContaining('erc20ApprovalGasSponsoring') })
    expect(await facilitator.settle(body(paymentPayload, requirements))).toMatchObject({ success: false, errorReason: 'erc20_approval_gas_sponsoring_not_supported', transaction: '' })
    expect(await sentByFacilitator()).toBe(sent)
    // The payer's own approve was not broadcast either.
    expect(await world.node.publicClient.getTransactionCount({ address: payer.address })).toBe(0)
    expect(await allowance(payer.address)).toBe(0n)
    // The declaration alone (a payer with allowance, echoed from the 402) asks for nothing and passes.
    await approvePermit2(world.node, world.token, payer, 1000n)
    const echoed = { ...(await officialPayload(payer, requirements)), extensions: { erc20ApprovalGasSponsoring: { info: { description: 'approve', version: '1' }, schema: {} } } } as PaymentPayload
    expect(await facilitator.verify(body(echoed, requirements))).toEqual({ isValid: true, payer: payer.address })
  })

  it('verifies a payment with a permit in one HTTP round trip to the node (reads and the eth_call of settleWithPermit at maxSettlementGas, batched); settle sends that very call without simulating it again', async () => {
    const proxy = await startFaultProxy(world.node.rpcUrl)
    try {
      const counted = createFacilitator({
        schemes: evmSchemes(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset] }], maxSettlementGas: MAX_SETTLEMENT_GAS, feeCacheMs: 600_000 })),
      })
      const requirements = exactRequirements()
      // The first verify of an adapter reads its fee quote; the next ones use it.
      await counted.verify(body(await officialPayload(await payerWith(), requirements), requirements))
      const payer = await payerWith()
      const paymentPayload = await officialPayload(payer, requirements)
      const { result: verified, requests, elapsedMs: elapsed } = await requestsDuring(proxy, () => counted.verify(body(paymentPayload, requirements)))
      expect(verified).toEqual({ isValid: true, payer: payer.address })
      expect(requests).toHaveLength(1)
      // One batch: the Multicall3 reads (with the token's nonces) and the proxy's settleWithPermit at the cap, no estimate.
      expect(requests[0]!.map((call) => call.method)).toEqual(['eth_call', 'eth_call'])
      const simulated = requests[0]!.map((call) => (call.params as [{ to: string; gas: string; data: Hex }])[0]).find((tx) => tx.to.toLowerCase() === X402_EXACT_PERMIT2_PROXY.toLowerCase())
      expect(simulated?.gas).toBe(`0x${MAX_SETTLEMENT_GAS.toString(16)}`)
      expect(decodeFunctionData({ abi: exactPermit2ProxyAbi, data: simulated!.data }).functionName).toBe('settleWithPermit')
      console.info(`[measure] valid Permit2 verify with an EIP-2612 permit: 1 HTTP request (2 eth_call batched), ${elapsed.toFixed(1)} ms`)
      // Settle sends exactly the call verify ran, with that limit, and does not simulate it again.
      const { result: settled, requests: settleRequests } = await requestsDuring(proxy, () => counted.settle(body(paymentPayload, requirements)))
      expect(settled).toMatchObject({ success: true, payer: payer.address })
      const settleMethods = settleRequests.flat().map((call) => call.method)
      expect(settleMethods.filter((method) => method === 'eth_call')).toHaveLength(2)
      expect(settleMethods).not.toContain('eth_estimateGas')
      const tx = await landed(settled.transaction, exactPermit2ProxyAbi)
      expect(tx.call.functionName).toBe('settleWithPermit')
      expect(tx.gas).toBe(MAX_SETTLEMENT_GAS)
      const sent = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
      expect(sent.input.toLowerCase()).toBe(simulated!.data.toLowerCase())
      await counted.close()
    } finally {
      await proxy.close()
    }
  })

  it('two payments racing on one permit nonce: one lands, the other is refused unsent (the hold counts the allowance the permit grants)', async () => {
    const payer = await payerWith({ amount: 5000n })
    const requirements = exactRequirements()
    // Both signed before either settled: the same token nonce 0.
    const [one, two] = [await officialPayload(payer, requirements), await officialPayload(payer, requirements)]
    expect(infoOf(one).nonce).toBe('0')
    expect(infoOf(two).nonce).toBe('0')
    const sent = await sentByFacilitator()
    const answers = await Promise.all([facilitator.settle(body(one, requirements)), facilitator.settle(body(two, requirements))])
    expect(answers.filter((a) => a.success)).toHaveLength(1)
    expect(answers.find((a) => !a.success)).toMatchObject({ success: false, transaction: '' })
    expect(await sentByFacilitator()).toBe(sent + 1)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(4000n)
  })
})

describe('eip2612GasSponsoring: upto', () => {
  it('a payer with no allowance authorizes a maximum with a permit of it; settle charges the usage through settleWithPermit', async () => {
    const payer = await payerWith()
    const requirements = uptoRequirements()
    const paymentPayload = await officialPayload(payer, requirements)
    expect(infoOf(paymentPayload)).toMatchObject({ from: payer.address, spender: PERMIT2_ADDRESS, amount: '5000', nonce: '0' })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, { ...requirements, amount: '1234' }))
    expect(answer).toMatchObject({ success: true, amount: '1234', payer: payer.address })
    const tx = await landed(answer.transaction, uptoPermit2ProxyAbi)
    expect(tx.to?.toLowerCase()).toBe(X402_UPTO_PERMIT2_PROXY.toLowerCase())
    expect(tx.from.toLowerCase()).toBe(facilitatorAddress.toLowerCase())
    expect(tx.call.functionName).toBe('settleWithPermit')
    expect(tx.call.args[0]).toMatchObject({ value: 5000n })
    expect(tx.call.args[2]).toBe(1234n)
    expect(tx.transfers).toHaveLength(1)
    expect(tx.gas).toBeLessThanOrEqual(MAX_SETTLEMENT_GAS)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1234n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1234n)
    // The permit granted the maximum; the usage was taken from it.
    expect(await allowance(payer.address)).toBe(5000n - 1234n)
    expect(await facilitator.settle(body(paymentPayload, { ...requirements, amount: '1234' }))).toEqual(answer)
    // Another usage of the spent permit is another payment: refused, naming the settlement.
    expect(await facilitator.settle(body(paymentPayload, { ...requirements, amount: '4000' }))).toMatchObject({ success: false, errorReason: REJECTION.duplicateSettlement, transaction: answer.transaction })
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1234n)
  })

  it('a permit the allowance makes unneeded on upto: settle sends plain settle with the usage, the permit not run', async () => {
    const payer = await payerWith({ approve: 100_000n })
    const requirements = uptoRequirements()
    const base = await officialPayload(payer, requirements, {})
    // A permit of the maximum with the current token nonce: run, it would set the allowance down to 5000.
    const signed = await withPermit(
      { ...base, extensions: { [EIP2612_GAS_SPONSORING]: { info: { from: payer.address, asset: world.token.address, spender: PERMIT2_ADDRESS, amount: '5000', nonce: '0', deadline: String(now() + 300), signature: '0x', version: '1' } } } } as PaymentPayload,
      payer,
      (info) => info,
    )
    expect(await facilitator.verify(body(signed, requirements))).toEqual({ isValid: true, payer: payer.address })
    const answer = await facilitator.settle(body(signed, { ...requirements, amount: '1234' }))
    expect(answer).toMatchObject({ success: true, amount: '1234' })
    const tx = await landed(answer.transaction, uptoPermit2ProxyAbi)
    expect(tx.call.functionName).toBe('settle')
    expect(tx.call.args[1]).toBe(1234n)
    expect(tx.transfers).toHaveLength(1)
    expect(await allowance(payer.address)).toBe(100_000n - 1234n)
    expect(await tokenNonce(payer.address)).toBe(0n)
  })

  it('refuses hostile permits on upto before anything is sent', async () => {
    const payer = await payerWith()
    const requirements = uptoRequirements()
    const base = await officialPayload(payer, requirements)
    const cases: [string, Promise<PaymentPayload>][] = [
      // The permit must grant the maximum (the proxy compares it with permitted.amount), not the usage.
      [EIP2612_REJECTION.amountMismatch, withPermit(base, payer, (i) => ({ ...i, amount: '1234' }))],
      [EIP2612_REJECTION.spenderNotPermit2, withPermit(base, payer, (i) => ({ ...i, spender: X402_UPTO_PERMIT2_PROXY }))],
      [EIP2612_REJECTION.deadlineExpired, withPermit(base, payer, (i) => ({ ...i, deadline: String(now() - 60) }))],
      [EIP2612_REJECTION.invalidFormat, withPermit(base, payer, (i) => ({ ...i, signature: `${i.signature}00` }), true)],
      // Upto refuses a signed approval transaction as exact does.
      [
        PERMIT2_REJECTION.erc20ApprovalNotSupported,
        Promise.resolve({
          ...base,
          extensions: { erc20ApprovalGasSponsoring: { info: { from: payer.address, asset: world.token.address, spender: PERMIT2_ADDRESS, amount: '5000', signedTransaction: '0x02f8', version: '1' } } },
        } as PaymentPayload),
      ],
    ]
    const sent = await sentByFacilitator()
    for (const [code, pending] of cases) {
      const paymentPayload = await pending
      expect(await facilitator.verify(body(paymentPayload, requirements)), code).toMatchObject({ isValid: false, invalidReason: code })
      expect(await facilitator.settle(body(paymentPayload, { ...requirements, amount: '1000' })), code).toMatchObject({ success: false, errorReason: code, transaction: '', amount: '0' })
    }
    expect(await sentByFacilitator()).toBe(sent)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n)
  })
})

describe('GET /supported lists the extensions honoured', () => {
  it('eip2612GasSponsoring with the EVM adapters, bazaar with the catalog hooks; kinds for v1 clients unchanged', async () => {
    expect((await facilitator.supported()).extensions).toEqual([EIP2612_GAS_SPONSORING])
    const store = createMemoryStore()
    const catalog = createCatalog({ store })
    const withCatalog = createFacilitator({ schemes: evmSchemes(world.adapterConfig()), store, hooks: [catalog.hooks] })
    const response = await createHandler(withCatalog)(new Request('http://facilitator.test/supported'))
    expect(response.status).toBe(200)
    const supported = (await response.json()) as { kinds: { x402Version: number; scheme: string; network: string }[]; extensions: string[]; signers: Record<string, string[]> }
    // Each name once, at the top level, as @x402/core's v2 SupportedResponse has it.
    expect(supported.extensions).toEqual([EIP2612_GAS_SPONSORING, 'bazaar'])
    expect(supported.kinds).toContainEqual({ x402Version: 1, scheme: 'exact', network: 'base-sepolia' })
    expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: 'exact', network: 'eip155:84532' })
  })
})
