import { isAddress, type Address, type Hex } from 'viem'
import type { BroadcastRecord, Parsed, PaymentContext, ReadinessCheck, SchemeAdapter, SettleJournal, SettleReservation, Verdict } from '../core/adapter.js'
import { withDeadline } from '../core/deadline.js'
import { secretsOfUrl, withRedactedErrors } from '../core/redact.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { REJECTION } from '../errors/reasons.js'
import type { SettleResponse, VerifyResponse } from '../schemas/messages.js'
import { settleFailure, settlementPending } from '../settlement/settle-answers.js'
import { awaitReceipt } from './chain/await-receipt.js'
import { parseExactEvmPayload, type ExactEvmPayload } from './exact/authorization.js'
import { checkChainState, type ChainCheckOptions } from './exact/check-chain-state.js'
import { loadKeccak } from './crypto/keccak.js'
import type { ExactEvmConfig } from './exact-evm-config.js'
import { createNetworkRuntime, type FeeQuote, type NetworkRuntime, type SignerSlot } from './chain/network-runtime.js'
import { checkValidityWindow, preparePayment, sameAddress, type PrepareOptions, type PreparedPayment } from './exact/prepare-payment.js'
import { EVM_REJECTION, PERMIT2_REJECTION, UPTO_REJECTION, type Rejection } from './reasons.js'
import { X402_EXACT_PERMIT2_PROXY, X402_UPTO_PERMIT2_PROXY } from './codec/permit2-abi.js'
import { chargedBy, parseUptoPayload, prepareUpto, uptoSettleCalldata, type UptoPayload } from './upto/upto-payment.js'
import { checkPermit2State, exactSettleCalldata, parsePermit2Payload, preparedWindow, preparePermit2, type Permit2Payload, type PreparedPermit2 } from './permit2/permit2-prepare.js'
import { isPermit2Payload } from './permit2/permit2-payload-kind.js'
import { toRpcFault } from './chain/rpc-fault.js'
import type { PayeeCredit } from './asset-policy.js'
import { EIP2612_GAS_SPONSORING } from './permit2/eip2612-extension.js'
import type { ReceiptOutcome } from './chain/receipt-poller.js'
import { pickSigner, resend, signAndSend } from './chain/send-transaction.js'
import {
  deploymentPrice,
  estimateDeployment,
  estimateSettlementGas,
  simulateSettlement,
  TRANSACTION_BASE_GAS,
  type GasEstimate,
  type SettlementSender,
} from './chain/settlement-simulation.js'

const DEFAULT_GAS_LIMIT = 150_000n
const DEFAULT_MAX_SETTLEMENT_GAS = 300_000n
const DEFAULT_MAX_DEPLOYMENT_GAS = 500_000n
const NOT_DEPLOYING: Rejection = { reason: EVM_REJECTION.undeployedWallet, message: 'the payer\'s smart wallet is not deployed and this facilitator does not deploy wallets' }

/**
 * The `exact` scheme on EVM chains: EIP-3009 `transferWithAuthorization`
 * payments, verified offline then in one Multicall3 round trip, settled by
 * the facilitator's own keys with locally managed nonces.
 *
 * Served under each network's v1 name (when it has one) and its CAIP-2 id;
 * the signers are listed under `eip155:*`.
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { exactEvm } from 'x402-facilitator/evm'
 * import { privateKeyToAccount } from 'viem/accounts'
 *
 * const facilitator = createFacilitator({
 *   schemes: [exactEvm({
 *     networks: [{ network: 'base', rpcUrls: [process.env.BASE_RPC!] }],
 *     signers: [privateKeyToAccount(process.env.FACILITATOR_KEY as `0x${string}`)],
 *   })],
 * })
 */
export function exactEvm(config: ExactEvmConfig): SchemeAdapter {
  return createEvmAdapters(config).exact
}

/**
 * The EVM adapters of one configuration, sharing its networks, signers and their nonces: `exact`
 * (EIP-3009 and Permit2, as {@link exactEvm}) and `upto` (Permit2 through the x402 upto proxy: the
 * client authorizes a maximum, the resource server settles the amount it used, possibly zero).
 * `GET /supported` lists the upto kind of each network with `extra.facilitatorAddress`, the signer
 * the payer names in its witness (the only account the upto proxy lets settle).
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { evmSchemes } from 'x402-facilitator/evm'
 * import { privateKeyToAccount } from 'viem/accounts'
 *
 * const facilitator = createFacilitator({
 *   schemes: evmSchemes({
 *     networks: [{ network: 'base', rpcUrls: [process.env.BASE_RPC!] }],
 *     signers: [privateKeyToAccount(process.env.FACILITATOR_KEY as `0x${string}`)],
 *   }),
 * })
 */
export function evmSchemes(config: ExactEvmConfig): SchemeAdapter[] {
  const { exact, upto } = createEvmAdapters(config)
  return [exact, upto]
}

