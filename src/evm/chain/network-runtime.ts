import { createPublicClient, fallback, parseTransaction, type Address, type Hex, type PublicClient } from 'viem'
import type { AdapterNetwork, AdapterServices } from '../../core/adapter.js'
import { countOption } from '../../core/count-option.js'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { checkRpcUrls } from '../../networks/rpc-urls.js'
import { createAssetTable, type AssetTable } from '../../networks/assets.js'
import { describeNetwork, evmChainId, type Caip2Network } from '../../networks/networks.js'
import { MULTICALL3_ADDRESS } from '../codec/abi.js'
import type { EvmSettlementSigner, ExactEvmConfig, ExactEvmNetworkConfig } from '../exact-evm-config.js'
import { createConnectionPool, MAX_TIMEOUT_MS } from '../../transport/keep-alive-post.js'
import { DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT } from '../../transport/rpc-coalescer.js'
import { keepAliveBatchPoster, keepAliveHttp } from './keep-alive-transport.js'
import { createNonceManager, type NonceManager } from './nonce-manager.js'
import { createReceiptPoller, type ReceiptPoller } from './receipt-poller.js'
import { toRpcFault } from './rpc-fault.js'
import { nodeRefusal } from './node-answers.js'
import { createSendLane, type SendLane } from './send-lane.js'
import { resend } from './send-transaction.js'

// viem's own default (10 s) equals the default verify budget: a hanging first URL would use it all up.
const DEFAULT_RPC_TIMEOUT_MS = 4_000
/** How long a fee read under way is shared: about one slow RPC round trip. */
const FEE_READ_JOIN_MS = 500
const DEFAULT_SEND_BATCH_SIZE = 20
const MAX_SEND_BATCH_SIZE = 1_000
// How long the send lane waits for one send through a transport of the user's (viem's http() gives up after 10 s).
const USER_TRANSPORT_SEND_BOUND_MS = 30_000

/** Fees of a type-2 transaction, or a legacy gas price on chains without EIP-1559. */
export type FeeQuote = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint }

/** A fee quote of the runtime's (cached, current or fresh) within the request's time; an RPC fault when its read fails. */
export async function awaitFees(quote: FeeQuote | Promise<FeeQuote>, signal: AbortSignal): Promise<FeeQuote> {
  return quote instanceof Promise ? withDeadline(quote, signal).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the gas fees'))) : quote
}

/** A signer of one network with its local nonce counter and load. */
export interface SignerSlot {
  readonly signer: EvmSettlementSigner
  /** The signer's name as a sender of numbered transactions (`<chainId>:<address>`), in the journal's slots. */
  readonly sender: string
  readonly nonces: NonceManager
  /** Sends the signer's transactions in nonce order, several per round trip when they queue up. */
  readonly lane: SendLane
  /** Settlements currently using this signer. */
  inFlight: number
  /** Until when (epoch ms) the signer is left out: the node refused its transaction for insufficient funds. */
  unfundedUntil: number
}

/** Everything the adapter keeps per network, built once at configuration time. */
export interface NetworkRuntime {
  readonly network: AdapterNetwork
  readonly chainId: number
  readonly client: PublicClient
  readonly multicall3: Address
  readonly assets: AssetTable
  readonly restrictAssets: boolean
  readonly signers: readonly SignerSlot[]
  /** The one receipt poller of this network, shared by every settle. */
  readonly receipts: ReceiptPoller
  /** A fee quote at most `feeCacheMs` old (read now when the last one is older), shared by concurrent settles. */
  fees(): Promise<FeeQuote>
  /**
   * The last fee quote at once, for verify's simulations: one older than `feeCacheMs` is
   * still served while a fresh one is read in the background. Only the very first caller
   * (no quote read yet) waits for the read.
   */
  cachedFees(): FeeQuote | Promise<FeeQuote>
  /** A fee quote read now (or joining a read under way): for a node that found the last one below its base fee. */
  freshFees(): Promise<FeeQuote>
  /** How long a signer refused for insufficient funds is left out. */
  readonly unfundedCooldownMs: number
  /** Leaves a signer the node refused for insufficient gas money out for the cooldown, and logs it once. */
  leaveOutUnfunded(slot: SignerSlot): void
  /** Closes the idle RPC connections of this network. */
  closeConnections(): void
}

