/**
 * What the batch-settlement adapter asks of one EVM network: the channel snapshot in one eth_call
 * (the contract's own `multicall` over channels, pendingWithdrawals and refundNonce), token reads,
 * and transactions sent from the facilitator's keys one at a time per key (a key's next transaction
 * waits for its previous one's receipt, so a sweep never races the claim before it).
 */
import {
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  http,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  fallback,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
} from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { BroadcastRecord, SettleJournal } from '../../core/adapter.js'
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
  | { readonly state: 'mined'; readonly receipt: TransactionReceipt }
  | { readonly state: 'pending'; readonly transaction: Hex }
  | { readonly state: 'dropped'; readonly transaction: Hex }
  | { readonly state: 'refused'; readonly reason: string; readonly message?: string }

/** A check run in the key's lane right before signing: a refusal there sends and journals nothing. */
export type Recheck = () => Promise<{ readonly reason: string; readonly message?: string } | undefined>

export class BatchChain {
  readonly client: PublicClient
  private readonly lanes = new Map<string, Promise<unknown>>()

  constructor(
    readonly chainId: number,
    rpcUrls: readonly string[],
    private readonly receiptTimeoutMs: number,
    /** The most gas a settle transaction may take: a larger estimate is refused before sending. */
    readonly maxGas: bigint = 1_000_000n,
  ) {
    const transports = rpcUrls.map((url) => http(url, { retryCount: 1 }))
    this.client = createPublicClient({ transport: transports.length === 1 ? transports[0]! : fallback(transports), pollingInterval: 100 })
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
   * Signs and sends `call` from `signer` once the previous transaction of the key (and of each of
   * `subjects`: channels, a receiver's token) has its receipt and `recheck` still finds it worth
   * sending, after `journal.broadcasting` recorded it; then waits for the receipt within the bound.
   */
  send(signer: BatchSettlementSigner, call: PreparedCall, journal: SettleJournal, signal: AbortSignal, recheck?: Recheck, subjects: readonly string[] = []): Promise<Outcome> {
    const keys = [signer.address.toLowerCase(), ...subjects.map((s) => `subject:${s.toLowerCase()}`)]
    const previous = Promise.all(keys.map((key) => (this.lanes.get(key) ?? Promise.resolve()).catch(() => undefined)))
    const run = previous.then(async (): Promise<Outcome> => {
      const refusal = recheck ? await recheck() : undefined
      if (refusal) return { state: 'refused', ...refusal }
      return this.sendNow(signer, call, journal, signal)
    })
    const settled: Promise<unknown> = run.catch(() => undefined).then(() => {
      // A lane nobody queued behind since is dropped, so channel and receiver lanes do not pile up.
      for (const key of keys) if (this.lanes.get(key) === settled) this.lanes.delete(key)
    })
    for (const key of keys) this.lanes.set(key, settled)
    return run
  }

  private async sendNow(signer: BatchSettlementSigner, call: PreparedCall, journal: SettleJournal, signal: AbortSignal): Promise<Outcome> {
    signal.throwIfAborted()
    const [nonce, fees] = await Promise.all([this.client.getTransactionCount({ address: signer.address, blockTag: 'pending' }), this.client.estimateFeesPerGas()])
    const raw = await signer.signTransaction({
      type: 'eip1559',
      chainId: this.chainId,
      to: call.to,
      data: call.data,
      gas: call.gas,
      nonce,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    })
    const transaction = keccak256(raw)
    await journal.broadcasting({ transaction, raw })
    try {
      await this.client.sendRawTransaction({ serializedTransaction: raw })
    } catch (error) {
      // The bytes are journaled: a node that already has them, or a flaky answer, is settled by waiting.
      if (!/already known|already imported/i.test(String(error))) {
        const receipt = await this.client.getTransactionReceipt({ hash: transaction }).catch(() => undefined)
        if (!receipt) throw new FacilitatorError('rpc_error', 'sending the batch-settlement transaction failed', { cause: error })
      }
    }
    return this.await({ transaction, raw })
  }

  /** Waits for a journaled transaction (re-sending its bytes when the node lost them); `dropped` when its nonce went elsewhere. */
  async await(record: BroadcastRecord): Promise<Exclude<Outcome, { state: 'refused' }>> {
    const transaction = record.transaction as Hex
    try {
      const receipt = await this.client.waitForTransactionReceipt({ hash: transaction, timeout: this.receiptTimeoutMs, pollingInterval: 100 })
      return { state: 'mined', receipt }
    } catch {
      if (record.raw) {
        const tx = parseTransaction(record.raw as Hex)
        const from = await this.client.getTransactionCount({ address: await recoverSender(record.raw as Hex) }).catch(() => undefined)
        const stillThere = await this.client.getTransaction({ hash: transaction }).catch(() => undefined)
        if (!stillThere && from !== undefined && tx.nonce !== undefined && from > tx.nonce) return { state: 'dropped', transaction }
        if (!stillThere) await this.client.sendRawTransaction({ serializedTransaction: record.raw as Hex }).catch(() => undefined)
      }
      return { state: 'pending', transaction }
    }
  }
}

function recoverSender(raw: Hex): Promise<Address> {
  return recoverTransactionAddress({ serializedTransaction: raw as never })
}
