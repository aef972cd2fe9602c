/**
 * The `batch-settlement` adapter over an EVM setup (see ../evm-setup.ts): its networks' runtimes
 * send deposits, claims, sweeps and refunds with the same signers, nonces, send lanes, journaled
 * sender slots and receipt pollers as the exact and upto adapters of that setup.
 */
import { isAddressEqual, zeroAddress, type Address, type Hex, type LocalAccount } from 'viem'
import type { AdapterServices, PaymentContext, SchemeAdapter, Verdict } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { pickSigner } from '../chain/send-transaction.js'
import { reserveSigner, type SignerReservation } from '../chain/signer-reservation.js'
import type { EvmSetup } from '../evm-setup.js'
import { EIP2612_GAS_SPONSORING } from '../permit2/eip2612-extension.js'
import { BatchChain } from './chain.js'
import { createChannelStates } from './channel-states.js'
import type { BatchPayload, ChannelSnapshot, DepositPayload, RefundPayload, VoucherPayload } from './codec.js'
import { snapshotWire } from './codec.js'
import { BATCH_SETTLEMENT_SCHEME } from './constants.js'
import { parseBatchPayload } from './parse.js'
import { batchReadiness } from './readiness.js'
import { BATCH_REJECTION as R } from './reasons.js'
import { checkRefund } from './refund-rules.js'
import { prepareClaim, prepareRefund, prepareSweep, resumeBatch, settleBatch, touchedChannels, type BatchPayment } from './settle-actions.js'
import { checkAgainstState, checkChannelConfig, checkDepositAuthorization, checkVoucherSignature, depositCall, type Refusal } from './verify-channel.js'

/** What the batch-settlement adapter takes besides the setup's networks and signers. */
export interface BatchAdapterOptions {
  readonly receiverAuthorizer?: Pick<LocalAccount, 'address' | 'signTypedData'>
  readonly allowDelegatedRefunds?: boolean
  readonly channelStateTtlMs?: number
  readonly settleMarginSeconds?: number
  readonly maxSettlementGas?: bigint
}

const spendableOf = (balance: bigint, spendable: bigint | undefined): bigint => (spendable !== undefined && spendable < balance ? spendable : balance)

