/**
 * `exact` through Permit2 on anvil: the real Permit2 (compiled from Uniswap's sources) and our x402
 * exact proxy at their canonical addresses, payloads from the official @x402/evm client, hostile
 * variants signed here.
 */
import { x402Client } from '@x402/core/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { encodeFunctionData, parseEventLogs, parseSignature, serializeCompactSignature, serializeErc6492Signature, signatureToCompactSignature, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator, REJECTION, type BroadcastRecord } from '../../src/index.js'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import type { SchemeAdapter } from '../../src/core/adapter.js'
import { noJournal, resumeDirectly, settleDirectly, verifyDirectly } from '../support/adapter-steps.js'
import { exactEvm, PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from '../../src/evm/index.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { deployTestToken, fundPayer, tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { requestsDuring, startFaultProxy } from '../support/fault-proxy.js'
import { approvePermit2, installPermit2, newPermit2Payer, signPermit2Authorization, type Permit2AuthorizationFields } from '../support/permit2-contracts.js'

let world: EvmFixture
let facilitator: ReturnType<typeof createFacilitator>

const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirementsV2) => ({ x402Version: 2, paymentPayload, paymentRequirements })

function permit2Requirements(overrides: Partial<PaymentRequirementsV2> = {}): PaymentRequirementsV2 {
  return world.requirementsV2({ extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2' }, ...overrides })
}

/** A payer holding `amount` of the token, with gas money and (unless told otherwise) Permit2 approved. */
const permit2Payer = (options: { amount?: bigint; approve?: bigint } = {}): Promise<LocalAccount> => newPermit2Payer(world, options)

/** A payload made by the official client for these requirements. */
async function officialPayload(payer: LocalAccount, requirements: PaymentRequirementsV2): Promise<PaymentPayload> {
  const client = new x402Client().setSpendControls(false).register('eip155:84532', new ExactEvmScheme(payer))
  return (await client.createPaymentPayload({ x402Version: 2, resource: { url: 'https://example.test/paid', description: 'paid', mimeType: 'application/json' }, accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }] })) as PaymentPayload
}

type PermitFields = Permit2AuthorizationFields

/** The official payload with some permit fields changed, signed by `signer` (the payer by default). */
async function hostile(payer: LocalAccount, requirements: PaymentRequirementsV2, change: (fields: PermitFields) => PermitFields, signer: LocalAccount = payer): Promise<PaymentPayload> {
  const base = await officialPayload(payer, requirements)
  const fields = change(structuredClone((base.payload as { permit2Authorization: PermitFields }).permit2Authorization))
  const signature = await signPermit2Authorization(world, signer, fields)
  return { ...base, payload: { signature, permit2Authorization: fields } }
}

const now = () => Math.floor(Date.now() / 1000)

/**
 * A Permit2 payment of a counterfactual wallet (the fixture's factory; its owner signs), the signature
 * in an ERC-6492 envelope naming `factory`. With `deploy`, the wallet is deployed through the factory
 * first and approves Permit2 (sent as the wallet by anvil's impersonation: the test wallet has no
 * execute function); it holds 1,000,000 of the token either way.
 */
async function counterfactualPermit2Payment(options: { factory?: Hex; deploy?: boolean } = {}) {
  const owner = privateKeyToAccount(generatePrivateKey())
  const salt = generatePrivateKey()
  const wallet = await world.factory.walletAddress(owner.address, salt)
  const deployCalldata = world.factory.deployCalldata(owner.address, salt)
  await fundPayer(world.node, world.token, wallet, 1_000_000n)
  if (options.deploy) {
    const hash = await world.node.walletClient().sendTransaction({ account: world.node.accounts[0]!, chain: world.node.chain, to: world.factory.address, data: deployCalldata })
    await world.node.publicClient.waitForTransactionReceipt({ hash })
    await world.node.testClient.setBalance({ address: wallet, value: 10n ** 18n })
    await world.node.testClient.impersonateAccount({ address: wallet })
    const approve = encodeFunctionData({ abi: world.token.abi, functionName: 'approve', args: [PERMIT2_ADDRESS, 2n ** 256n - 1n] })
    const approved = await world.node.walletClient().sendTransaction({ account: wallet, chain: world.node.chain, to: world.token.address, data: approve })
    await world.node.publicClient.waitForTransactionReceipt({ hash: approved })
    await world.node.testClient.stopImpersonatingAccount({ address: wallet })
  }
  const requirements = permit2Requirements()
  const official = await officialPayload({ ...owner, address: wallet }, requirements)
  const inner = (official.payload as { signature: Hex }).signature
  const signature = serializeErc6492Signature({ address: options.factory ?? world.factory.address, data: deployCalldata, signature: inner })
  return { wallet, inner, requirements, paymentPayload: { ...official, payload: { ...(official.payload as object), signature } } as PaymentPayload }
}

