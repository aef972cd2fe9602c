/**
 * What the batch-settlement adapter asks of one EVM network: the channel snapshot in one eth_call
 * (the contract's own `multicall` over channels, pendingWithdrawals and refundNonce), token reads,
 * and transactions sent through the network's EVM runtime (see ../chain/network-runtime.ts): the
 * signer's nonces, send lane, journaled sender slots and receipt poller that exactEvm and uptoEvm
 * of the same setup use too, so one key serves every scheme without nonce clashes and a
 * journaled nonce is re-sent after a restart before it is handed out again. A transaction also
 * waits for the outcome of the previous one on each of its subjects (channels, a receiver's token),
 * so a sweep queued behind a claim of its receiver finds the claim landed.
 */
import { decodeFunctionResult, encodeFunctionData, type Address, type Hex, type LocalAccount, type PublicClient, type TransactionReceipt } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { BroadcastRecord, SettleJournal } from '../../core/adapter.js'
import { awaitReceipt } from '../chain/await-receipt.js'
import type { NetworkRuntime, SignerSlot } from '../chain/network-runtime.js'
import type { ReceiptOutcome, ReceiptWait } from '../chain/receipt-poller.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { resend, signAndSend } from '../chain/send-transaction.js'
import { batchSettlementAbi } from './abi.js'
import { BATCH_SETTLEMENT_ADDRESS } from './constants.js'
import type { ChannelSnapshot } from './codec.js'

/** A facilitator key: its address and offline transaction signing (a viem LocalAccount fits). */
export type BatchSettlementSigner = Pick<LocalAccount, 'address' | 'signTransaction'>

const erc20Abi = [
  { type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'account', type: 'address' }], outputs: [{ type: 'uint256' }] },
  { type: 'function', name: 'allowance', stateMutability: 'view', inputs: [{ name: 'owner', type: 'address' }, { name: 'spender', type: 'address' }], outputs: [{ type: 'uint256' }] },
] as const

/** A transaction ready to send: where, what, and the gas its simulation (estimate) took. */
export interface PreparedCall {
  readonly to: Address
  readonly data: Hex
  readonly gas: bigint
}

/** What became of a sent transaction within the wait bound. */
export type Outcome =
  | { readonly state: 'mined'; readonly receipt: TransactionReceipt; readonly cost?: bigint }
  | { readonly state: 'pending'; readonly transaction: Hex }
  | { readonly state: 'dropped'; readonly transaction: Hex }
  | { readonly state: 'refused'; readonly reason: string; readonly message?: string }

/** A check run in the subjects' lane right before signing: a refusal there sends and journals nothing. */
export type Recheck = () => Promise<{ readonly reason: string; readonly message?: string } | undefined>

/** How settles wait for receipts on this network (the EVM setup's bounds). */
export interface BatchSendOptions {
  receiptOptions(signal: AbortSignal): ReceiptWait
  readonly rebroadcastIntervalMs: number
  /** The most gas a settle transaction may take: a larger estimate is refused before sending. */
  readonly maxGas: bigint
}

export class BatchChain {
  readonly client: PublicClient
  readonly chainId: number
  readonly maxGas: bigint
  private readonly lanes = new Map<string, Promise<unknown>>()

  constructor(
    readonly runtime: NetworkRuntime,
    private readonly options: BatchSendOptions,
  ) {
    this.client = runtime.client
    this.chainId = runtime.chainId
    this.maxGas = options.maxGas
  }