export function createBatchAdapter(setup: EvmSetup, config: BatchAdapterOptions): SchemeAdapter<BatchPayload, BatchPayment, SignerReservation> {
  const ttlMs = config.channelStateTtlMs ?? 2_000
  const margin = config.settleMarginSeconds ?? setup.prepareOptions.settleMarginSeconds
  const authorizer = config.receiverAuthorizer
  const signsRefunds = config.allowDelegatedRefunds === true
  if (config.maxSettlementGas !== undefined && config.maxSettlementGas <= 0n) throw new FacilitatorError('misconfigured', 'batchSettlementEvm: maxSettlementGas must be positive')
  if (authorizer && setup.signerAddresses.some((address) => isAddressEqual(address as Address, authorizer.address))) {
    throw new FacilitatorError('misconfigured', 'batchSettlementEvm: the receiver authorizer must be a key of its own, not a gas signer')
  }
  const sending = { receiptOptions: setup.receiptOptions, rebroadcastIntervalMs: setup.rebroadcastIntervalMs, maxGas: config.maxSettlementGas ?? 1_000_000n }
  const chains = new Map<string, BatchChain>([...setup.runtimes].map(([caip2, runtime]) => [caip2, new BatchChain(runtime, sending)]))
  let services: AdapterServices | undefined
  const states = createChannelStates(ttlMs, () => services?.store)
  const chainOf = (ctx: PaymentContext): BatchChain => {
    const chain = chains.get(ctx.network)
    if (!chain) throw new FacilitatorError('misconfigured', `batchSettlementEvm: batch-settlement is not configured for ${ctx.network}`)
    return chain
  }
  // Channel reads under way, shared by the verifies of one channel that miss at once (a burst when the state expires).
  const reading = new Map<string, Promise<ChannelSnapshot>>()
  const readState = async (chain: BatchChain, id: Hex, allowCached: boolean): Promise<ChannelSnapshot> => {
    if (!allowCached) return readAndRemember(chain, id)
    const cached = await states.fresh(chain.chainId, id)
    if (cached) return cached
    const key = `${chain.chainId}:${id}`
    const joined = reading.get(key)
    if (joined) return joined
    const read = readAndRemember(chain, id).finally(() => reading.delete(key))
    reading.set(key, read)
    return read
  }
  const readAndRemember = async (chain: BatchChain, id: Hex): Promise<ChannelSnapshot> => {
    const readAt = Date.now()
    const state = await chain.readChannel(id)
    await states.remember(chain.chainId, state, readAt)
    return state
  }

  const refuse = (refusal: Refusal, payer?: string): Verdict<BatchPayment> => ({
    response: { isValid: false, invalidReason: refusal.reason, ...(refusal.message ? { invalidMessage: refusal.message } : {}), ...(payer ? { payer } : {}) },
  })

  async function verifyClientPayload(ctx: PaymentContext, payload: DepositPayload | VoucherPayload | RefundPayload, reservation: SignerReservation | undefined): Promise<Verdict<BatchPayment>> {
    const chain = chainOf(ctx)
    const config = payload.channelConfig
    const payer = config.payer
    const id = payload.voucher.channelId
    const max = payload.voucher.maxClaimableAmount
    const configRefusal = checkChannelConfig(ctx, chain.chainId, config, id)
    if (configRefusal) return refuse(configRefusal, payer)
    const signatureRefusal = await checkVoucherSignature(chain, config, id, max, payload.voucher.signature)
    if (signatureRefusal) return refuse(signatureRefusal, payer)

    if (payload.type === 'deposit') {
      const authorized = await checkDepositAuthorization(ctx, chain, payload, margin)
      if ('reason' in authorized) return refuse(authorized, payer)
      const [state, payerBalance] = await Promise.all([readState(chain, id, false), chain.balanceOf(config.token, payer)])
      if (payerBalance < payload.deposit.amount) return refuse({ reason: R.insufficientBalance, message: `the payer holds ${payerBalance}, the deposit is ${payload.deposit.amount}` }, payer)
      const stateRefusal = checkAgainstState('deposit', state, max, ctx.amount, payload.deposit.amount)
      if (stateRefusal) return refuse(stateRefusal, payer)
      const slot = reservation?.slot ?? pickSigner(chain.runtime)
      const simulated = await chain.simulate(slot.signer.address, depositCall(payload, authorized.permit2612).data)
      if ('revert' in simulated) return refuse({ reason: R.depositSimulationFailed, message: simulated.revert }, payer)
      return {
        response: { isValid: true, payer, extra: snapshotWire(state) },
        payment: { kind: 'deposit', payload, call: simulated, slot, subjects: [id], before: state },
        // Through Permit2 the hold is capped by what Permit2 can move (as exact's): racing payments beyond it would revert at our cost.
        spend: { account: `${chain.chainId}:${config.token.toLowerCase()}:${payer.toLowerCase()}`, amount: payload.deposit.amount, balance: spendableOf(payerBalance, authorized.spendable) },
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
    const prepared = await prepareRefund(chain, reservation.slot!, payload, state, authorizer, signsRefunds)
    if ('reason' in prepared) return refuse(prepared, payer)
    return { response: { isValid: true, payer, extra: snapshotWire(state) }, payment: prepared }
  }

  return {
    scheme: BATCH_SETTLEMENT_SCHEME,
    family: 'eip155',
    versions: [2],
    // A Permit2 deposit may carry the payer's EIP-2612 permit to Permit2 (see checkDepositAuthorization).
    extensions: [EIP2612_GAS_SPONSORING],
    networks: [...setup.runtimes.values()].map((r) => ({ caip2: r.network.caip2, ...(authorizer ? { extra: { receiverAuthorizer: authorizer.address } } : {}) })),
    signers: () => setup.signerAddresses,

    parse: (ctx) => parseBatchPayload(ctx.payload.payload, chainOf(ctx).chainId, ctx.asset, (ctx.requirements.extra as Record<string, unknown> | undefined)?.assetTransferMethod),

    // A refund without the server's Refund signature would get ours: only for authenticated callers.
    ...(authorizer && signsRefunds
      ? {
          settleNeedsAuthentication: (_ctx: PaymentContext, payload: BatchPayload) =>
            payload.type === 'refund' && !payload.refundAuthorizerSignature && isAddressEqual(payload.channelConfig.receiverAuthorizer, authorizer.address),
        }
      : {}),

    // The signer with the fewest settlements in flight, `signer_busy` when all hold the bound: as exactEvm.
    reserveSettlement: (ctx) => reserveSigner(pickSigner(chainOf(ctx).runtime), setup.maxInFlight, `every signer of ${ctx.network} has ${setup.maxInFlight} settlements in flight; retry shortly`),

    async verify(ctx, payload, reservation) {
      const chain = chainOf(ctx)
      switch (payload.type) {
        case 'deposit':
        case 'voucher':
        case 'refund':
          return verifyClientPayload(ctx, payload, reservation)
        case 'claim':
        case 'settle': {
          // Server-made payloads are settled, never verified on their own.
          if (!reservation) return refuse({ reason: R.payloadType, message: `a ${payload.type} payload is only settled` })
          const slot = reservation.slot!
          const prepared = payload.type === 'claim' ? await prepareClaim(chain, slot, payload, authorizer) : await prepareSweep(chain, slot, payload)
          if ('reason' in prepared) return refuse(prepared)
          return { response: { isValid: true }, payment: prepared }
        }
      }
    },

    async settle(ctx, payment, journal) {
      const chain = chainOf(ctx)
      const answer = await settleBatch(ctx, chain, payment, journal)
      await states.forget(chain.chainId, payment.kind === 'claim' ? payment.channelIds : payment.kind === 'deposit' || payment.kind === 'refund' ? touchedChannels(payment.payload, chain.chainId) : [])
      if (answer.state) await states.remember(chain.chainId, answer.state)
      return answer.response
    },

    async readiness() {
      const lines = await Promise.all([...chains].map(([network, chain]) => batchReadiness(network, chain, chain.runtime.signers.map((slot) => slot.signer))))
      return lines.flat()
    },

    attach(given) {
      services = given
      setup.attach(given)
    },

    async close() {
      for (const runtime of setup.runtimes.values()) runtime.closeConnections()
    },

    async resume(ctx, payload, record) {
      const chain = chainOf(ctx)
      const answer = await resumeBatch(ctx, chain, payload, record)
      // Whatever this process (or a dead one) remembered of the channels predates the transaction.
      await states.forget(chain.chainId, touchedChannels(payload, chain.chainId))
      if (answer.state) await states.remember(chain.chainId, answer.state)
      return answer.response
    },
  }
}