/**
 * Builds the client, signer slots and caches of one configured network.
 * Throws `misconfigured` for an unknown network or a network without URLs or signers.
 */
export function createNetworkRuntime(entry: ExactEvmNetworkConfig, config: ExactEvmConfig, services: () => AdapterServices | undefined = () => undefined): NetworkRuntime {
  const info = describeNetwork(entry.network)
  if (!info || info.family !== 'eip155') {
    throw new FacilitatorError('misconfigured', `exactEvm: "${entry.network}" is not an EVM network (use a v1 name or eip155:<chainId>)`)
  }
  if (!Array.isArray(entry.rpcUrls) || entry.rpcUrls.length === 0) throw new FacilitatorError('misconfigured', `exactEvm: ${info.caip2} has no rpcUrls`)
  checkRpcUrls(entry.rpcUrls, `exactEvm: rpcUrls of ${info.caip2}`)
  const signers = entry.signers ?? config.signers ?? []
  if (signers.length === 0) throw new FacilitatorError('misconfigured', `exactEvm: ${info.caip2} has no signers`)

  const caip2: Caip2Network = info.caip2
  const chainId = evmChainId(caip2)
  const rpcTimeoutMs = config.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS
  if (!(rpcTimeoutMs > 0 && rpcTimeoutMs <= MAX_TIMEOUT_MS)) throw new FacilitatorError('misconfigured', `exactEvm: rpcTimeoutMs must be above 0 and at most ${MAX_TIMEOUT_MS}`)
  // Behind a fallback a failing URL hands over at once (the fallback retries the whole list itself);
  // viem lets a transport's own retryCount override the fallback's, so it is set here.
  const retryCount = entry.rpcUrls.length > 1 ? 0 : 1
  const maxInFlight = countOption(config.maxRpcRequestsInFlight, DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT, 'exactEvm: maxRpcRequestsInFlight')
  // One keep-alive pool per network. Receipt lookups, eth_calls, code reads and estimates issued together (see
  // keepAliveHttp) travel as one JSON-RPC batch (a verify's chain check, code read and estimate among them, see
  // checkChainState). A fee read is not among them: a background refresh must not ride in a verify's batch.
  const pool = createConnectionPool()
  const batchMethods = new Set(['eth_getTransactionReceipt', 'eth_call', 'eth_getCode', 'eth_estimateGas'])
  const makeTransport =
    config.transport ?? ((url: string) => keepAliveHttp(url, { retryCount, timeoutMs: rpcTimeoutMs, pool, maxInFlight, batchMethods }))
  const transports = entry.rpcUrls.map((url) => makeTransport(url))
  const [only] = transports
  const client = createPublicClient({
    transport: transports.length === 1 && only ? only : fallback(transports),
    // Receipts are polled by settle itself; viem's own batching would add latency to verify.
    batch: { multicall: false },
  })

  const assets = createAssetTable(
    (entry.assets ?? []).map((asset) => ({
      network: caip2,
      address: asset.address,
      symbol: '',
      decimals: 0,
      eip712: { name: asset.name, version: asset.version },
    })),
  )

  const sendBatchSize = countOption(config.sendBatchSize, DEFAULT_SEND_BATCH_SIZE, MAX_SEND_BATCH_SIZE, 'exactEvm: sendBatchSize')
  // Batches need our own client: a user's transport may send a batch's calls apart, out of order.
  const sendBatch = config.transport || sendBatchSize === 1 ? undefined : keepAliveBatchPoster(entry.rpcUrls, { timeoutMs: rpcTimeoutMs, pool })
  const sendOne = (raw: Hex) => client.request({ method: 'eth_sendRawTransaction', params: [raw] })
  // Our transport bounds each request itself: rpcTimeoutMs per try, one retry when a URL is alone, and
  // viem's fallback going over the whole list up to 4 times. This bound sits above all of that; a
  // transport of the user's may have none.
  const ownTransportBound = 4 * entry.rpcUrls.length * (retryCount + 1) * rpcTimeoutMs + 1_000
  const attemptTimeoutMs = config.transport ? USER_TRANSPORT_SEND_BOUND_MS : Math.min(ownTransportBound, MAX_TIMEOUT_MS)
  const slots: SignerSlot[] = signers.map((signer) => {
    const sender = `${chainId}:${signer.address.toLowerCase()}`
    let recovered = false
    let recoveryFaults = 0
    const nonces = createNonceManager(async () => {
      const count = Number(await client.request({ method: 'eth_getTransactionCount', params: [signer.address, 'pending'] }))
      // The first count of this process: nonces a dead process journaled are re-sent, never handed out again.
      const journal = services()
      if (recovered || !journal) return count
      try {
        const next = await resendJournaled(journal, sender, count, journalNode(client, signer.address))
        recovered = true
        return next
      } catch (error) {
        // A fault fails this read (its settle answers it, nothing sent) and the next read tries again; after a few,
        // the signer goes on from the chain's count and the journaled payments' retries check and send them anew.
        if (++recoveryFaults >= MAX_RECOVERY_FAULTS) recovered = true
        throw error
      }
    })
    return {
      signer,
      sender,
      nonces,
      lane: createSendLane({ nonces, sendOne, ...(sendBatch ? { sendBatch } : {}), maxBatch: sendBatchSize, attemptTimeoutMs }),
      inFlight: 0,
      unfundedUntil: 0,
    }
  })

  const feeCacheMs = config.feeCacheMs ?? 2_000
  // The last quote read (`at`: when its read started), and the read under way, shared by whoever asks while it is young.
  let last: { quote: FeeQuote; at: number } | undefined
  let reading: { quote: Promise<FeeQuote>; at: number } | undefined
  const freshFees = (): Promise<FeeQuote> => {
    const startedAt = Date.now()
    // Only a young read is joined: one that hangs (an RPC that stalled, then recovered) must not hold
    // later callers until its own timeout; they start a read of their own instead.
    if (reading && startedAt - reading.at <= Math.min(feeCacheMs, FEE_READ_JOIN_MS)) return reading.quote
    const quote: Promise<FeeQuote> = readFees(client).then(
      (read) => {
        if (!last || last.at <= startedAt) last = { quote: read, at: startedAt }
        if (reading?.quote === quote) reading = undefined
        return read
      },
      (error: unknown) => {
        // A failed read is not kept: the next caller reads again.
        if (reading?.quote === quote) reading = undefined
        throw error
      },
    )
    reading = { quote, at: startedAt }
    return quote
  }
  const fees = () => (last && Date.now() - last.at <= feeCacheMs ? Promise.resolve(last.quote) : freshFees())
  const cachedFees = (): FeeQuote | Promise<FeeQuote> => {
    if (!last) return freshFees()
    // Served as it is: a verify must not wait for a fee read. The refresh is for the verifies after it.
    if (Date.now() - last.at > feeCacheMs) freshFees().catch(() => undefined)
    return last.quote
  }

  return {
    network: { caip2, ...(info.v1Name ? { v1Name: info.v1Name } : {}) },
    chainId,
    client,
    multicall3: entry.multicall3 ?? MULTICALL3_ADDRESS,
    assets,
    restrictAssets: entry.restrictAssets ?? false,
    signers: slots,
    receipts: createReceiptPoller((hash) => client.request({ method: 'eth_getTransactionReceipt', params: [hash] })),
    fees,
    cachedFees,
    freshFees,
    unfundedCooldownMs: config.unfundedSignerCooldownMs ?? 30_000,
    closeConnections: () => pool.closeIdle(),
    leaveOutUnfunded(slot) {
      const now = Date.now()
      const cooldownMs = config.unfundedSignerCooldownMs ?? 30_000
      // Logged when the cooldown starts, not for every settle it turns away.
      if (slot.unfundedUntil <= now) {
        config.logger?.warn({ event: 'signer_unfunded', network: caip2, signer: slot.signer.address, cooldownMs }, 'a signer was refused for insufficient gas money and sits out')
      }
      slot.unfundedUntil = now + cooldownMs
    },
  }
}