/** The context the core would hand the adapter, to drive settle/resume directly. */
function contextOf(adapter: SchemeAdapter, paymentPayload: PaymentPayload, requirements: PaymentRequirementsV2) {
  const parsed = parsePaymentRequest(body(paymentPayload, requirements))
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(createRegistry([adapter]), parsed.request, AbortSignal.timeout(30_000))
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  return routed.context
}

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig())] })
  await world.warmUp(facilitator)
}, 120_000)
afterAll(async () => world?.stop())

describe('exactEvm: exact through Permit2', () => {
  it('verifies and settles a payload of the official client: the proxy moves exactly the amount to payTo, once', async () => {
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
    expect(paymentPayload.payload).toHaveProperty('permit2Authorization.spender', X402_EXACT_PERMIT2_PROXY)
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'eip155:84532', payer: payer.address })
    const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
    expect(tx.to?.toLowerCase()).toBe(X402_EXACT_PERMIT2_PROXY.toLowerCase())
    expect(world.signers.map((s) => s.address.toLowerCase())).toContain(tx.from.toLowerCase())
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1000n)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
    // The nonce is spent now: its own code, and a repeated settle sends nothing (it learns how it landed).
    expect(await facilitator.verify(body(paymentPayload, requirements))).toMatchObject({ isValid: false, invalidReason: 'permit2_nonce_already_used', payer: payer.address })
    const again = await facilitator.settle(body(paymentPayload, requirements))
    expect(again).toEqual(answer)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1000n)
  })

  it('settles racing and repeated settles of one permit exactly once (key: chain, owner, Permit2 nonce)', async () => {
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answers = await Promise.all(Array.from({ length: 8 }, () => facilitator.settle(body(paymentPayload, requirements))))
    const landed = answers.filter((a) => a.success)
    // Every caller of the one payment learns the one transaction.
    expect(landed).toHaveLength(8)
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(1)
    const repeat = await facilitator.settle(body(paymentPayload, requirements))
    expect(repeat).toEqual(landed[0])
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1000n)
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: landed[0]!.transaction as Hex })
    expect(parseEventLogs({ abi: world.token.abi, logs: receipt.logs, eventName: 'Transfer' })).toHaveLength(1)
  })

  it('refuses each hostile variant with its own code, and settles none of them (nothing sent)', async () => {
    const payer = await permit2Payer()
    const stranger = privateKeyToAccount(generatePrivateKey())
    const other = await deployTestToken(world.node)
    const requirements = permit2Requirements()
    const cases: [string, Promise<PaymentPayload>][] = [
      ['invalid_permit2_spender', hostile(payer, requirements, (f) => ({ ...f, spender: world.payTo }))],
      ['invalid_permit2_recipient_mismatch', hostile(payer, requirements, (f) => ({ ...f, witness: { ...f.witness, to: stranger.address } }))],
      ['permit2_amount_mismatch', hostile(payer, requirements, (f) => ({ ...f, permitted: { ...f.permitted, amount: '999' } }))],
      ['permit2_amount_mismatch', hostile(payer, requirements, (f) => ({ ...f, permitted: { ...f.permitted, amount: '1001' } }))],
      ['permit2_token_mismatch', hostile(payer, requirements, (f) => ({ ...f, permitted: { ...f.permitted, token: other.address } }))],
      ['permit2_deadline_expired', hostile(payer, requirements, (f) => ({ ...f, deadline: String(now() - 1) }))],
      ['permit2_deadline_expired', hostile(payer, requirements, (f) => ({ ...f, deadline: String(now() + 2) }))],
      ['permit2_not_yet_valid', hostile(payer, requirements, (f) => ({ ...f, witness: { ...f.witness, validAfter: String(now() + 600) } }))],
      ['invalid_permit2_signature', hostile(payer, requirements, (f) => f, stranger)],
    ]
    const nonces = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))
    for (const [code, pending] of cases) {
      const paymentPayload = await pending
      const verdict = await facilitator.verify(body(paymentPayload, requirements))
      expect(verdict, code).toMatchObject({ isValid: false, invalidReason: code, invalidMessage: expect.any(String), payer: payer.address })
      const settled = await facilitator.settle(body(paymentPayload, requirements))
      expect(settled, code).toMatchObject({ success: false, transaction: '' })
    }
    expect(await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address })))).toEqual(nonces)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n)
  })

  it('accepts a 64-byte compact (EIP-2098) signature of a plain account, as Permit2 does: verified offline, settled with those bytes', async () => {
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const official = await officialPayload(payer, requirements)
    const compact = (signature: Hex) => serializeCompactSignature(signatureToCompactSignature(parseSignature(signature)))
    const signature = compact((official.payload as { signature: Hex }).signature)
    expect(signature).toHaveLength(2 + 128)
    const paymentPayload = { ...official, payload: { ...(official.payload as object), signature } } as PaymentPayload
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    const before = await tokenBalance(world.node, world.token, world.payTo)
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toMatchObject({ success: true, payer: payer.address })
    const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
    expect(tx.input.toLowerCase()).toContain(signature.slice(2).toLowerCase())
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(before + 1000n)
    // A compact signature of another key is no proof: refused, nothing sent.
    const stranger = privateKeyToAccount(generatePrivateKey())
    const forged = await hostile(payer, requirements, (f) => f, stranger)
    const forgedCompact = { ...forged, payload: { ...(forged.payload as object), signature: compact((forged.payload as { signature: Hex }).signature) } } as PaymentPayload
    expect(await facilitator.verify(body(forgedCompact, requirements))).toMatchObject({ isValid: false, invalidReason: 'invalid_permit2_signature' })
  })

  it('ERC-6492: a counterfactual wallet is refused clearly (it cannot have approved Permit2), a factory outside the allow-list as for EIP-3009; nothing sent', async () => {
    const { wallet, paymentPayload, requirements } = await counterfactualPermit2Payment()
    const nonces = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
    expect(await facilitator.verify(body(paymentPayload, requirements))).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_payload_undeployed_smart_wallet',
      invalidMessage: expect.stringContaining('cannot have approved Permit2'),
      payer: wallet,
    })
    expect(await facilitator.settle(body(paymentPayload, requirements))).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_payload_undeployed_smart_wallet', transaction: '' })
    const elsewhere = await counterfactualPermit2Payment({ factory: world.payTo })
    expect(await facilitator.verify(body(elsewhere.paymentPayload, elsewhere.requirements))).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_payload_eip6492_factory_not_allowed' })
    expect(await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))).toEqual(nonces)
    expect(await world.node.publicClient.getCode({ address: wallet })).toBeUndefined()
  })

  it('ERC-6492 of a wallet deployed already: unwrapped, proven by the wallet (ERC-1271), settled with the inner signature', async () => {
    const { wallet, inner, paymentPayload, requirements } = await counterfactualPermit2Payment({ deploy: true })
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: wallet })
    const answer = await facilitator.settle(body(paymentPayload, requirements))
    expect(answer).toMatchObject({ success: true, payer: wallet })
    const tx = await world.node.publicClient.getTransaction({ hash: answer.transaction as Hex })
    // Permit2 got the owner's signature, which the wallet's isValidSignature checks, not the envelope.
    expect(tx.input.toLowerCase()).toContain(inner.slice(2).toLowerCase())
    expect(tx.input.toLowerCase()).not.toContain('6492649264926492649264926492649264926492649264926492649264926492')
    expect(await tokenBalance(world.node, world.token, wallet)).toBe(1_000_000n - 1000n)
  })

  it('answers permit2_allowance_required for a payer without allowance, permit2_insufficient_balance for one without funds', async () => {
    const requirements = permit2Requirements()
    const unapproved = await permit2Payer({ approve: 0n })
    expect(await facilitator.verify(body(await officialPayload(unapproved, requirements), requirements))).toMatchObject({ isValid: false, invalidReason: 'permit2_allowance_required' })
    const short = await permit2Payer({ approve: 999n })
    expect(await facilitator.verify(body(await officialPayload(short, requirements), requirements))).toMatchObject({ isValid: false, invalidReason: 'permit2_allowance_required' })
    const broke = await permit2Payer({ amount: 10n })
    expect(await facilitator.verify(body(await officialPayload(broke, requirements), requirements))).toMatchObject({ isValid: false, invalidReason: 'permit2_insufficient_balance' })
    // Once approved, the same kind of payment passes.
    await approvePermit2(world.node, world.token, unapproved, 1000n)
    expect(await facilitator.verify(body(await officialPayload(unapproved, requirements), requirements))).toEqual({ isValid: true, payer: unapproved.address })
  })

  it('refuses a signed erc20ApprovalGasSponsoring transaction with its own code, ignores bare extension declarations, and answers a malformed permit as invalid_payload', async () => {
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const base = await officialPayload(payer, requirements)
    const signedApproval = { erc20ApprovalGasSponsoring: { info: { from: payer.address, asset: world.token.address, spender: PERMIT2_ADDRESS, amount: '1', signedTransaction: '0x02f8', version: '1' } } }
    const verdict = await facilitator.verify(body({ ...base, extensions: signedApproval }, requirements))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: 'erc20_approval_gas_sponsoring_not_supported', invalidMessage: expect.stringContaining('erc20ApprovalGasSponsoring') })
    // What a 402 declares is echoed into every payload by the official client: it asks for nothing.
    for (const extension of ['erc20ApprovalGasSponsoring', 'eip2612GasSponsoring']) {
      expect(await facilitator.verify(body({ ...base, extensions: { [extension]: { info: { description: 'declared', version: '1' } } } }, requirements))).toEqual({ isValid: true, payer: payer.address })
    }
    const broken = { ...base, payload: { ...(base.payload as object), permit2Authorization: { from: payer.address } } }
    expect(await facilitator.verify(body(broken, requirements))).toMatchObject({ isValid: false, invalidReason: 'invalid_payload' })
  })

  it('verifies a valid Permit2 payment in one HTTP round trip to the node: the reads and the proxy call run as sent, no estimate', async () => {
    const proxy = await startFaultProxy(world.node.rpcUrl)
    try {
      const counted = createFacilitator({
        schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset] }], feeCacheMs: 600_000 }))],
      })
      const requirements = permit2Requirements()
      // The first verify of an adapter reads its fee quote; the next ones use it.
      await counted.verify(body(await officialPayload(await permit2Payer(), requirements), requirements))
      const payer = await permit2Payer()
      const paymentPayload = await officialPayload(payer, requirements)
      const { result: verified, requests, elapsedMs: elapsed } = await requestsDuring(proxy, () => counted.verify(body(paymentPayload, requirements)))
      expect(verified).toEqual({ isValid: true, payer: payer.address })
      expect(requests).toHaveLength(1)
      // One batch: the Multicall3 reads and the proxy's settle from the signer, with maxSettlementGas as its limit and the fees it will carry.
      expect(requests[0]!.map((call) => call.method)).toEqual(['eth_call', 'eth_call'])
      const proxyCall = requests[0]!.map((call) => (call.params as [{ to: string; gas: string; from: string; maxFeePerGas?: string }])[0]).find((tx) => tx.to.toLowerCase() === X402_EXACT_PERMIT2_PROXY.toLowerCase())
      expect(proxyCall).toMatchObject({ gas: '0x493e0', maxFeePerGas: expect.stringMatching(/^0x[0-9a-f]+$/) })
      expect(world.signers.map((s) => s.address.toLowerCase())).toContain(proxyCall!.from.toLowerCase())
      console.info(`[measure] valid Permit2 verify: 1 HTTP request (2 eth_call batched), ${elapsed.toFixed(1)} ms`)
      // Settle sends it with that limit (unused gas is not paid for: the receipt's gasUsed is far below it). The core's
      // verify right before it ran this very call (signer, fees, calldata, limit): it is not simulated a second time.
      const { result: settled, requests: settleRequests } = await requestsDuring(proxy, () => counted.settle(body(paymentPayload, requirements)))
      expect(settled).toMatchObject({ success: true })
      const settleMethods = settleRequests.flat().map((call) => call.method)
      expect(settleMethods.filter((method) => method === 'eth_call')).toHaveLength(2)
      expect(settleMethods).toContain('eth_sendRawTransaction')
      const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
      const receipt = await world.node.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })
      expect(tx.gas).toBe(300_000n)
      expect(receipt.gasUsed).toBeLessThan(200_000n)
      await counted.close()
    } finally {
      await proxy.close()
    }
  })

  it('a settle long after its verify runs the proxy call again before sending (verify\'s simulation is reused for 2 s only)', async () => {
    const proxy = await startFaultProxy(world.node.rpcUrl)
    try {
      const adapter = exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset] }], feeCacheMs: 600_000 }))
      const requirements = permit2Requirements()
      const payer = await permit2Payer()
      const ctx = contextOf(adapter, await officialPayload(payer, requirements), requirements)
      const verdict = await verifyDirectly(adapter, ctx)
      expect(verdict.response).toMatchObject({ isValid: true })
      await new Promise((resolve) => setTimeout(resolve, 2_100))
      const { result: settled, requests } = await requestsDuring(proxy, () => adapter.settle(ctx, verdict.payment, noJournal))
      expect(settled).toMatchObject({ success: true })
      const proxyCalls = requests.flat().filter((call) => call.method === 'eth_call' && (call.params as [{ to: string }])[0].to.toLowerCase() === X402_EXACT_PERMIT2_PROXY.toLowerCase())
      expect(proxyCalls).toHaveLength(1)
      await adapter.close?.()
    } finally {
      await proxy.close()
    }
  })

  it('refuses a Permit2 payment whose proxy call needs more gas than maxSettlementGas (invalid_exact_evm_settlement_gas_too_high), and sends nothing', async () => {
    // The proxy settle costs about 100k gas here: a cap of 60k is too little for it.
    const capped = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ maxSettlementGas: 60_000n }))] })
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const nonces = await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))
    expect(await capped.verify(body(paymentPayload, requirements))).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_settlement_gas_too_high',
      invalidMessage: expect.stringContaining('60000'),
      payer: payer.address,
    })
    expect(await capped.settle(body(paymentPayload, requirements))).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_settlement_gas_too_high', transaction: '' })
    expect(await Promise.all(world.signers.map((s) => world.node.publicClient.getTransactionCount({ address: s.address, blockTag: 'pending' })))).toEqual(nonces)
    // The same payment passes with the default cap.
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    await capped.close()
  })

  it('answers permit2_nonce_already_used for a permit whose nonce the payer invalidated on Permit2', async () => {
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
    const nonce = BigInt((paymentPayload.payload as { permit2Authorization: PermitFields }).permit2Authorization.nonce)
    const data = encodeFunctionData({
      abi: [{ type: 'function', name: 'invalidateUnorderedNonces', stateMutability: 'nonpayable', inputs: [{ type: 'uint256' }, { type: 'uint256' }], outputs: [] }],
      functionName: 'invalidateUnorderedNonces',
      args: [nonce >> 8n, 1n << (nonce & 0xffn)],
    })
    const hash = await world.node.walletClient(payer).sendTransaction({ account: payer, chain: world.node.chain, to: PERMIT2_ADDRESS, data })
    expect((await world.node.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    expect(await facilitator.verify(body(paymentPayload, requirements))).toMatchObject({ isValid: false, invalidReason: 'permit2_nonce_already_used' })
    expect(await facilitator.settle(body(paymentPayload, requirements))).toMatchObject({ success: false, transaction: '' })
  })

  it('past the receipt bound it answers settlement_pending with the hash; a later settle finishes it', async () => {
    const patient = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ receiptTimeoutMs: 300 }))] })
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
    await world.node.testClient.setAutomine(false)
    let pending
    try {
      pending = await patient.settle(body(paymentPayload, requirements))
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(pending).toMatchObject({ success: false, errorReason: REJECTION.settlementPending, payer: payer.address })
    await world.node.testClient.mine({ blocks: 1 })
    expect(await patient.settle(body(paymentPayload, requirements))).toMatchObject({ success: true, transaction: pending.transaction, payer: payer.address })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
  })

  it('records the transaction before sending it, and resume() sends the recorded bytes after a crash', async () => {
    const adapter = exactEvm(world.adapterConfig())
    const payer = await permit2Payer()
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
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
    const resumed = await resumeDirectly(adapter, contextOf(adapter, paymentPayload, requirements), recorded!)
    expect(resumed).toMatchObject({ success: true, transaction: recorded!.transaction, payer: payer.address })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
  })

  it('holds a verified Permit2 payment against the payer\'s balance (Verdict.spend)', async () => {
    const adapter = exactEvm(world.adapterConfig())
    const payer = await permit2Payer({ amount: 1500n })
    const requirements = permit2Requirements()
    const paymentPayload = await officialPayload(payer, requirements)
    // What verify hands the core to hold: the amount, and the balance it can move (the allowance is unlimited).
    expect((await verifyDirectly(adapter, contextOf(adapter, paymentPayload, requirements))).spend).toEqual({
      account: `84532:${requirements.asset.toLowerCase()}:${payer.address.toLowerCase()}`,
      amount: 1000n,
      balance: 1500n,
    })
    const racing = createFacilitator({ schemes: [adapter] })
    // Two payments of 1000 from a payer holding 1500: both verify alone, only one can land.
    const second = await officialPayload(payer, requirements)
    const answers = await Promise.all([racing.settle(body(paymentPayload, requirements)), racing.settle(body(second, requirements))])
    expect(answers.filter((a) => a.success)).toHaveLength(1)
    expect(answers.find((a) => !a.success)).toMatchObject({ success: false, transaction: '' })
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(500n)
  })
})
