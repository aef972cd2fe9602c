import { FacilitatorError } from '../../errors/facilitator-error.js'
/**
 * `batchSettlementEvm()`: the `batch-settlement` scheme on EVM networks (x402 spec
 * `scheme_batch_settlement_evm.md`). Verify checks deposit, voucher and refund payloads and answers
 * the channel snapshot in `extra`; settle sends deposits through the canonical collectors, claims
 * many channels in one `claimWithSignature`, sweeps, and refunds, each simulated first.
 *
 * @example
 * // partial
 * const adapter = batchSettlementEvm({
 *   networks: [{ network: 'eip155:8453', rpcUrls: [process.env.BASE_RPC!] }],
 *   signers: [privateKeyToAccount(process.env.GAS_KEY as Hex)],
 * })
 */
import { isAddressEqual, zeroAddress, type LocalAccount } from 'viem'
import type { PaymentContext, SchemeAdapter, SettleReservation, Verdict } from '../../core/adapter.js'
import { evmChainId, toCaip2, type Caip2Network } from '../../networks/networks.js'
import { BatchChain, type BatchSettlementSigner } from './chain.js'
import type { BatchPayload, ChannelSnapshot, DepositPayload, RefundPayload, VoucherPayload } from './codec.js'
import { snapshotWire } from './codec.js'
import { BATCH_SETTLEMENT_SCHEME } from './constants.js'
import { parseBatchPayload } from './parse.js'
import { checkRefund } from './refund-rules.js'
import { batchReadiness } from './readiness.js'
import { BATCH_REJECTION as R } from './reasons.js'
import { prepareClaim, prepareRefund, prepareSweep, resumeBatch, settleBatch, touchedChannels, type BatchPayment } from './settle-actions.js'
import { checkAgainstState, checkChannelConfig, checkDepositAuthorization, checkVoucherSignature, depositCall, type Refusal } from './verify-channel.js'

/** Configuration of `batchSettlementEvm()`. */
export interface BatchSettlementEvmConfig {
  readonly networks: readonly { readonly network: string; readonly rpcUrls: readonly string[]; readonly signers?: readonly BatchSettlementSigner[] }[]
  /** Keys that send (and pay gas for) deposits, claims, sweeps and refunds on every network without its own. */
  readonly signers?: readonly BatchSettlementSigner[]
  /**
   * A key of the facilitator's own (never a gas signer) that signs `ClaimBatch` and `Refund` for
   * servers that delegate to it: listed as `extra.receiverAuthorizer` in supported(). It signs
   * claims (they only move what payers signed to the channel's receiver); refunds only with
   * `allowDelegatedRefunds`.
   */
  readonly receiverAuthorizer?: Pick<LocalAccount, 'address' | 'signTypedData'>
  /**
   * Sign refunds for channels delegated to `receiverAuthorizer`. The spec requires that such a
   * refund come from the service that created the channel: the HTTP handler settles them only for
   * authenticated callers (`settle_requires_authentication` without an `authenticate` hook), and
   * every authenticated caller must be that service (anyone knowing a channel could close it otherwise).
   * @default false
   */
  readonly allowDelegatedRefunds?: boolean
  /** How long a channel state read stays fresh enough to verify an EOA voucher without the chain. @default 2_000 */
  readonly channelStateTtlMs?: number
  /** Seconds a deposit authorization must stay valid after verify. @default 6 */
  readonly settleMarginSeconds?: number
  /** How long settle waits for a receipt before answering `settlement_pending`. @default 30_000 */
  readonly confirmTimeoutMs?: number
  /**
   * The most gas a deposit, claim, sweep or refund may take: a transaction whose estimate exceeds it
   * is refused (the kind's simulation-failed code) before anything is sent, and no transaction's gas
   * limit goes above it. @default 1_000_000n
   */
  readonly maxSettlementGas?: bigint
  /**
   * Most settlements one signer may have in flight (verify, send and confirmation) on a network.
   * When every signer of the network is at the bound, settle throws `FacilitatorError('signer_busy')`
   * (HTTP 503 with Retry-After) before anything is claimed or sent, as `exactEvm` does. @default unbounded
   */
  readonly maxInFlightSettlesPerSigner?: number
}

interface Reservation extends SettleReservation {
  readonly signer: BatchSettlementSigner
}

