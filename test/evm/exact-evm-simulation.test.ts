/**
 * Security issue #20 on anvil: payments that verify valid only in a simulation must cost the
 * facilitator nothing. Verify's chain check runs as the settlement will (the signer that sends
 * it, the fees it carries, the gas limit it gets); a token outside the known table, and a payer
 * with code, are priced by an estimate of the exact settlement call, capped by maxSettlementGas.
 * Each attack is answered by verify, and settle sends nothing: every signer's ETH balance and
 * nonce stay as they were. The requests a verify sends are read at the fault proxy in front of
 * anvil (passing everything through), with the library's own transport.
 */
import { createPublicClient, custom, encodeFunctionData, http, RpcRequestError, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dispatch } from '../../src/core/context.js'
import { createRegistry } from '../../src/core/registry.js'
import { createFacilitator, FacilitatorError, type Facilitator, type SchemeAdapter } from '../../src/index.js'
import { exactEvm, EVM_REJECTION, privateKeySigner, signExactEvmPayment } from '../../src/evm/index.js'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import { parsePaymentRequest } from '../../src/schemas/parse-request.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirements } from '../../src/schemas/requirements.js'
import {
  delegateToGasPriceWallet,
  deployGasBurningToken,
  deployGasPriceWallet,
  deployTestToken,
  fundPayer,
  tokenBalance,
  type TestToken,
} from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { noJournal, verifyDirectly } from '../support/adapter-steps.js'
import { requestsDuring, startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'

let world: EvmFixture
let proxy: FaultProxy

const body = (paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements) => ({ x402Version: 2, paymentPayload, paymentRequirements })

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 2 })
  proxy = await startFaultProxy(world.node.rpcUrl)
})
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})

/** Our default transport through the proxy, the fixture's token known (as the built-in USDC is). */
const config = (overrides: Partial<ExactEvmConfig> = {}, network: Partial<ExactEvmConfig['networks'][number]> = {}): ExactEvmConfig =>
  world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url], assets: [world.knownAsset], ...network }], ...overrides })

/** A facilitator that has read its fee quote already (the first verify waits for it). */
async function warmFacilitator(overrides: Partial<ExactEvmConfig> = {}, network: Partial<ExactEvmConfig['networks'][number]> = {}): Promise<Facilitator> {
  const facilitator = createFacilitator({ schemes: [exactEvm(config(overrides, network))] })
  await world.warmUp(facilitator)
  return facilitator
}

/** The JSON-RPC calls of each request the proxy forwarded while `work` ran. */
async function requestsOf<T>(work: () => Promise<T>): Promise<{ result: T; requests: { method: string; params: unknown }[][] }> {
  const from = proxy.calls.length
  const result = await work()
  return { result, requests: proxy.calls.slice(from) }
}

/** Each signer's ETH balance and nonce. */
const signerState = () =>
  Promise.all(world.signers.map(async (s) => [await world.node.publicClient.getBalance({ address: s.address }), await world.node.publicClient.getTransactionCount({ address: s.address })]))

/** The context the core would hand the adapter, to drive parse, verify and settle directly. */
function contextOf(adapter: SchemeAdapter, paymentPayload: PaymentPayload, requirements: PaymentRequirements) {
  const parsed = parsePaymentRequest(body(paymentPayload, requirements))
  if (!parsed.ok) throw new Error('bad test request')
  const routed = dispatch(createRegistry([adapter]), parsed.request, AbortSignal.timeout(30_000))
  if ('rejection' in routed) throw new Error(routed.rejection.message)
  return routed.context
}

const callParams = (call: { params: unknown }) => (call.params as [Record<string, string>])[0]

/** A payment of `amount` in `token` from a fresh plain account holding `balance`. */
async function plainPayment(token: TestToken, balance = 1_000_000n) {
  const payer = privateKeyToAccount(generatePrivateKey())
  await fundPayer(world.node, token, payer.address, balance)
  const requirements = world.requirementsV2({ asset: token.address, extra: { name: token.name, version: token.version } })
  return { payer, requirements, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }) }
}