  /** The channel's on-chain state in one eth_call. Throws `rpc_error` when the node does not answer it. */
  async readChannel(channelId: Hex): Promise<ChannelSnapshot> {
    const calls = [
      encodeFunctionData({ abi: batchSettlementAbi, functionName: 'channels', args: [channelId] }),
      encodeFunctionData({ abi: batchSettlementAbi, functionName: 'pendingWithdrawals', args: [channelId] }),
      encodeFunctionData({ abi: batchSettlementAbi, functionName: 'refundNonce', args: [channelId] }),
    ]
    try {
      const { data } = await this.client.call({ to: BATCH_SETTLEMENT_ADDRESS, data: encodeFunctionData({ abi: batchSettlementAbi, functionName: 'multicall', args: [calls] }) })
      if (!data) throw new Error('no code at the batch-settlement address')
      const results = decodeFunctionResult({ abi: batchSettlementAbi, functionName: 'multicall', data })
      const [balance, totalClaimed] = decodeFunctionResult({ abi: batchSettlementAbi, functionName: 'channels', data: results[0]! })
      const [, initiatedAt] = decodeFunctionResult({ abi: batchSettlementAbi, functionName: 'pendingWithdrawals', data: results[1]! })
      const refundNonce = decodeFunctionResult({ abi: batchSettlementAbi, functionName: 'refundNonce', data: results[2]! })
      return { channelId, balance, totalClaimed, withdrawRequestedAt: Number(initiatedAt), refundNonce }
    } catch (error) {
      throw new FacilitatorError('rpc_error', `reading batch-settlement channel ${channelId} failed`, { cause: error })
    }
  }

  /** Each channel's claimed total, in one eth_call (the contract's own multicall). */
  async claimedTotals(channelIds: readonly Hex[]): Promise<bigint[]> {
    const calls = channelIds.map((id) => encodeFunctionData({ abi: batchSettlementAbi, functionName: 'channels', args: [id] }))
    try {
      const { data } = await this.client.call({ to: BATCH_SETTLEMENT_ADDRESS, data: encodeFunctionData({ abi: batchSettlementAbi, functionName: 'multicall', args: [calls] }) })
      if (!data) throw new Error('no code at the batch-settlement address')
      return decodeFunctionResult({ abi: batchSettlementAbi, functionName: 'multicall', data }).map((result) => decodeFunctionResult({ abi: batchSettlementAbi, functionName: 'channels', data: result })[1])
    } catch (error) {
      throw new FacilitatorError('rpc_error', 'reading batch-settlement channels failed', { cause: error })
    }
  }

