import type { Address, Hex } from 'viem'
import type { BroadcastRecord } from '../../core/adapter.js'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { keccak256 } from '../crypto/keccak.js'
import type { FeeQuote, NetworkRuntime, SignerSlot } from './network-runtime.js'
import type { NonceTicket } from './nonce-manager.js'
import { ALREADY_KNOWN, NONCE_TAKEN, type LaneOutcome } from './send-lane.js'
import { rpcErrorText, toRpcFault } from './rpc-fault.js'

/** A call the facilitator pays for. */
export interface OutgoingCall {
  readonly to: Address
  readonly data: Hex
  readonly gas: bigint
  /** The fees to send it with: those its simulation ran with. @default the runtime's current quote */
  readonly fees?: FeeQuote
}

/**
 * Picks the signer with the fewest settlements in flight, so several keys
 * share the load and one slow key does not hold the others back. A signer the
 * node lately refused for insufficient funds is left out; when all are, this
 * throws `signer_unfunded` (503) so that no new payment is claimed only to wait
 * behind a key that cannot pay for gas.
 */
export function pickSigner(runtime: NetworkRuntime): SignerSlot {
  const now = Date.now()
  let best: SignerSlot | undefined
  for (const slot of runtime.signers) {
    if (slot.unfundedUntil > now) continue
    if (best === undefined || slot.inFlight < best.inFlight) best = slot
  }
  if (!best) {
    throw new FacilitatorError(
      'signer_unfunded',
      `every signer of ${runtime.network.caip2} was refused by the node for insufficient funds for gas; fund them (their addresses are in supported().signers) and retry`,
    )
  }
  return best
}

/** The key's nonce is used already, or taken by another of its transactions waiting in the pool. */
const INSUFFICIENT_FUNDS = /insufficient funds/i
const MAX_NONCE_RETRIES = 3

/**
 * Signs a call locally with the slot's next nonce and hands it to the key's
 * send lane, which records it with `record` (the settlement journal) and only
 * then sends the raw bytes, so a crash after this point can never lose the
 * transaction hash. A stale local nonce (another process used the key) is
 * re-read and the call re-signed, unless the chain already knows a
 * transaction sent by an earlier attempt: "nonce too low" may come from our
 * own first send (its answer lost, the RPC client retried), and one call must
 * never become two transactions.
 *
 * Resolves with the transaction the node took (an earlier attempt's, when the
 * chain knows it) and its signed bytes. Throws a FacilitatorError `rpc_*` fault
 * when the node cannot be reached or refuses the transaction; the hash was
 * recorded by then.
 */
export async function signAndSend(
  runtime: NetworkRuntime,
  slot: SignerSlot,
  call: OutgoingCall,
  signal: AbortSignal,
  record: (sent: BroadcastRecord) => Promise<void>,
): Promise<{ hash: Hex; raw: Hex }> {
  const sent: { hash: Hex; raw: Hex }[] = []
  let refusals = 0
  for (;;) {
    for (const earlier of sent) if (await knownToChain(runtime, earlier.hash, signal)) return earlier
    const fees =
      call.fees ??
      (await withDeadline(runtime.fees(), signal).catch((error: unknown) => {
        throw toRpcFault(error, 'preparing the settlement transaction')
      }))
    const ticket = await takeNonce(slot, signal)
    let attempt: { hash: Hex; raw: Hex }
    let outcome: LaneOutcome
    try {
      let raw: Hex
      try {
        // Bounded: a hung remote signer must not hold the key's lane.
        raw = await withDeadline(
          slot.signer.signTransaction({
            chainId: runtime.chainId,
            nonce: ticket.nonce,
            to: call.to,
            data: call.data,
            gas: call.gas,
            ...('gasPrice' in fees ? { type: 'legacy' as const, gasPrice: fees.gasPrice } : { type: 'eip1559' as const, ...fees }),
          }),
          signal,
        )
        // Throws for bytes that are not hex (a signer of the user's), before the turn.
        attempt = { hash: keccak256(raw), raw }
        // The key's transactions reach the node in nonce order (see createNonceManager).
        if (!(await withDeadline(slot.nonces.turn(ticket), signal))) continue // a lower nonce was given up: take a fresh one
      } catch (error) {
        // The nonce was taken but never used: re-read it before anyone else signs past the gap.
        slot.nonces.reset()
        throw error
      }
      const { hash } = attempt
      // What the node prices the transaction by: only transactions of one shape share a batch.
      const shape = `${call.gas}:${'gasPrice' in fees ? fees.gasPrice : `${fees.maxFeePerGas}:${fees.maxPriorityFeePerGas}`}`
      // Not cut short here: the journal bounds its own store calls, a write that lands after a deadline
      // would record a transaction this call never sent, and the lane's retries stop at the budget.
      outcome = await slot.lane.send({ ticket, raw, record: () => record({ transaction: hash, raw, slot: { sender: slot.sender, sequence: ticket.nonce } }), signal, shape })
      if (outcome.kind === 'withdrawn') continue // a lower nonce failed before this one was sent: take a fresh one
    } finally {
      slot.nonces.release(ticket)
    }
    sent.push(attempt)
    if (outcome.kind === 'accepted') {
      slot.unfundedUntil = 0
      return attempt
    }
    const refusal = outcome.error
    // No gas money: leave the key out for a while rather than let every new payment wait on it.
    if (INSUFFICIENT_FUNDS.test(rpcErrorText(refusal))) runtime.leaveOutUnfunded(slot)
    if (NONCE_TAKEN.test(rpcErrorText(refusal)) && refusals++ < MAX_NONCE_RETRIES) continue
    throw toRpcFault(refusal, 'sending the settlement transaction')
  }
}

/**
 * The slot's next nonce within the budget. A nonce handed out after the
 * budget ran out is never used: it is released and the count re-read, so
 * that no later transaction of this key waits behind it.
 */
async function takeNonce(slot: SignerSlot, signal: AbortSignal): Promise<NonceTicket> {
  const taking = slot.nonces.next()
  try {
    return await withDeadline(taking, signal)
  } catch (error) {
    void taking.then(
      (late) => {
        // Reset first: released first, the nonce above it could get its turn and send behind the gap.
        slot.nonces.reset()
        slot.nonces.release(late)
      },
      () => undefined,
    )
    throw toRpcFault(error, 'preparing the settlement transaction')
  }
}

/** Whether the node knows a transaction (pending or mined); an unanswered lookup counts as known, to never send twice. */
export async function knownToChain(runtime: NetworkRuntime, hash: Hex, signal: AbortSignal): Promise<boolean> {
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
export async function resend(runtime: Pick<NetworkRuntime, 'client'>, raw: Hex): Promise<'sent' | 'nonce_used'> {
  try {
    await runtime.client.request({ method: 'eth_sendRawTransaction', params: [raw] })
    return 'sent'
  } catch (error) {
    const text = rpcErrorText(error)
    if (ALREADY_KNOWN.test(text)) return 'sent'
    if (NONCE_TAKEN.test(text)) return 'nonce_used'
    throw toRpcFault(error, 're-sending the settlement transaction')
  }
}