describe('verify runs its chain check as the settlement will', () => {
  it('a known token paid by a plain account: one request, the Multicall3 eth_call from the signer with the fixed gas limit and the fee fields, beside eth_getCode', async () => {
    const facilitator = await warmFacilitator({ signers: [world.signers[1]!] })
    const { payer, requirements, paymentPayload } = await plainPayment(world.token)
    const { result, requests } = await requestsOf(() => facilitator.verify(body(paymentPayload, requirements)))
    expect(result).toEqual({ isValid: true, payer: payer.address })
    expect(requests).toHaveLength(1)
    expect(requests[0]!.map((c) => c.method)).toEqual(['eth_call', 'eth_getCode'])
    const call = callParams(requests[0]![0]!)
    expect(call.from?.toLowerCase()).toBe(world.signers[1]!.address.toLowerCase())
    expect(BigInt(call.gas!)).toBe(150_000n)
    expect(BigInt(call.maxFeePerGas!)).toBeGreaterThan(0n)
    expect(call.maxPriorityFeePerGas).toMatch(/^0x[0-9a-f]+$/)
  })

  it('a token outside the known table: the exact settlement call runs as eth_call from the signer, with the fees and maxSettlementGas as its limit, in the same request (no estimate); settle sends it at that limit, not the fixed one', async () => {
    const facilitator = await warmFacilitator({ signers: [world.signers[0]!] })
    const other = await deployTestToken(world.node)
    const { payer, requirements, paymentPayload } = await plainPayment(other)
    const { result, requests } = await requestsOf(() => facilitator.verify(body(paymentPayload, requirements)))
    expect(result).toEqual({ isValid: true, payer: payer.address })
    expect(requests).toHaveLength(1)
    // The reads, the transaction at the cap, and (a token outside the table) the proof of what reaches payTo: one batch.
    expect(requests[0]!.map((c) => c.method)).toEqual(['eth_call', 'eth_call', 'eth_call'])
    const simulation = callParams(requests[0]![1]!)
    expect(simulation.from?.toLowerCase()).toBe(world.signers[0]!.address.toLowerCase())
    expect(simulation.to?.toLowerCase()).toBe(other.address.toLowerCase())
    // transferWithAuthorization(..., v, r, s): the very call settle sends, with the very limit.
    expect(simulation.data?.slice(0, 10)).toBe('0xe3ee160e')
    expect(BigInt(simulation.gas!)).toBe(300_000n)
    expect(BigInt(simulation.maxFeePerGas!)).toBeGreaterThan(0n)

    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
    const { gasUsed } = await world.node.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })
    expect(tx.from).toBe(world.signers[0]!.address.toLowerCase())
    expect(tx.gas).toBe(300_000n)
    expect(tx.gas).toBeGreaterThan(gasUsed)
  })

  it('a node that refuses the simulation because the signer has no gas money: verify throws signer_unfunded (503), not a rejection', async () => {
    const poorSigner = privateKeySigner(generatePrivateKey())
    const warnings: Record<string, unknown>[] = []
    const logger = { warn: (fields: Record<string, unknown>) => void warnings.push(fields) }
    const facilitator = createFacilitator({ schemes: [exactEvm(config({ signers: [poorSigner], logger }))] })
    const { requirements, paymentPayload } = await plainPayment(world.token)
    const error = await facilitator.verify(body(paymentPayload, requirements)).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorError)
    expect(error).toMatchObject({ code: 'signer_unfunded', status: 503 })
    expect((error as Error).message).toContain(poorSigner.address)
    // Logged once when its cooldown starts, not again for the verifies it turns away meanwhile.
    await facilitator.verify(body(paymentPayload, requirements)).catch(() => undefined)
    expect(warnings).toEqual([{ event: 'signer_unfunded', network: 'eip155:84532', signer: poorSigner.address, cooldownMs: 30_000 }])
    // Nothing was sent from it.
    expect(await world.node.publicClient.getTransactionCount({ address: poorSigner.address })).toBe(0)
  })
})