  balanceOf(token: Address, owner: Address): Promise<bigint> {
    return this.client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })
  }

  allowance(token: Address, owner: Address, spender: Address): Promise<bigint> {
    return this.client.readContract({ address: token, abi: erc20Abi, functionName: 'allowance', args: [owner, spender] })
  }

  /** The receiver's claimed and settled totals for `token`. */
  async receiverTotals(receiver: Address, token: Address): Promise<{ totalClaimed: bigint; totalSettled: bigint }> {
    const [totalClaimed, totalSettled] = await this.client.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'receivers', args: [receiver, token] })
    return { totalClaimed, totalSettled }
  }

  /**
   * Simulates `data` from `from` by estimating its gas: a call that would revert answers
   * `{ revert }` with the node's reason and nothing is sent later.
   */
  async simulate(from: Address, data: Hex, to: Address = BATCH_SETTLEMENT_ADDRESS): Promise<PreparedCall | { revert: string }> {
    try {
      const gas = await this.client.estimateGas({ account: from, to, data })
      if (gas > this.maxGas) return { revert: `the transaction needs ${gas} gas, more than maxSettlementGas ${this.maxGas}` }
      const padded = (gas * 12n) / 10n
      return { to, data, gas: padded > this.maxGas ? this.maxGas : padded }
    } catch (error) {
      const message = error instanceof Error ? ((error as { shortMessage?: string }).shortMessage ?? error.message) : String(error)
      if (/revert/i.test(message)) return { revert: message.slice(0, 300) }
      throw new FacilitatorError('rpc_error', 'simulating the batch-settlement transaction failed', { cause: error })
    }
  }

  /**
   * Signs and sends `call` from `slot` (its nonce, lane and journaled slot, as every EVM settle)
   * once the previous transaction of each of `subjects` (channels, a receiver's token) has its
   * outcome and `recheck` still finds it worth sending, after `journal.broadcasting` recorded it;
   * then waits for the receipt within the bound.
   */
  send(slot: SignerSlot, call: PreparedCall, journal: SettleJournal, signal: AbortSignal, recheck?: Recheck, subjects: readonly string[] = []): Promise<Outcome> {
    const keys = [...new Set(subjects.map((s) => `subject:${s.toLowerCase()}`))]
    const previous = Promise.all(keys.map((key) => (this.lanes.get(key) ?? Promise.resolve()).catch(() => undefined)))
    const run = previous.then(async (): Promise<Outcome> => {
      const refusal = recheck ? await recheck() : undefined
      if (refusal) return { state: 'refused', ...refusal }
      return this.sendNow(slot, call, journal, signal)
    })
    const settled: Promise<unknown> = run.catch(() => undefined).then(() => {
      // A lane nobody queued behind since is dropped, so channel and receiver lanes do not pile up.
      for (const key of keys) if (this.lanes.get(key) === settled) this.lanes.delete(key)
    })
    for (const key of keys) this.lanes.set(key, settled)
    return run
  }

  private async sendNow(slot: SignerSlot, call: PreparedCall, journal: SettleJournal, signal: AbortSignal): Promise<Outcome> {
    signal.throwIfAborted()
    const sent = await signAndSend(this.runtime, slot, { to: call.to, data: call.data, gas: call.gas }, signal, (record) => journal.broadcasting(record))
    return this.outcome(sent.hash, await awaitReceipt(this.runtime, sent.hash, sent.raw, this.options.receiptOptions(signal), this.options.rebroadcastIntervalMs))
  }

  /**
   * Finishes a journaled transaction as exactEvm's resume does: its receipt when mined, its bytes
   * again when the node never saw them, `dropped` when its nonce went to another transaction.
   */
  async resume(record: BroadcastRecord, signal: AbortSignal): Promise<Exclude<Outcome, { state: 'refused' }>> {
    const hash = asHex(record.transaction)
    const raw = record.raw === undefined ? undefined : asHex(record.raw)
    const quick = { ...this.options.receiptOptions(signal), timeoutMs: 0 }
    const known = await this.runtime.receipts.wait(hash, quick)
    if (known.status !== 'pending') return this.outcome(hash, known)
    const seen = await this.client.request({ method: 'eth_getTransactionByHash', params: [hash] }).catch((error: unknown) => Promise.reject(toRpcFault(error, 'looking up the settlement transaction')))
    if (!seen && raw && (await resend(this.runtime, raw)) === 'nonce_used') {
      // The key's nonce moved on without it: mined meanwhile, or never to land.
      const late = await this.runtime.receipts.wait(hash, quick)
      return late.status !== 'pending' ? this.outcome(hash, late) : { state: 'dropped', transaction: hash }
    }
    return this.outcome(hash, await awaitReceipt(this.runtime, hash, raw, this.options.receiptOptions(signal), this.options.rebroadcastIntervalMs))
  }

  /** A mined outcome with its full receipt (the events that state what moved); pending while that read fails. */
  private async outcome(hash: Hex, waited: ReceiptOutcome): Promise<Exclude<Outcome, { state: 'refused' }>> {
    if (waited.status === 'pending') return { state: 'pending', transaction: hash }
    const receipt = await this.client.getTransactionReceipt({ hash }).catch(() => undefined)
    if (!receipt) return { state: 'pending', transaction: hash }
    return { state: 'mined', receipt, ...(waited.cost !== undefined ? { cost: waited.cost } : {}) }
  }
}

function asHex(value: string): Hex {
  if (!/^0x[0-9a-fA-F]*$/.test(value)) throw new FacilitatorError('internal_error', 'a recorded transaction is not hex')
  return `0x${value.slice(2)}`
}