function createEvmAdapters(config: ExactEvmConfig): { exact: SchemeAdapter; upto: SchemeAdapter } {
  // The WebAssembly keccak compiles in the background; the first verifies may use viem's.
  void loadKeccak()
  const runtimes = new Map<string, NetworkRuntime>()
  for (const entry of config.networks) {
    const runtime = createNetworkRuntime(entry, config)
    if (runtimes.has(runtime.network.caip2)) {
      throw new FacilitatorError('misconfigured', `exactEvm: ${runtime.network.caip2} is configured twice`)
    }
    runtimes.set(runtime.network.caip2, runtime)
  }
  const signerAddresses = [...new Set([...runtimes.values()].flatMap((r) => r.signers.map((s) => s.signer.address)))]
  const prepareOptions: PrepareOptions = {
    settleMarginSeconds: config.settleMarginSeconds ?? 6,
    erc6492Factories: new Set((config.erc6492Factories ?? []).map((factory) => factory.toLowerCase())),
    nowSeconds: () => BigInt(Math.floor(Date.now() / 1000)),
  }
  // Verify's preparation: its chain check proves a plain signature on a known token (see checkChainState).
  const verifyPrepareOptions: PrepareOptions = { ...prepareOptions, deferSignerCheck: true }
  const deployWallets = config.deployErc6492Wallets ?? false
  const maxInFlight = config.maxInFlightSettlesPerSigner ?? Number.POSITIVE_INFINITY
  if (!(maxInFlight >= 1)) throw new FacilitatorError('misconfigured', 'exactEvm: maxInFlightSettlesPerSigner must be at least 1')
  const maxSettlementGas = config.maxSettlementGas ?? DEFAULT_MAX_SETTLEMENT_GAS
  if (!(maxSettlementGas >= TRANSACTION_BASE_GAS)) {
    throw new FacilitatorError('misconfigured', `exactEvm: maxSettlementGas must be at least ${TRANSACTION_BASE_GAS}`)
  }
  const maxDeploymentGas = config.maxDeploymentGas ?? DEFAULT_MAX_DEPLOYMENT_GAS
  if (!(maxDeploymentGas >= TRANSACTION_BASE_GAS)) {
    throw new FacilitatorError('misconfigured', `exactEvm: maxDeploymentGas must be at least ${TRANSACTION_BASE_GAS}`)
  }
  const gasLimit = config.gasLimit ?? DEFAULT_GAS_LIMIT
  const rebroadcastIntervalMs = config.rebroadcastIntervalMs ?? 3_000
  const receiptOptions = (signal: AbortSignal) => ({
    timeoutMs: config.receiptTimeoutMs ?? 30_000,
    maxIntervalMs: config.receiptPollIntervalMs ?? 1_000,
    signal,
  })

  const runtimeOf = (ctx: PaymentContext): NetworkRuntime => {
    const runtime = runtimes.get(ctx.network)
    // The registry only routes networks this adapter listed.
    if (!runtime) throw new FacilitatorError('misconfigured', `exactEvm does not serve ${ctx.network}`)
    return runtime
  }

  /**
   * Offline checks then the chain check (one round trip; two for a known token's payer with code), run as
   * the settlement will be: from the signer reserved for this settle (settle's verify) or the one settle
   * would pick now (a verify alone), with the cached fee quote. Verify's.
   */
  async function check(ctx: PaymentContext, runtime: NetworkRuntime, payload: ExactEvmPayload, reserved: SignerSlot | undefined): Promise<Verdict<ExactPayment>> {
    const offline = addressRejection(ctx, payload) ?? (await preparePayment(ctx, runtime, verifyPrepareOptions, payload))
    if ('reason' in offline) return refused(offline, payload.authorization.from)
    const slot = reserved ?? pickSigner(runtime)
    // The quote the runtime holds, not one read for this verify (only the very first verify waits for one).
    const fees = await verifyFees(runtime, ctx.signal)
    const options: ChainCheckOptions = {
      sender: { from: slot.signer.address, fees },
      gasLimit,
      maxSettlementGas,
      maxDeploymentGas,
      renewFees: runtime.freshFees,
    }
    const verdict = await withDeadline(checkChainState(runtime, offline, options), ctx.signal).catch((error: unknown) => Promise.reject(leftOutIfUnfunded(runtime, slot, error)))
    if (verdict.rejection) return refused(verdict.rejection, payload.authorization.from)
    const { payment } = verdict
    if (payment.deployment && !verdict.walletDeployed && !deployWallets) {
      return refused(NOT_DEPLOYING, payload.authorization.from)
    }
    const estimate = verdict.estimatedGas === undefined ? undefined : { gas: verdict.estimatedGas, from: slot.signer.address }
    // A token outside the known table: the transfer ran as eth_call at the cap, as settle will send it (see estimatedGas).
    const simulated = verdict.simulation && { from: slot.signer.address, fees: verdict.simulation.fees, data: payment.transferCalldata, at: Date.now() }
    const account = `${runtime.chainId}:${ctx.asset.toLowerCase()}:${payment.payer.toLowerCase()}`
    return {
      response: { isValid: true, payer: payment.payer },
      payment: { method: 'eip3009', payment, estimate, simulated },
      // The balance was read in the same call that passed the payment, so it is there.
      spend: { account, amount: payment.payload.authorization.value, balance: verdict.balance ?? 0n },
    }
  }

  /**
   * A Permit2 payment's checks: offline in the official order, then the chain state in one round
   * trip (see checkPermit2State), run as the signer that will send it, with its fees.
   */
  async function checkPermit(ctx: PaymentContext, runtime: NetworkRuntime, permit: Permit2Payload, reserved: SignerSlot | undefined): Promise<Verdict<ExactPayment>> {
    const payment = await preparePermit2(ctx, runtime, prepareOptions, permit)
    if ('reason' in payment) return refused(payment, permit.from)
    const slot = reserved ?? pickSigner(runtime)
    const fees = await verifyFees(runtime, ctx.signal)
    const verdict = await withDeadline(checkPermit2State(runtime, payment, { from: slot.signer.address, fees }, maxSettlementGas), ctx.signal).catch((error: unknown) =>
      Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
    )
    if (verdict.rejection) return refused(verdict.rejection, permit.from)
    const account = `${runtime.chainId}:${ctx.asset.toLowerCase()}:${payment.payer.toLowerCase()}`
    const simulated = { from: slot.signer.address, fees, data: payment.settleCalldata, at: Date.now() }
    // Sent without the permit when the allowance covers the payment: settle simulates that call first (other calldata).
    const sent = verdict.permitUnneeded ? { ...payment, permit2612: undefined, settleCalldata: exactSettleCalldata(payment.payload) } : payment
    return {
      response: { isValid: true, payer: payment.payer },
      payment: { method: 'permit2', payment: sent, simulated },
      spend: { account, amount: payment.payload.amount, balance: verdict.balance ?? 0n },
    }
  }

  /** Takes a settlement slot on `slot` (`signer_busy` when it is at its bound); `release` frees it (idempotent). */
  function reserveSlot(slot: SignerSlot, busy: string): SignerReservation {
    if (slot.inFlight >= maxInFlight) throw new FacilitatorError('signer_busy', busy)
    slot.inFlight++
    let held = true
    return {
      slot,
      release() {
        if (!held) return
        held = false
        slot.inFlight--
      },
    }
  }

  /**
   * Sends a proxy's `settle` call (Permit2 exact or upto) from `slot` with `maxSettlementGas` as its
   * gas limit (the limit verify simulated it with; unused gas is not paid for), then awaits it. The
   * transaction runs as `eth_call` exactly as it will be sent (this signer, these fees, that limit)
   * first, unless the verify the core ran just before this settle ran that very call (same signer,
   * fees and calldata): only the chain may have moved since, as for an EIP-3009 payment. With
   * `call.payee` (a token outside the known table) that simulation also proves what reaches payTo.
   */
  async function sendProxySettlement(
    ctx: PaymentContext,
    runtime: NetworkRuntime,
    slot: SignerSlot,
    call: { to: Address; data: Hex; payee: PayeeCredit | undefined },
    verified: VerifiedSimulation,
    journal: SettleJournal,
    kind: { asRejection: (rejection: Rejection) => Rejection; payer: string | undefined },
  ): Promise<SettleResponse> {
    const { payer } = kind
    const from = slot.signer.address
    const fees = await withDeadline(runtime.fees(), ctx.signal).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the gas fees')))
    const gas = maxSettlementGas
    let sendFees = fees
    if (!ranJustNow(verified, { from, data: call.data, fees })) {
      const simulated = await simulateSettlement(runtime, { from, fees }, { to: call.to, data: call.data, gas }, ctx.signal, runtime.freshFees, call.payee).catch((error: unknown) =>
        Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
      )
      if (simulated.rejection) return failure(ctx, kind.asRejection(simulated.rejection), payer)
      sendFees = simulated.fees
    }
    const sentAt = performance.now()
    const sent = await signAndSend(runtime, slot, { to: call.to, data: call.data, gas, fees: sendFees }, ctx.signal, (record) => journal.broadcasting(record))
    const outcome = await awaitReceipt(runtime, sent.hash, sent.raw, receiptOptions(ctx.signal), rebroadcastIntervalMs)
    if (outcome.status !== 'pending') ctx.timings.confirmationMs = performance.now() - sentAt
    return answer(ctx, sent.hash, outcome, payer)
  }

  /** Settles a Permit2 payment its verify passed: the proxy's `settle`, simulated exactly as sent (the clock checked again). */
  async function settlePermit(ctx: PaymentContext, runtime: NetworkRuntime, verified: VerifiedPermit2, journal: SettleJournal, reservation: SignerReservation | undefined): Promise<SettleResponse> {
    const { payment } = verified
    const payer = payment.payload.from
    const expired = preparedWindow(payment, prepareOptions)
    if (expired) return failure(ctx, expired, payer)
    return onSigner(reservation?.slot ?? pickSigner(runtime), reservation, (slot) => {
      const call = { to: X402_EXACT_PERMIT2_PROXY, data: payment.settleCalldata, payee: payment.payee }
      return sendProxySettlement(ctx, runtime, slot, call, verified.simulated, journal, { asRejection: asPermitRejection, payer })
    })
  }

  /** Settles an EIP-3009 payment its verify passed (chain state included); only the clock may have moved since. */
  async function settleAuthorization(ctx: PaymentContext, runtime: NetworkRuntime, verified: VerifiedPayment, journal: SettleJournal, reservation: SignerReservation | undefined): Promise<SettleResponse> {
    const { payment } = verified
    const expired = checkValidityWindow(payment.payload, prepareOptions)
    if (expired) return failure(ctx, expired, payment.payer)
    return onSigner(reservation?.slot ?? pickSigner(runtime), reservation, async (slot) => {
      let gas = gasLimit
      let fees: FeeQuote | undefined
      // A plain account on a known token goes with the fixed limit; anything else as its estimate priced it.
      if (!(payment.kind === 'eoa' && payment.knownToken)) {
        const priced = await estimatedGas(runtime, slot, payment, verified, ctx.signal, (cost) => addCost(ctx, cost)).catch((error: unknown) => Promise.reject(leftOutIfUnfunded(runtime, slot, error)))
        if ('reason' in priced) return failure(ctx, priced, payment.payer)
        ;({ gas, fees } = priced)
      }
      const sentAt = performance.now()
      const sent = await signAndSend(runtime, slot, { to: payment.asset, data: payment.transferCalldata, gas, fees }, ctx.signal, (record) => journal.broadcasting(record))
      const outcome = await awaitReceipt(runtime, sent.hash, sent.raw, receiptOptions(ctx.signal), rebroadcastIntervalMs)
      if (outcome.status !== 'pending') ctx.timings.confirmationMs = performance.now() - sentAt
      return answer(ctx, sent.hash, outcome, payment.payer)
    })
  }

  /** Finishes a journaled settlement of `payer`'s payment (see SchemeAdapter.resume). */
  async function resumeSettlement(ctx: PaymentContext, payer: string, record: BroadcastRecord): Promise<SettleResponse> {
    const runtime = runtimeOf(ctx)
    const hash = asHash(record.transaction)
    const quick = { ...receiptOptions(ctx.signal), timeoutMs: 0 }
    const known = await runtime.receipts.wait(hash, quick)
    if (known.status !== 'pending') return answer(ctx, hash, known, payer)
    const seen = await runtime.client.request({ method: 'eth_getTransactionByHash', params: [hash] }).catch((error: unknown) => {
      throw toRpcFault(error, 'looking up the settlement transaction')
    })
    const raw = rawOf(record)
    if (!seen && raw) {
      if ((await resend(runtime, raw)) === 'nonce_used') {
        // The key's nonce moved on without this transaction: re-check once, it may just have been mined.
        const late = await runtime.receipts.wait(hash, quick)
        if (late.status !== 'pending') return answer(ctx, hash, late, payer)
        // It never reached the chain and never can; the authorization may well be unspent: the core
        // checks the payment again and sends it anew rather than recording a payment lost.
        return failure(ctx, { reason: REJECTION.transactionDropped, message: 'the settlement transaction was dropped (its nonce was used by another transaction)' }, payer, hash)
      }
    }
    return answer(ctx, hash, await awaitReceipt(runtime, hash, raw, receiptOptions(ctx.signal), rebroadcastIntervalMs), payer)
  }

  const adapter: SchemeAdapter<ExactPayload, ExactPayment, SignerReservation> = {
    scheme: 'exact',
    family: 'eip155',
    networks: [...runtimes.values()].map((r) => r.network),
    versions: config.versions ?? [1, 2],
    signers: () => signerAddresses,
    // Permit2 payments may carry the payer's EIP-2612 permit, run by the proxy's settleWithPermit.
    extensions: [EIP2612_GAS_SPONSORING],

    async readiness(signal): Promise<ReadinessCheck[]> {
      const minBalance = config.minSignerBalance ?? 1_000_000_000_000_000n
      const perNetwork = await Promise.all([...runtimes.values()].map((runtime) => networkReadiness(runtime, minBalance, signal)))
      return perNetwork.flat()
    },

    async close() {
      for (const runtime of runtimes.values()) runtime.closeConnections()
    },

    parse(ctx): Parsed<ExactPayload> {
      const { chainId } = runtimeOf(ctx)
      const raw = ctx.payload.payload
      if (isPermit2Payload(raw)) {
        const permit = parsePermit2Payload(raw)
        if ('reason' in permit) return { refusal: invalid(permit, undefined) }
        // Permit2 spends the nonce of an owner whatever the token: the key is (chain, owner, nonce).
        return { payload: { method: 'permit2', payload: permit }, key: `${chainId}:permit2:${permit.from.toLowerCase()}:${permit.nonce}` }
      }
      const payload = parseExactEvmPayload(raw)
      // The requirements' addresses are named before the payload's shape, as verify always did.
      if ('reason' in payload) return { refusal: invalid(addressRejection(ctx, payload) ?? payload, undefined) }
      const { from, nonce } = payload.authorization
      return { payload: { method: 'eip3009', payload }, key: `${chainId}:${ctx.asset.toLowerCase()}:${from.toLowerCase()}:${nonce.toLowerCase()}` }
    },

    async verify(ctx, parsed, reservation): Promise<Verdict<ExactPayment>> {
      const runtime = runtimeOf(ctx)
      if (parsed.method === 'permit2') return checkPermit(ctx, runtime, parsed.payload, reservation?.slot)
      return check(ctx, runtime, parsed.payload, reservation?.slot)
    },

    // A Permit2 nonce may have been settled for an upto usage of zero: nothing on chain shows it.
    spendableWithoutTransaction: (_ctx, parsed) => parsed.method === 'permit2',

    reserveSettlement(ctx): SignerReservation {
      return reserveSlot(pickSigner(runtimeOf(ctx)), `every signer of ${ctx.network} has ${maxInFlight} settlements in flight; retry shortly`)
    },

    async settle(ctx, verified, journal, reservation): Promise<SettleResponse> {
      const runtime = runtimeOf(ctx)
      if (verified.method === 'permit2') return settlePermit(ctx, runtime, verified, journal, reservation)
      return settleAuthorization(ctx, runtime, verified, journal, reservation)
    },

    async resume(ctx, parsed, record): Promise<SettleResponse> {
      return resumeSettlement(ctx, parsed.method === 'permit2' ? parsed.payload.from : parsed.payload.authorization.from, record)
    },
  }

  // upto: Permit2 payments through the upto proxy, sent by the signer the payer's witness names.
  /** The slot of the signer an upto payload names (undefined when none of ours). */
  const uptoSlot = (runtime: NetworkRuntime, payload: UptoPayload): SignerSlot | undefined => runtime.signers.find((slot) => sameAddress(slot.signer.address, payload.facilitator))

  async function checkUpto(ctx: PaymentContext, runtime: NetworkRuntime, permit: UptoPayload): Promise<Verdict<UptoPayment>> {
    const payment = await prepareUpto(ctx, runtime, prepareOptions, permit)
    if ('reason' in payment) return refused(payment, permit.from)
    const slot = uptoSlot(runtime, payment.payload)!
    const fees = await verifyFees(runtime, ctx.signal)
    const verdict = await withDeadline(checkPermit2State(runtime, payment, { from: slot.signer.address, fees }, maxSettlementGas), ctx.signal).catch((error: unknown) =>
      Promise.reject(leftOutIfUnfunded(runtime, slot, error)),
    )
    if (verdict.rejection) return refused(asUptoRejection(verdict.rejection), permit.from)
    const account = `${runtime.chainId}:${ctx.asset.toLowerCase()}:${payment.payer.toLowerCase()}`
    // Sent without the permit when the allowance covers the maximum (see Permit2Verdict.permitUnneeded).
    const sent = verdict.permitUnneeded ? { ...payment, permit2612: undefined, settleCalldata: uptoSettleCalldata(payment.payload, chargedBy(ctx, payment.payload)) } : payment
    return {
      response: { isValid: true, payer: payment.payer },
      payment: { payment: sent, simulated: { from: slot.signer.address, fees, data: payment.settleCalldata, at: Date.now() } },
      // Held: what this request charges (a verify's is the maximum, a settle's the usage).
      spend: { account, amount: ctx.amount, balance: verdict.balance ?? 0n },
    }
  }

  async function settleUpto(ctx: PaymentContext, runtime: NetworkRuntime, verified: UptoPayment, journal: SettleJournal, reservation: SignerReservation | undefined): Promise<SettleResponse> {
    const { payload } = verified.payment
    const payer = payload.from
    const expired = preparedWindow(verified.payment, prepareOptions)
    if (expired) return failure(ctx, expired, payer)
    const charge = ctx.amount
    if (charge > payload.amount) {
      return failure(ctx, { reason: UPTO_REJECTION.settlementExceedsAmount, message: `the amount to settle ${charge} exceeds the permitted maximum ${payload.amount}` }, payer)
    }
    // Nothing used, nothing sent: the permit's nonce stays unspent on chain (this facilitator still settles it at most once).
    if (charge === 0n) return { success: true, transaction: '', network: ctx.wireNetwork, ...(payer ? { payer } : {}), amount: '0' }
    // Only the signer the witness names may call the upto proxy; a reservation of another one is not used.
    return onSigner(uptoSlot(runtime, payload)!, reservation, (slot) => {
      // The exact transaction (the charged amount, this signer, these fees) runs as eth_call before it is
      // sent: the calldata prepareUpto built for this charge (ctx.amount), without the permit when unneeded.
      const call = { to: X402_UPTO_PERMIT2_PROXY, data: verified.payment.settleCalldata, payee: verified.payment.payee }
      return sendProxySettlement(ctx, runtime, slot, call, verified.simulated, journal, { asRejection: asUptoRejection, payer })
    })
  }

  /** Every upto settle answer carries the amount: the charge when it landed (or may land), otherwise 0. */
  const withAmount = (ctx: PaymentContext, response: SettleResponse): SettleResponse =>
    response.amount !== undefined ? response : { ...response, amount: response.success || response.errorReason === REJECTION.settlementPending ? String(ctx.amount) : '0' }

  const upto: SchemeAdapter<UptoPayload, UptoPayment, SignerReservation> = {
    scheme: 'upto',
    family: 'eip155',
    settleSetsAmount: true,
    networks: [...runtimes.values()].map((r) => ({ ...r.network, extra: { facilitatorAddress: r.signers[0]!.signer.address } })),
    versions: [2],
    // Readiness and connections belong to the exact adapter (the same networks and signers).
    signers: () => signerAddresses,
    extensions: [EIP2612_GAS_SPONSORING],

    parse(ctx): Parsed<UptoPayload> {
      const { chainId } = runtimeOf(ctx)
      const permit = parseUptoPayload(ctx.payload.payload)
      if ('reason' in permit) return { refusal: invalid(permit, undefined) }
      // The same identity as exact through Permit2: Permit2 spends an owner's nonce whatever the proxy.
      return { payload: permit, key: `${chainId}:permit2:${permit.from.toLowerCase()}:${permit.nonce}` }
    },

    verify(ctx, permit): Promise<Verdict<UptoPayment>> {
      return checkUpto(ctx, runtimeOf(ctx), permit)
    },

    // A usage of zero settles with no transaction: only the store knows the nonce is spent.
    spendableWithoutTransaction: () => true,

    /** `payload`: the parsed payload, when the caller has it (otherwise read again from `ctx`). */
    reserveSettlement(ctx, payload: UptoPayload | Rejection = parseUptoPayload(ctx.payload.payload)): SignerReservation {
      // A payload naming none of our signers is refused by verify; nothing to reserve.
      const slot = 'reason' in payload ? undefined : uptoSlot(runtimeOf(ctx), payload)
      if (!slot) return { slot: undefined, release() {} }
      return reserveSlot(slot, `the signer ${slot.signer.address} named by this upto payment has ${maxInFlight} settlements in flight; retry shortly`)
    },

    async settle(ctx, verified, journal, reservation): Promise<SettleResponse> {
      return withAmount(ctx, await settleUpto(ctx, runtimeOf(ctx), verified, journal, reservation))
    },

    async resume(ctx, permit, record): Promise<SettleResponse> {
      return withAmount(ctx, await resumeSettlement(ctx, permit.from, record))
    },
  }

  // RPC URLs often carry API keys and viem quotes them in its errors: no cause chain leaves with one.
  const secrets = config.networks.flatMap((entry) => entry.rpcUrls.flatMap(secretsOfUrl))
  return { exact: withRedactedErrors(adapter, secrets), upto: withRedactedErrors(upto, secrets) }

  /**
   * The gas limit and fees of a settlement not sent with the fixed limit (a token outside the known table,
   * a payer with code), or a rejection, so that nothing is sent that the chain would revert:
   * - a token outside the known table paid with a plain signature goes at `maxSettlementGas` (unused gas is
   *   not paid for; one limit for all of them, so they share the send lane's batches), after the exact
   *   transaction (signer, fees, that limit) runs as `eth_call` with the proof of what reaches payTo, unless
   *   verify ran that very call (same signer, fees and calldata) less than SIMULATION_REUSE_MS ago, as for
   *   a Permit2 payment (see sendProxySettlement);
   * - anything else by its estimate (verify's, when it ran as this signer) with headroom, never above
   *   `maxSettlementGas`, then the exact transaction run as `eth_call`. An undeployed ERC-6492 wallet is
   *   priced before its deployment is sent, and deployed first.
   */
  async function estimatedGas(
    runtime: NetworkRuntime,
    slot: SignerSlot,
    payment: PreparedPayment,
    verified: { readonly estimate?: VerifiedPayment['estimate']; readonly simulated?: VerifiedSimulation },
    signal: AbortSignal,
    /** The cost of a wallet deployment sent first (it is the facilitator's, whatever becomes of the payment). */
    spent: (cost: bigint) => void,
  ): Promise<{ gas: bigint; fees: FeeQuote } | Rejection> {
    const from = slot.signer.address
    let sender: SettlementSender = { from, fees: await withDeadline(runtime.fees(), signal).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the gas fees'))) }
    if (!payment.knownToken && payment.kind === 'eoa' && !payment.deployment) {
      const gas = maxSettlementGas
      if (ranJustNow(verified.simulated, { from, data: payment.transferCalldata, fees: sender.fees })) {
        return { gas, fees: sender.fees }
      }
      const transfer = { to: payment.asset, data: payment.transferCalldata }
      const run = await simulateSettlement(runtime, sender, { ...transfer, gas }, signal, runtime.freshFees, payment.payee)
      if (!run.rejection) return { gas, fees: run.fees }
      if (run.rejection.reason !== EVM_REJECTION.simulationFailed) return run.rejection
      // Only on this failing path (nothing is sent): an estimate tells a price above the cap from a revert, as verify names it.
      const priced = await withDeadline(estimateSettlementGas(runtime, { from, fees: run.fees }, transfer, maxSettlementGas), signal)
      return 'rejection' in priced && priced.rejection.reason === EVM_REJECTION.settlementGasTooHigh ? priced.rejection : run.rejection
    }
    /** What estimates as `sender` answered (they run again once with a fresh quote when the node finds the fees below its base fee). */
    const answered = async (estimating: () => readonly Promise<GasEstimate>[]): Promise<({ gas: bigint } | { rejection: Rejection })[]> => {
      let outcomes = await withDeadline(Promise.all(estimating()), signal)
      if (outcomes.some((outcome) => 'staleFees' in outcome)) {
        sender = { from, fees: await withDeadline(runtime.freshFees(), signal).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the gas fees'))) }
        outcomes = await withDeadline(Promise.all(estimating()), signal)
      }
      return outcomes.map((outcome) => {
        if ('fault' in outcome) throw outcome.fault
        if ('staleFees' in outcome) throw new FacilitatorError('rpc_error', 'estimating the settlement gas: the node refused a fresh fee quote as below its base fee')
        return outcome
      })
    }
    const transfer = { to: payment.asset, data: payment.transferCalldata }
    let transferGas = verified.estimate?.from === from ? verified.estimate.gas : undefined
    const deployment = payment.deployment
    if (deployment && !(await hasCode(runtime, payment.payer, signal))) {
      if (!deployWallets) {
        return NOT_DEPLOYING
      }
      const [deploymentGas, bothGas] = await answered(() => estimateDeployment(runtime, sender, deployment, transfer, { maxDeploymentGas, maxSettlementGas }))
      const price = deploymentPrice(deploymentGas!, bothGas!, maxSettlementGas)
      if ('rejection' in price) return price.rejection
      // The deployment is not the payment: nothing to journal, and a repeat is harmless.
      const deploymentLimit = withHeadroom(price.deploymentGas)
      const gas = deploymentLimit < maxDeploymentGas ? deploymentLimit : maxDeploymentGas
      const sent = await signAndSend(runtime, slot, { to: deployment.factory, data: deployment.data, gas, fees: sender.fees }, signal, async () => undefined)
      const outcome = await awaitReceipt(runtime, sent.hash, sent.raw, receiptOptions(signal), rebroadcastIntervalMs)
      if (outcome.status !== 'pending' && outcome.cost !== undefined) spent(outcome.cost)
      if (outcome.status === 'pending') {
        throw new FacilitatorError('rpc_timeout', 'the payer wallet deployment was not confirmed in time; nothing was paid, retry later')
      }
      if (outcome.status === 'reverted') return { reason: EVM_REJECTION.undeployedWallet, message: 'deploying the payer\'s smart wallet reverted' }
      transferGas = undefined
    }
    if (transferGas === undefined) {
      const priced = (await answered(() => [estimateSettlementGas(runtime, sender, transfer, maxSettlementGas)]))[0]!
      if ('rejection' in priced) return priced.rejection
      transferGas = priced.gas
    }
    // The cap also bounds the limit sent: a payment that costs more on chain than in the estimate runs out of gas at the cap.
    const headroom = withHeadroom(transferGas)
    const gas = headroom < maxSettlementGas ? headroom : maxSettlementGas
    // The transaction exactly as it will be sent: a wallet may answer otherwise at this limit than in the estimate's search.
    // A token outside the known table: the same run proves that payTo is credited with exactly the value.
    const simulated = await simulateSettlement(runtime, sender, { ...transfer, gas }, signal, runtime.freshFees, payment.payee)
    if (simulated.rejection) return simulated.rejection
    return { gas, fees: simulated.fees }
  }
}

/** The exact scheme's payload as parsed, by how it moves the tokens: an EIP-3009 authorization or a Permit2 permit. */
export type ExactPayload = { readonly method: 'eip3009'; readonly payload: ExactEvmPayload } | { readonly method: 'permit2'; readonly payload: Permit2Payload }

/** What a valid verify of an exact payment hands its settle, by transfer method. */
export type ExactPayment = ({ readonly method: 'eip3009' } & VerifiedPayment) | ({ readonly method: 'permit2' } & VerifiedPermit2)

/** What a valid verify of an upto payment hands its settle. */
export interface UptoPayment extends VerifiedPermit2 {
  readonly payment: PreparedPermit2 & { readonly payload: UptoPayload }
}

/** A settlement slot held on a signer (`undefined`: an upto payload naming none of ours, refused by verify). */
export interface SignerReservation extends SettleReservation {
  readonly slot: SignerSlot | undefined
}

/** The cached fee quote for a verify's simulation (only the very first verify waits for one to be read). */
async function verifyFees(runtime: NetworkRuntime, signal: AbortSignal): Promise<FeeQuote> {
  const quote = runtime.cachedFees()
  return quote instanceof Promise ? withDeadline(quote, signal).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the gas fees'))) : quote
}

/**
 * Runs a settle's sending on `slot`: a slot the core reserved for this settle is already counted;
 * any other (a direct call, or an upto signer other than the one reserved) is counted meanwhile.
 */
async function onSigner<T>(slot: SignerSlot, reservation: SignerReservation | undefined, work: (slot: SignerSlot) => Promise<T>): Promise<T> {
  const counted = slot !== reservation?.slot
  if (counted) slot.inFlight++
  try {
    return await work(slot)
  } finally {
    if (counted) slot.inFlight--
  }
}

/** A verify's refusal, naming the payer when the payload names one. */
function refused(rejection: Rejection, payer: string | undefined): Verdict<never> {
  return { response: invalid(rejection, payer) }
}

function invalid(rejection: Rejection, payer: string | undefined): VerifyResponse {
  return { isValid: false, invalidReason: rejection.reason, invalidMessage: rejection.message, ...(payer ? { payer } : {}) }
}

/** What a valid verify of a Permit2 payment hands its settle. */
interface VerifiedPermit2 {
  readonly payment: PreparedPermit2
  /** The proxy call verify ran as `eth_call` at `maxSettlementGas`: its sender, fees and calldata. */
  readonly simulated: VerifiedSimulation
}

interface VerifiedSimulation {
  readonly from: Address
  readonly fees: FeeQuote
  readonly data: Hex
  /** When the simulation's answer was read (ms since the epoch): an older one is run again before sending. */
  readonly at: number
}

/**
 * How old verify's simulation may be for settle to send without running it again: the core's verify
 * right before a settle is milliseconds old; one from a call that waited on another's claim is not.
 */
const SIMULATION_REUSE_MS = 2_000

/** Whether verify's simulation ran this very call (signer, calldata, fees) less than SIMULATION_REUSE_MS ago. */
function ranJustNow(verified: VerifiedSimulation | undefined, call: { from: Address; data: Hex; fees: FeeQuote }): boolean {
  return verified !== undefined && verified.from === call.from && verified.data === call.data && sameFees(verified.fees, call.fees) && Date.now() - verified.at <= SIMULATION_REUSE_MS
}

function sameFees(a: FeeQuote, b: FeeQuote): boolean {
  if ('gasPrice' in a || 'gasPrice' in b) return 'gasPrice' in a && 'gasPrice' in b && a.gasPrice === b.gasPrice
  return a.maxFeePerGas === b.maxFeePerGas && a.maxPriorityFeePerGas === b.maxPriorityFeePerGas
}

/** A failed simulation of an upto settlement carries the upto code. */
function asUptoRejection(rejection: Rejection): Rejection {
  return rejection.reason === EVM_REJECTION.simulationFailed || rejection.reason === PERMIT2_REJECTION.simulationFailed
    ? { reason: UPTO_REJECTION.simulationFailed, message: rejection.message }
    : rejection
}

/** A failed simulation of a Permit2 settlement carries the Permit2 code. */
function asPermitRejection(rejection: Rejection): Rejection {
  return rejection.reason === EVM_REJECTION.simulationFailed ? { reason: PERMIT2_REJECTION.simulationFailed, message: rejection.message } : rejection
}

/** What a valid verify of an EIP-3009 payment hands its settle. */
interface VerifiedPayment {
  readonly payment: PreparedPayment
  /** The gas verify's estimate gave, and the signer it ran as (a payment priced by an estimate). */
  readonly estimate: { readonly gas: bigint; readonly from: Address } | undefined
  /** The transfer verify ran as `eth_call` at `maxSettlementGas` with the payee proof (a token outside the known table, plain signature). */
  readonly simulated: VerifiedSimulation | undefined
}

/**
 * A signer the node would not let pay for the gas of a simulation is left out for a while, as
 * one refused at sending is, so that settles pick the others meanwhile. Returns the error.
 */
function leftOutIfUnfunded(runtime: NetworkRuntime, slot: SignerSlot, error: unknown): unknown {
  if (error instanceof FacilitatorError && error.code === 'signer_unfunded') runtime.leaveOutUnfunded(slot)
  return error
}

/**
 * One network's readiness, in one parallel round: the RPC answers with the configured chain id,
 * Multicall3 has code where configured (every verify calls it), each signer holds at least
 * `minBalance` wei. Never throws; never names an RPC URL.
 */
async function networkReadiness(runtime: NetworkRuntime, minBalance: bigint, signal: AbortSignal): Promise<ReadinessCheck[]> {
  const network = runtime.network.caip2
  const ask = <T>(request: Promise<T>) => withDeadline(request, signal).then((value) => ({ value }), (error: unknown) => ({ error }))
  const [chainId, code, ...balances] = await Promise.all([
    ask(runtime.client.request({ method: 'eth_chainId' })),
    ask(runtime.client.request({ method: 'eth_getCode', params: [runtime.multicall3, 'latest'] })),
    ...runtime.signers.map((slot) => ask(runtime.client.request({ method: 'eth_getBalance', params: [slot.signer.address, 'latest'] }))),
  ])
  const why = (outcome: { error: unknown }) => (signal.aborted ? 'timeout' : toRpcFault(outcome.error, 'checking readiness').code)
  const checks: ReadinessCheck[] = []
  if ('error' in chainId!) {
    checks.push({ name: `rpc ${network}`, ok: false, detail: why(chainId) })
    return checks
  }
  const served = Number(BigInt(chainId.value as string))
  checks.push(served === runtime.chainId ? { name: `rpc ${network}`, ok: true } : { name: `rpc ${network}`, ok: false, detail: `the RPC serves chain ${served}, not ${runtime.chainId}` })
  checks.push(
    'error' in code!
      ? { name: `multicall3 ${network}`, ok: false, detail: why(code) }
      : code.value && code.value !== '0x'
        ? { name: `multicall3 ${network}`, ok: true }
        : { name: `multicall3 ${network}`, ok: false, detail: `no contract at ${runtime.multicall3}: deploy Multicall3 there or set the network's multicall3 option` },
  )
  runtime.signers.forEach((slot, index) => {
    const name = `signer ${slot.signer.address} ${network}`
    const balance = balances[index]!
    if ('error' in balance) return checks.push({ name, ok: false, detail: why(balance) })
    const wei = BigInt(balance.value as string)
    const signer = { network, address: slot.signer.address, balance: wei.toString(), minimum: minBalance.toString() }
    checks.push(wei >= minBalance ? { name, ok: true, detail: `${wei} wei`, signer } : { name, ok: false, detail: `${wei} wei, below ${minBalance}`, signer })
  })
  return checks
}

/**
 * Addresses that EIP-712 hashing would refuse (a mixed-case address with a wrong
 * checksum): a rejection of the payment, not a crash of the facilitator.
 */
function addressRejection(ctx: PaymentContext, payload: ExactEvmPayload | Rejection): Rejection | undefined {
  for (const [field, value] of [['asset', ctx.asset], ['payTo', ctx.payTo]] as const) {
    if (!isAddress(value, { strict: true })) {
      return { reason: EVM_REJECTION.invalidRequirements, message: `paymentRequirements.${field} is not a valid address (wrong length or checksum)` }
    }
  }
  if ('reason' in payload) return undefined // preparePayment names what is wrong with it
  for (const field of ['from', 'to'] as const) {
    if (!isAddress(payload.authorization[field], { strict: true })) {
      return { reason: EVM_REJECTION.invalidPayload, message: `paymentPayload.payload.authorization.${field} is not a valid address (wrong length or checksum)` }
    }
  }
  return undefined
}

// Limits rounded up to this step: settlements of one kind then share a limit, and so a batch of the send lane
// (which holds transactions of one gas limit and fees, see send-lane.ts). Unused gas is not paid for.
const GAS_LIMIT_STEP = 10_000n

// A payment may cost more in the mined block than in the estimate (state moves, warm and cold slots).
function withHeadroom(estimate: bigint): bigint {
  const limit = (estimate * 5n) / 4n
  return ((limit + GAS_LIMIT_STEP - 1n) / GAS_LIMIT_STEP) * GAS_LIMIT_STEP
}

async function hasCode(runtime: NetworkRuntime, address: Address, signal: AbortSignal): Promise<boolean> {
  const code = await withDeadline(runtime.client.request({ method: 'eth_getCode', params: [address, 'latest'] }), signal).catch((error: unknown) => {
    throw toRpcFault(error, 'reading the payer wallet')
  })
  return code !== undefined && code !== '0x'
}

function answer(ctx: PaymentContext, transaction: Hex, outcome: ReceiptOutcome, payer: string | undefined): SettleResponse {
  if (outcome.status !== 'pending' && outcome.cost !== undefined) addCost(ctx, outcome.cost)
  switch (outcome.status) {
    case 'success':
      return { success: true, transaction, network: ctx.wireNetwork, ...(payer ? { payer } : {}) }
    case 'reverted':
      return settleFailure(ctx, REJECTION.transactionFailed, `the settlement transaction reverted in block ${outcome.blockNumber}`, payer, transaction)
    case 'pending':
      return settlementPending(ctx, transaction, payer)
  }
}

/** Adds a mined transaction's cost (wei) to what this settle spent (see `PaymentContext.cost`). */
function addCost(ctx: PaymentContext, cost: bigint): void {
  ctx.cost = (ctx.cost ?? 0n) + cost
}

function failure(ctx: PaymentContext, rejection: Rejection, payer: string | undefined, transaction = ''): SettleResponse {
  return settleFailure(ctx, rejection.reason, rejection.message, payer, transaction)
}

/** The signed bytes of a journaled transaction, to offer again if the node loses them. */
function rawOf(record: BroadcastRecord): Hex | undefined {
  return record.raw === undefined ? undefined : asHash(record.raw)
}

function asHash(value: string): Hex {
  if (!/^0x[0-9a-fA-F]*$/.test(value)) throw new FacilitatorError('internal_error', 'a recorded transaction is not hex')
  return `0x${value.slice(2)}`
}