describe('the fee quote verify simulates with', () => {
  it('is read by the first verify; later verifies use the one held and refresh it in the background, never waiting for it', async () => {
    const facilitator = createFacilitator({ schemes: [exactEvm(config({ feeCacheMs: 100 }))] })
    const { requirements, paymentPayload } = await plainPayment(world.token)
    const slowFees = 1_000
    proxy.setModeFor(['eth_getBlockByNumber'], { kind: 'delay', ms: slowFees })
    try {
      // No quote yet: the first verify waits for one.
      let started = performance.now()
      expect(await facilitator.verify(body(paymentPayload, requirements))).toMatchObject({ isValid: true })
      expect(performance.now() - started).toBeGreaterThanOrEqual(slowFees)
      // The quote ages past feeCacheMs: the next verify uses it and starts a refresh it does not wait for.
      await new Promise((resolve) => setTimeout(resolve, 200))
      const next = await plainPayment(world.token)
      started = performance.now()
      const { result, requests } = await requestsOf(() => facilitator.verify(body(next.paymentPayload, next.requirements)))
      const elapsed = performance.now() - started
      expect(result).toMatchObject({ isValid: true })
      expect(elapsed).toBeLessThan(slowFees / 2)
      // The verify's own chain check is one request; the fee read left beside it.
      const checks = requests.filter((calls) => calls.some((c) => c.method === 'eth_call'))
      expect(checks).toHaveLength(1)
      await new Promise((resolve) => setTimeout(resolve, slowFees + 200))
      expect(proxy.calls.slice(-20).some((calls) => calls.some((c) => c.method === 'eth_getBlockByNumber'))).toBe(true)
    } finally {
      proxy.setMode({ kind: 'pass' })
    }
  })
})

describe('a fee quote the node finds below its base fee (fault injection: geth\'s answer)', () => {
  it('is read again once and the check runs again with it; the payment is judged, not refused for our quote', async () => {
    const node = createPublicClient({ transport: http(world.node.rpcUrl) })
    let staleAnswers = 0
    const seen: string[] = []
    const facilitator = createFacilitator({
      schemes: [
        exactEvm(
          config({
            feeCacheMs: 600_000,
            transport: (url) =>
              custom({
                async request({ method, params }) {
                  seen.push(method)
                  if (method === 'eth_call' && staleAnswers > 0) {
                    staleAnswers--
                    const message = 'max fee per gas less than block base fee: address 0x0, maxFeePerGas: 1, baseFee: 7'
                    throw new RpcRequestError({ body: { method, params }, error: { code: -32000, message }, url })
                  }
                  return node.request({ method, params } as Parameters<typeof node.request>[0])
                },
              }),
          }),
        ),
      ],
    })
    await world.warmUp(facilitator)
    const { payer, requirements, paymentPayload } = await plainPayment(world.token)
    seen.length = 0
    staleAnswers = 1
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    expect(seen.filter((m) => m === 'eth_getBlockByNumber')).toHaveLength(1)
    expect(seen.filter((m) => m === 'eth_call')).toHaveLength(2)
    // A node that keeps refusing fresh quotes is a fault of ours (502), never a rejection of the payment.
    staleAnswers = 2
    const error = await facilitator.verify(body(paymentPayload, requirements)).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorError)
    expect(error).toMatchObject({ code: 'rpc_error' })
  })
})