/**
 * Reads a fee quote in one parallel round: twice the latest base fee plus the
 * node's priority tip, so a transaction stays includable over several blocks
 * of rising base fee (only the used fee is paid).
 */
async function readFees(client: PublicClient): Promise<FeeQuote> {
  const [block, tip] = await Promise.all([
    client.request({ method: 'eth_getBlockByNumber', params: ['latest', false] }),
    client.request({ method: 'eth_maxPriorityFeePerGas' }).catch(() => undefined),
  ])
  const baseFee = block?.baseFeePerGas
  if (baseFee === undefined || baseFee === null) {
    return { gasPrice: BigInt(await client.request({ method: 'eth_gasPrice' })) }
  }
  const priority = tip === undefined ? 0n : BigInt(tip)
  return { maxFeePerGas: BigInt(baseFee) * 2n + priority, maxPriorityFeePerGas: priority }
}

/** Nonce reads that may fail on re-sending journaled transactions before a signer gives up on them. */
const MAX_RECOVERY_FAULTS = 3

/** What re-sending a journaled transaction asks of the node. */
export interface JournalNode {
  /** Whether the signed transaction would still land now: its fee cap covers the base fee and its call does not revert. */
  wouldLand(raw: Hex): Promise<boolean>
  /** `'sent'` once the node has it, `'nonce_used'` when its nonce went elsewhere; throws on a fault. */
  send(raw: Hex): Promise<'sent' | 'nonce_used'>
}