export function batchSettlementEvm(config: BatchSettlementEvmConfig): SchemeAdapter<BatchPayload, BatchPayment, Reservation> {
  const ttlMs = config.channelStateTtlMs ?? 2_000
  const margin = config.settleMarginSeconds ?? 6
  const authorizer = config.receiverAuthorizer
  const signsRefunds = config.allowDelegatedRefunds === true
  const runtimes = new Map<Caip2Network, { chain: BatchChain; signers: readonly BatchSettlementSigner[]; inFlight: number[] }>()
  const maxInFlight = config.maxInFlightSettlesPerSigner ?? Number.POSITIVE_INFINITY
  if (!(maxInFlight >= 1)) throw new FacilitatorError('misconfigured', 'batchSettlementEvm: maxInFlightSettlesPerSigner must be at least 1')
  if (config.maxSettlementGas !== undefined && config.maxSettlementGas <= 0n) throw new FacilitatorError('misconfigured', 'batchSettlementEvm: maxSettlementGas must be positive')
  for (const entry of config.networks) {
    const caip2 = toCaip2(entry.network) ?? (entry.network as Caip2Network)
    if (!caip2.startsWith('eip155:')) throw new FacilitatorError('misconfigured', `batchSettlementEvm: batch-settlement serves eip155 networks, not ${entry.network}`)
    const signers = entry.signers ?? config.signers ?? []
    if (signers.length === 0) throw new FacilitatorError('misconfigured', `batchSettlementEvm: batch-settlement on ${caip2} needs at least one signer`)
    if (authorizer && signers.some((s) => isAddressEqual(s.address, authorizer.address))) throw new FacilitatorError('misconfigured', 'batchSettlementEvm: the receiver authorizer must be a key of its own, not a gas signer')
    runtimes.set(caip2, { chain: new BatchChain(evmChainId(caip2), entry.rpcUrls, config.confirmTimeoutMs ?? 30_000, config.maxSettlementGas ?? 1_000_000n), signers, inFlight: signers.map(() => 0) })
  }
  // The last confirmed read of each channel, per network (never optimistic: a deposit counts once mined).
  const states = new Map<string, { state: ChannelSnapshot; at: number }>()

  const runtimeOf = (ctx: PaymentContext) => {
    const runtime = runtimes.get(ctx.network)
    if (!runtime) throw new FacilitatorError('misconfigured', `batchSettlementEvm: batch-settlement is not configured for ${ctx.network}`)
    return runtime
  }
  const remember = (chainId: number, state: ChannelSnapshot) => states.set(`${chainId}:${state.channelId}`, { state, at: Date.now() })
  const forget = (chainId: number, ids: readonly string[]) => {
    for (const id of ids) states.delete(`${chainId}:${id.toLowerCase()}`)
  }
  const readState = async (chain: BatchChain, id: `0x${string}`, allowCached: boolean): Promise<ChannelSnapshot> => {
    const cached = states.get(`${chain.chainId}:${id}`)
    if (allowCached && cached && Date.now() - cached.at < ttlMs) return cached.state
    const state = await chain.readChannel(id)
    remember(chain.chainId, state)
    return state
  }

  const refuse = (refusal: Refusal, payer?: string): Verdict<BatchPayment> => ({
    response: { isValid: false, invalidReason: refusal.reason, ...(refusal.message ? { invalidMessage: refusal.message } : {}), ...(payer ? { payer } : {}) },
  })

  async function verifyClientPayload(ctx: PaymentContext, payload: DepositPayload | VoucherPayload | RefundPayload, reservation: Reservation | undefined): Promise<Verdict<BatchPayment>> {
    const { chain, signers } = runtimeOf(ctx)
    const config = payload.channelConfig
    const payer = config.payer
    const id = payload.voucher.channelId
    const max = payload.voucher.maxClaimableAmount
    const configRefusal = checkChannelConfig(ctx, chain.chainId, config, id)
    if (configRefusal) return refuse(configRefusal, payer)
    const signatureRefusal = await checkVoucherSignature(chain, config, id, max, payload.voucher.signature)
    if (signatureRefusal) return refuse(signatureRefusal, payer)

    if (payload.type === 'deposit') {
      const authRefusal = await checkDepositAuthorization(ctx, chain, payload, margin)
      if (authRefusal) return refuse(authRefusal, payer)
      const [state, payerBalance] = await Promise.all([readState(chain, id, false), chain.balanceOf(config.token, payer)])
      if (payerBalance < payload.deposit.amount) return refuse({ reason: R.insufficientBalance, message: `the payer holds ${payerBalance}, the deposit is ${payload.deposit.amount}` }, payer)
      const stateRefusal = checkAgainstState('deposit', state, max, ctx.amount, payload.deposit.amount)
      if (stateRefusal) return refuse(stateRefusal, payer)
      const signer = reservation?.signer ?? signers[0]!
      const simulated = await chain.simulate(signer.address, depositCall(payload).data)
      if ('revert' in simulated) return refuse({ reason: R.depositSimulationFailed, message: simulated.revert }, payer)
      return {
        response: { isValid: true, payer, extra: snapshotWire(state) },
        payment: { kind: 'deposit', payload, call: simulated, signer, before: state },
        spend: { account: `${chain.chainId}:${config.token.toLowerCase()}:${payer.toLowerCase()}`, amount: payload.deposit.amount, balance: payerBalance },
      }
    }

    // A plain EOA voucher checks against a fresh read without the chain; refunds and ERC-1271 vouchers always read.
    const eoa = !isAddressEqual(config.payerAuthorizer, zeroAddress)
    const state = await readState(chain, id, payload.type === 'voucher' && eoa && reservation === undefined)
    const stateRefusal = checkAgainstState(payload.type, state, max, ctx.amount)
    if (stateRefusal) return refuse(stateRefusal, payer)
    if (payload.type === 'voucher') return { response: { isValid: true, payer, extra: snapshotWire(state) }, payment: { kind: 'voucher' } }
    if (reservation === undefined) {
      const terms = await checkRefund(chain, payload, state, authorizer, signsRefunds)
      if ('reason' in terms) return refuse(terms, payer)
      return { response: { isValid: true, payer, extra: snapshotWire(state) }, payment: { kind: 'voucher' } }
    }
    const prepared = await prepareRefund(chain, reservation.signer, payload, state, authorizer, signsRefunds)
    if ('reason' in prepared) return refuse(prepared, payer)
    return { response: { isValid: true, payer, extra: snapshotWire(state) }, payment: prepared }
  }

  return {
    scheme: BATCH_SETTLEMENT_SCHEME,
    family: 'eip155',
    versions: [2],
    networks: [...runtimes.keys()].map((caip2) => ({ caip2, ...(authorizer ? { extra: { receiverAuthorizer: authorizer.address } } : {}) })),
    signers: () => [...new Set([...runtimes.values()].flatMap((r) => r.signers.map((s) => s.address)))],

    parse: (ctx) => parseBatchPayload(ctx.payload.payload, runtimeOf(ctx).chain.chainId, ctx.asset),

    // A refund without the server's Refund signature would get ours: only for authenticated callers.
    ...(authorizer && signsRefunds
      ? {
          settleNeedsAuthentication: (_ctx: PaymentContext, payload: BatchPayload) =>
            payload.type === 'refund' && !payload.refundAuthorizerSignature && isAddressEqual(payload.channelConfig.receiverAuthorizer, authorizer.address),
        }
      : {}),

    reserveSettlement(ctx) {
      const { signers, inFlight } = runtimeOf(ctx)
      // The signer with the fewest settlements in flight, as exactEvm picks.
      let index = 0
      for (let i = 1; i < signers.length; i++) if (inFlight[i]! < inFlight[index]!) index = i
      if (inFlight[index]! >= maxInFlight) throw new FacilitatorError('signer_busy', `every signer of ${ctx.network} has ${maxInFlight} settlements in flight; retry shortly`)
      inFlight[index]!++
      let held = true
      const release = () => {
        if (held) inFlight[index]!--
        held = false
      }
      return { signer: signers[index]!, release }
    },

    async verify(ctx, payload, reservation) {
      const { chain } = runtimeOf(ctx)
      switch (payload.type) {
        case 'deposit':
        case 'voucher':
        case 'refund':
          return verifyClientPayload(ctx, payload, reservation)
        case 'claim':
        case 'settle': {
          // Server-made payloads are settled, never verified on their own.
          if (!reservation) return refuse({ reason: R.payloadType, message: `a ${payload.type} payload is only settled` })
          const prepared = payload.type === 'claim' ? await prepareClaim(chain, reservation.signer, payload, authorizer) : await prepareSweep(chain, reservation.signer, payload)
          if ('reason' in prepared) return refuse(prepared)
          return { response: { isValid: true }, payment: prepared }
        }
      }
    },

    async settle(ctx, payment, journal) {
      const { chain } = runtimeOf(ctx)
      const answer = await settleBatch(ctx, chain, payment, journal)
      forget(chain.chainId, payment.kind === 'claim' ? payment.channelIds : payment.kind === 'deposit' || payment.kind === 'refund' ? touchedChannels(payment.payload, chain.chainId) : [])
      if (answer.state) remember(chain.chainId, answer.state)
      return answer.response
    },

    async readiness() {
      const lines = await Promise.all([...runtimes].map(([network, runtime]) => batchReadiness(network, runtime.chain, runtime.signers)))
      return lines.flat()
    },

    async resume(ctx, payload, record) {
      const { chain } = runtimeOf(ctx)
      const answer = await resumeBatch(ctx, chain, payload, record)
      // Whatever this process (or a dead one) remembered of the channels predates the transaction.
      forget(chain.chainId, touchedChannels(payload, chain.chainId))
      if (answer.state) remember(chain.chainId, answer.state)
      return answer.response
    },
  }
}

export type { BatchSettlementSigner }