describe('payments that verify valid only in a simulation cost the facilitator nothing', () => {
  it('a token whose transferWithAuthorization burns 600k gas: verify answers invalid_exact_evm_settlement_gas_too_high, settle sends nothing', async () => {
    const facilitator = await warmFacilitator()
    const hungry = await deployGasBurningToken(world.node, 600_000n)
    const { payer, requirements, paymentPayload } = await plainPayment(hungry)
    const before = await signerState()
    const verdict = await facilitator.verify(body(paymentPayload, requirements))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.settlementGasTooHigh, payer: payer.address })
    expect(verdict.invalidMessage).toContain('300000')
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: false, errorReason: EVM_REJECTION.settlementGasTooHigh, transaction: '' })
    // The adapter alone refuses it too: its verify hands settle no payment to send.
    const adapter = exactEvm(config())
    const direct = await verifyDirectly(adapter, contextOf(adapter, paymentPayload, requirements))
    expect(direct.response).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.settlementGasTooHigh })
    expect(direct.payment).toBeUndefined()
    expect(await signerState()).toEqual(before)
    expect(await tokenBalance(world.node, hungry, payer.address)).toBe(1_000_000n)
  })

  it('the same token listed as a known asset: its fixed-limit simulation runs with the 150k the transaction would get, and fails; settle sends nothing', async () => {
    const hungry = await deployGasBurningToken(world.node, 600_000n)
    const facilitator = await warmFacilitator({}, { assets: [world.knownAsset, { address: hungry.address, name: hungry.name, version: hungry.version }] })
    const { payer, requirements, paymentPayload } = await plainPayment(hungry)
    const before = await signerState()
    const verdict = await facilitator.verify(body(paymentPayload, requirements))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.simulationFailed, payer: payer.address })
    expect(verdict.invalidMessage).toContain('150000')
    expect(await facilitator.settle(body(paymentPayload, requirements))).toMatchObject({ success: false, errorReason: EVM_REJECTION.simulationFailed, transaction: '' })
    expect(await signerState()).toEqual(before)
  })

  it('a token whose transfer needs about 200k gas (above the fixed 150k, below the cap): verify valid, settle lands with the estimate', async () => {
    const facilitator = await warmFacilitator()
    const heavy = await deployGasBurningToken(world.node, 115_000n)
    const { payer, requirements, paymentPayload } = await plainPayment(heavy)
    expect(await facilitator.verify(body(paymentPayload, requirements))).toEqual({ isValid: true, payer: payer.address })
    const settled = await facilitator.settle(body(paymentPayload, requirements))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
    const receipt = await world.node.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })
    expect(receipt.status).toBe('success')
    expect(receipt.gasUsed).toBeGreaterThan(150_000n)
    expect(tx.gas).toBeGreaterThan(receipt.gasUsed)
    expect(tx.gas).toBeLessThanOrEqual(300_000n)
    expect(await tokenBalance(world.node, heavy, payer.address)).toBe(1_000_000n - 1000n)
    console.info(`[measure] 200k-gas token: gas used ${receipt.gasUsed}, limit sent ${tx.gas}`)
  })

  describe('a wallet whose signature is valid only at tx.gasprice 0, paying a USDC-like token that asks isValidSignature of payers with code', () => {
    /** The payment of a gas-price wallet in the fixture's token (known, and checks signatures as USDC v2.2). */
    async function gasPricePayment(form: 'erc1271' | 'eip7702'): Promise<{ payer: Address; requirements: PaymentRequirements; paymentPayload: PaymentPayload }> {
      const owner = privateKeyToAccount(generatePrivateKey())
      let payer: Address = owner.address
      if (form === 'erc1271') payer = await deployGasPriceWallet(world.node, owner.address)
      else await delegateToGasPriceWallet(world.node, owner.address)
      await fundPayer(world.node, world.token, payer, 1_000_000n)
      const requirements = world.requirementsV2()
      return { payer, requirements, paymentPayload: await signExactEvmPayment({ signer: { ...owner, address: payer }, requirements }) }
    }

    for (const form of ['erc1271', 'eip7702'] as const) {
      it(`${form === 'erc1271' ? 'as a deployed ERC-1271 wallet' : 'as an EIP-7702 account delegated to it'}: verify refuses, settle sends nothing, with restrictAssets on too`, async () => {
        const { payer, requirements, paymentPayload } = await gasPricePayment(form)
        const before = await signerState()
        for (const restrictAssets of [false, true]) {
          const facilitator = await warmFacilitator({}, { restrictAssets })
          const verdict = await facilitator.verify(body(paymentPayload, requirements))
          expect(verdict.isValid).toBe(false)
          expect([EVM_REJECTION.signature, EVM_REJECTION.simulationFailed]).toContain(verdict.invalidReason)
          expect(verdict.invalidMessage).toEqual(expect.any(String))
          const settled = await facilitator.settle(body(paymentPayload, requirements))
          expect(settled).toMatchObject({ success: false, transaction: '' })
        }
        // The adapter alone refuses it too (its chain check runs with the fees): its verify hands settle no payment to send.
        const adapter = exactEvm(config())
        const direct = await verifyDirectly(adapter, contextOf(adapter, paymentPayload, requirements))
        expect(direct.response.isValid).toBe(false)
        expect(direct.payment).toBeUndefined()
        expect(await signerState()).toEqual(before)
        expect(await tokenBalance(world.node, world.token, payer)).toBe(1_000_000n)
      })
    }

    it('is a real threat: the same payment passes an estimate without fee fields (what verify and settle ran before)', async () => {
      const { paymentPayload } = await gasPricePayment('erc1271')
      const authorization = paymentPayload.payload.authorization as Record<string, string>
      const data = encodeFunctionData({
        abi: world.token.abi,
        functionName: 'transferWithAuthorization',
        args: [authorization.from, authorization.to, BigInt(authorization.value!), BigInt(authorization.validAfter!), BigInt(authorization.validBefore!), authorization.nonce, paymentPayload.payload.signature],
      })
      const from = world.signers[0]!.address
      const feeless = await world.node.publicClient.request({ method: 'eth_estimateGas', params: [{ from, to: world.token.address, data }] })
      expect(BigInt(feeless)).toBeGreaterThan(21_000n)
      const fees = await world.node.publicClient.estimateFeesPerGas()
      const withFees = world.node.publicClient.request({
        method: 'eth_estimateGas',
        params: [{ from, to: world.token.address, data, maxFeePerGas: `0x${fees.maxFeePerGas.toString(16)}`, maxPriorityFeePerGas: `0x${fees.maxPriorityFeePerGas.toString(16)}` }],
      })
      await expect(withFees).rejects.toThrow(/invalid signature/)
    })
  })
})