/**
 * Re-sends, in nonce order, what a dead process journaled for `sender` from the chain's pending
 * `count` on, and answers the first nonce free after them. It stops at the first one that would not
 * land now (an authorization expired meanwhile, a fee cap under the base fee: sent, it would revert
 * at our cost or stall the key) or that the node will not take: from there nonces are handed out
 * again, and that payment's retry checks it and sends it anew. A fault of the store or the node
 * throws: the nonce read fails and the next one tries again.
 */
export async function resendJournaled(journal: AdapterServices, sender: string, count: number, node: JournalNode): Promise<number> {
  let next = count
  for (const record of await journal.journaled(sender, count)) {
    if (record.slot.sequence !== next || !record.raw || !/^0x[0-9a-fA-F]+$/.test(record.raw)) break
    const raw = record.raw as Hex
    if (!(await node.wouldLand(raw)) || (await node.send(raw)) !== 'sent') break
    next += 1
  }
  return next
}

function journalNode(client: PublicClient, from: Address): JournalNode {
  return {
    async wouldLand(raw) {
      let transaction: ReturnType<typeof parseTransaction>
      try {
        transaction = parseTransaction(raw)
      } catch {
        return false
      }
      const block = await client.getBlock({ blockTag: 'latest' }).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the base fee')))
      const feeCap = transaction.maxFeePerGas ?? transaction.gasPrice
      if (block.baseFeePerGas !== null && block.baseFeePerGas !== undefined && (feeCap === undefined || feeCap < block.baseFeePerGas)) return false
      try {
        await client.call({ account: from, to: transaction.to ?? undefined, data: transaction.data, gas: transaction.gas, value: transaction.value })
        return true
      } catch (error) {
        // A revert is the payment's state; anything else (no answer) is a fault of the moment.
        if (nodeRefusal(error) === 'failed') return false
        throw toRpcFault(error, 're-checking a journaled settlement')
      }
    },
    send: (raw) => resend({ client }, raw),
  }
}
