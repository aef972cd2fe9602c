import { keccak256, type Address, type Hex } from 'viem'
import type { BroadcastRecord } from '../core/adapter.js'
import { withDeadline } from '../core/deadline.js'
import type { NetworkRuntime, SignerSlot } from './network-runtime.js'
import type { ReceiptOutcome } from './receipt-poller.js'
import { rpcErrorText, toRpcFault } from './rpc-fault.js'

/** A call the facilitator pays for. */
export interface OutgoingCall {
  readonly to: Address
  readonly data: Hex
  readonly gas: bigint
}

/**
 * Picks the signer with the fewest settlements in flight, so several keys
 * share the load and one slow key does not hold the others back.
 */
export function pickSigner(runtime: NetworkRuntime): SignerSlot {
  let best = runtime.signers[0]
  for (const slot of runtime.signers) if (best === undefined || slot.inFlight < best.inFlight) best = slot
  if (!best) throw new Error('a network runtime always has a signer')
  return best
}

const NONCE_TOO_LOW = /nonce too low|nonce has already been used|nonce is too low|invalid nonce|lower than the current nonce|oldnonce/i
const ALREADY_KNOWN = /already known|known transaction|already imported|already exists|alreadyknown/i
const MAX_NONCE_RETRIES = 2

/**
 * Signs a call locally with the slot's next nonce, records it with
 * `record` (the settlement journal) and only then sends the raw bytes, so a
 * crash after this point can never lose the transaction hash. A stale local
 * nonce (another process used the key) is re-read and the call re-signed,
 * unless the chain already knows a transaction sent by an earlier attempt:
 * "nonce too low" may come from our own first send (its answer lost, the RPC
 * client retried), and one call must never become two transactions.
 *
 * Throws a FacilitatorError `rpc_*` fault when the node cannot be reached or
 * refuses the transaction; the hash was recorded by then.
 */
export async function signAndSend(
  runtime: NetworkRuntime,
  slot: SignerSlot,
  call: OutgoingCall,
  signal: AbortSignal,
  record: (sent: BroadcastRecord) => Promise<void>,
): Promise<Hex> {
  const sent: Hex[] = []
  for (let attempt = 0; ; attempt++) {
    for (const earlier of sent) if (await knownToChain(runtime, earlier, signal)) return earlier
    const [nonce, fees] = await withDeadline(Promise.all([slot.nonces.next(), runtime.fees()]), signal).catch((error: unknown) => {
      throw toRpcFault(error, 'preparing the settlement transaction')
    })
    let raw: Hex
    try {
      raw = await slot.signer.signTransaction({
        chainId: runtime.chainId,
        nonce,
        to: call.to,
        data: call.data,
        gas: call.gas,
        ...('gasPrice' in fees ? { type: 'legacy' as const, gasPrice: fees.gasPrice } : { type: 'eip1559' as const, ...fees }),
      })
    } catch (error) {
      // The nonce was taken but never used: re-read it before anyone else signs past the gap.
      slot.nonces.reset()
      throw error
    }
    const transaction = keccak256(raw)
    try {
      await record({ transaction, raw })
    } catch (error) {
      // Nothing was sent with this nonce: re-read it, or every later call of this key waits behind a gap.
      slot.nonces.reset()
      throw error
    }
    sent.push(transaction)
    try {
      await runtime.client.request({ method: 'eth_sendRawTransaction', params: [raw] })
      return transaction
    } catch (error) {
      const text = rpcErrorText(error)
      if (ALREADY_KNOWN.test(text)) return transaction
      slot.nonces.reset()
      if (NONCE_TOO_LOW.test(text) && attempt < MAX_NONCE_RETRIES) continue
      throw toRpcFault(error, 'sending the settlement transaction')
    }
  }
}

/** Whether the node knows a transaction (pending or mined); an unanswered lookup counts as known, to never send twice. */
async function knownToChain(runtime: NetworkRuntime, hash: Hex, signal: AbortSignal): Promise<boolean> {
  try {
    return (await withDeadline(runtime.client.request({ method: 'eth_getTransactionByHash', params: [hash] }), signal)) !== null
  } catch {
    return true
  }
}

/**
 * Sends an already signed transaction again (resume after a crash): `'sent'` when the
 * node has it now (accepted, or already known), `'nonce_used'` when the key's nonce
 * has moved past it (it was mined, or another transaction took its nonce).
 */
export async function resend(runtime: NetworkRuntime, raw: Hex): Promise<'sent' | 'nonce_used'> {
  try {
    await runtime.client.request({ method: 'eth_sendRawTransaction', params: [raw] })
    return 'sent'
  } catch (error) {
    const text = rpcErrorText(error)
    if (ALREADY_KNOWN.test(text)) return 'sent'
    if (NONCE_TOO_LOW.test(text)) return 'nonce_used'
    throw toRpcFault(error, 're-sending the settlement transaction')
  }
}

export type { ReceiptOutcome } from './receipt-poller.js'

/**
 * Waits for the receipt of `hash` through the network's shared poller until it
 * appears, `timeoutMs` passes or `signal` aborts. Lookups start at once and back
 * off to `maxIntervalMs`. RPC errors while polling are retried: the transaction
 * is already out, so only a pending answer (which keeps the hash) may end the wait early.
 */
export function waitForReceipt(
  runtime: NetworkRuntime,
  hash: Hex,
  options: { timeoutMs: number; maxIntervalMs: number; signal: AbortSignal },
): Promise<ReceiptOutcome> {
  return runtime.receipts.wait(hash, options)
}