describe('Verdict.spend', () => {
  it('after a valid verify: the payer\'s balance as verify read it, the amount, and the account <chainId>:<token>:<payer>; none otherwise', async () => {
    const adapter = exactEvm(config())
    const { payer, requirements, paymentPayload } = await plainPayment(world.token, 777_777n)
    const ctx = contextOf(adapter, paymentPayload, requirements)
    const verdict = await verifyDirectly(adapter, ctx)
    expect(verdict.response).toEqual({ isValid: true, payer: payer.address })
    expect(verdict.spend).toEqual({
      account: `84532:${world.token.address.toLowerCase()}:${payer.address.toLowerCase()}`,
      amount: 1000n,
      balance: 777_777n,
    })
    expect(await adapter.settle(ctx, verdict.payment, noJournal)).toMatchObject({ success: true })
    // A payment that fails verify spends nothing.
    const poor = await plainPayment(world.token, 999n)
    const refused = await verifyDirectly(adapter, contextOf(adapter, poor.paymentPayload, poor.requirements))
    expect(refused.response).toMatchObject({ isValid: false, invalidReason: EVM_REJECTION.insufficientFunds })
    expect(refused.spend).toBeUndefined()
    expect(refused.payment).toBeUndefined()
  })
})

describe('a token outside the known table: verify runs the transaction at the cap, and settle reuses that run while it is fresh (issue 31)', () => {
  const TRANSFER_WITH_AUTHORIZATION = '0xe3ee160e'
  type Call = { method: string; params: unknown }
  /** An eth_call of the token's transferWithAuthorization itself (verify's run at the cap, or settle's simulation). */
  const transferRuns = (calls: readonly Call[], token: Address) =>
    calls.filter((call) => {
      if (call.method !== 'eth_call') return false
      const tx = callParams(call)
      return tx.to?.toLowerCase() === token.toLowerCase() && tx.data?.startsWith(TRANSFER_WITH_AUTHORIZATION)
    })
  /** The payee proof: an eth_call with a state override. */
  const probes = (calls: readonly Call[]) => calls.filter((call) => call.method === 'eth_call' && Array.isArray(call.params) && call.params.length === 3)
  const methods = (calls: readonly Call[]) => calls.map((call) => call.method)

  it('verify is one HTTP request with no eth_estimateGas: the reads, the exact transaction at maxSettlementGas and the payee proof', async () => {
    const facilitator = await warmFacilitator({ feeCacheMs: 600_000 })
    const other = await deployTestToken(world.node)
    for (let round = 0; round < 3; round++) {
      const { payer, requirements, paymentPayload } = await plainPayment(other)
      const { result, requests } = await requestsDuring(proxy, () => facilitator.verify(body(paymentPayload, requirements)))
      expect(result).toEqual({ isValid: true, payer: payer.address })
      expect(requests).toHaveLength(1)
      expect(methods(requests[0]!)).not.toContain('eth_estimateGas')
      expect(methods(requests[0]!)).toEqual(['eth_call', 'eth_call', 'eth_call'])
      const [run] = transferRuns(requests[0]!, other.address)
      expect(run && BigInt(callParams(run).gas!)).toBe(300_000n)
      expect(probes(requests[0]!)).toHaveLength(1)
    }
  })

  it('settle right after its verify (the core runs both) does not simulate again: one run of the transfer and one proof in all, then the send at maxSettlementGas', async () => {
    const facilitator = await warmFacilitator({ feeCacheMs: 600_000 })
    const other = await deployTestToken(world.node)
    const { payer, requirements, paymentPayload } = await plainPayment(other)
    const before = await tokenBalance(world.node, other, world.payTo)
    const { result: settled, requests } = await requestsDuring(proxy, () => facilitator.settle(body(paymentPayload, requirements)))
    expect(settled).toMatchObject({ success: true, payer: payer.address })
    const calls = requests.flat()
    // The core's verify ran the transfer at the cap and the proof (one batch); settle ran neither again.
    expect(transferRuns(calls, other.address)).toHaveLength(1)
    expect(probes(calls)).toHaveLength(1)
    expect(methods(calls)).not.toContain('eth_estimateGas')
    expect(methods(calls)).toContain('eth_sendRawTransaction')
    const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
    expect(tx.gas).toBe(300_000n)
    expect(await tokenBalance(world.node, other, world.payTo)).toBe(before + BigInt(requirements.amount))
  })

  it('a verify older than 2 s: settle runs the exact transaction at maxSettlementGas again, with the payee proof, in one request, before it sends', async () => {
    const adapter = exactEvm(config({ feeCacheMs: 600_000 }))
    const other = await deployTestToken(world.node)
    const { requirements, paymentPayload } = await plainPayment(other)
    const ctx = contextOf(adapter, paymentPayload, requirements)
    const verdict = await verifyDirectly(adapter, ctx)
    expect(verdict.response).toMatchObject({ isValid: true })
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    const { result: settled, requests } = await requestsDuring(proxy, () => adapter.settle(ctx, verdict.payment, noJournal))
    expect(settled).toMatchObject({ success: true })
    const simulating = requests.filter((request) => transferRuns(request, other.address).length > 0)
    expect(simulating).toHaveLength(1)
    expect(transferRuns(simulating[0]!, other.address).map((run) => BigInt(callParams(run).gas!))).toEqual([300_000n])
    expect(probes(simulating[0]!)).toHaveLength(1)
    expect(methods(requests.flat())).not.toContain('eth_estimateGas')
    // The simulation came before the send.
    const sendAt = requests.findIndex((request) => methods(request).includes('eth_sendRawTransaction'))
    expect(requests.indexOf(simulating[0]!)).toBeLessThan(sendAt)
    await adapter.close?.()
  })

  it('fees other than the ones verify ran with: settle simulates again, with the payee proof, at the new fees', async () => {
    const adapter = exactEvm(config({ feeCacheMs: 100 }))
    const other = await deployTestToken(world.node)
    const { requirements, paymentPayload } = await plainPayment(other)
    const ctx = contextOf(adapter, paymentPayload, requirements)
    const verdict = await verifyDirectly(adapter, ctx)
    expect(verdict.response).toMatchObject({ isValid: true })
    const { baseFeePerGas } = await world.node.publicClient.getBlock()
    await world.node.testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: (baseFeePerGas ?? 1_000_000_000n) * 3n })
    await world.node.testClient.mine({ blocks: 1 })
    await new Promise((resolve) => setTimeout(resolve, 150))
    const { result: settled, requests } = await requestsDuring(proxy, () => adapter.settle(ctx, verdict.payment, noJournal))
    expect(settled).toMatchObject({ success: true })
    const simulating = requests.filter((request) => transferRuns(request, other.address).length > 0)
    expect(simulating).toHaveLength(1)
    expect(probes(simulating[0]!)).toHaveLength(1)
    const tx = await world.node.publicClient.getTransaction({ hash: settled.transaction as Hex })
    expect(tx.gas).toBe(300_000n)
    // Sent with the fees it was simulated with.
    expect(BigInt(callParams(transferRuns(simulating[0]!, other.address)[0]!).maxFeePerGas!)).toBe(tx.maxFeePerGas)
    await adapter.close?.()
  })
})
