import { BaseError, RpcRequestError, type Hex } from 'viem'
import type { BatchEntryAnswer, BatchPoster } from './keep-alive-transport.js'
import type { NonceManager, NonceTicket } from './nonce-manager.js'
import { rpcErrorText, toRpcFault } from './rpc-fault.js'

/** A signed transaction of the lane's key, with the journal write that must land before it is sent. */
export interface LaneEntry {
  readonly ticket: NonceTicket
  readonly raw: Hex
  /** Records the transaction (the settlement journal); nothing is sent before it resolves. */
  readonly record: () => Promise<void>
  /** The settle's budget: no new attempt to send once it is spent. */
  readonly signal: AbortSignal
}

/**
 * What became of an entry: the node took it, the node refused it (its error
 * answer), or it was never sent and never will be (an earlier entry of the key
 * failed, so it would wait behind a gap): the caller takes a fresh nonce.
 */
export type LaneOutcome = { readonly kind: 'accepted' } | { readonly kind: 'refused'; readonly error: unknown } | { readonly kind: 'withdrawn' }

/** Sends one key's transactions; see {@link createSendLane}. */
export interface SendLane {
  /**
   * Queues a transaction whose turn came (see NonceManager.turn) behind the
   * key's earlier ones and marks its ticket queued. Rejects with the journal's
   * error when the record failed (nothing was sent), or with an `rpc_*` fault
   * when the node never answered (the bytes may have reached it).
   */
  send(entry: LaneEntry): Promise<LaneOutcome>
}

export interface SendLaneOptions {
  readonly nonces: NonceManager
  /** Sends one transaction; throws viem's errors, as `client.request` does. */
  readonly sendOne: (raw: Hex) => Promise<unknown>
  /** Sends several as one JSON-RPC batch, in order; absent with a transport of the user's (no batches then). */
  readonly sendBatch?: BatchPoster
  /** Most transactions in one batch. 1 sends one at a time. */
  readonly maxBatch: number
}

/** The node has these bytes already: as good as taken. */
export const ALREADY_KNOWN = /already known|known transaction|already imported|already exists|alreadyknown/i
/** Sends of the same signed bytes while the node gives no answer (one try of ours; the transport may retry inside it). */
const SEND_ATTEMPTS = 3
const SEND_PAUSE_MS = 100

/**
 * The sender of one key. Transactions leave in the order they are queued,
 * which is nonce order (a ticket's turn comes once the lower ones are
 * queued). While a send is on the wire, the transactions queued behind it
 * wait, then go together: their journal writes at once, then one JSON-RPC
 * batch, which a node handles in order (geth, anvil). So one key sends as many
 * transactions per round trip as are ready, instead of one, and the node still
 * sees no nonce before the one below it.
 *
 * When an entry is refused, or gets no answer at all, the key's count is
 * reset and the entries queued behind it are withdrawn unsent (not yet
 * journaled): they would wait behind a gap. Entries of the same batch after a
 * refused one were already sent; they are structurally alike (same fees, same
 * gas, the same contract), so a node refuses all of them or none, except for
 * "nonce too low", which leaves no gap. A node that answers nothing for some
 * entries gets those again, same bytes, in order.
 *
 * @example
 * const lane = createSendLane({ nonces, sendOne: (raw) => client.request({ method: 'eth_sendRawTransaction', params: [raw] }), maxBatch: 20 })
 * if (await nonces.turn(ticket)) outcome = await lane.send({ ticket, raw, record, signal })
 */
export function createSendLane(options: SendLaneOptions): SendLane {
  const { nonces, maxBatch } = options
  type Queued = LaneEntry & { resolve(outcome: LaneOutcome): void; reject(error: unknown): void }
  let queue: Queued[] = []
  let draining = false

  const withdrawQueued = () => {
    const dropped = queue
    queue = []
    for (const entry of dropped) entry.resolve({ kind: 'withdrawn' })
  }

  const drain = async () => {
    draining = true
    try {
      while (queue.length > 0) {
        // A reset since a ticket was handed out may have given up a nonce below it.
        const stale = queue.filter((entry) => !nonces.current(entry.ticket))
        if (stale.length > 0) {
          queue = queue.filter((entry) => nonces.current(entry.ticket))
          for (const entry of stale) entry.resolve({ kind: 'withdrawn' })
        }
        const batch = queue.splice(0, maxBatch)
        try {
          await sendTogether(batch)
        } catch (error) {
          // Not expected (every failure above is an entry's outcome); never leave a caller waiting.
          nonces.reset()
          for (const entry of batch) entry.reject(error)
          withdrawQueued()
        }
      }
    } finally {
      draining = false
    }
  }

  /** Journals then sends one batch; settles each entry's promise. */
  const sendTogether = async (batch: Queued[]) => {
    // Nothing leaves unrecorded. The writes belong to different settles: they run at once.
    const records = await Promise.allSettled(batch.map(async (entry) => entry.record()))
    const unrecorded = records.findIndex((record) => record.status === 'rejected')
    let sendable = batch
    if (unrecorded >= 0) {
      // Its nonce will not be sent: what comes after it would wait behind the gap.
      nonces.reset()
      batch[unrecorded]!.reject((records[unrecorded] as PromiseRejectedResult).reason)
      for (const entry of batch.slice(unrecorded + 1)) entry.resolve({ kind: 'withdrawn' })
      withdrawQueued()
      sendable = batch.slice(0, unrecorded)
    }
    const outcomes = await deliver(sendable)
    if (outcomes.some((outcome) => !('kind' in outcome) || outcome.kind !== 'accepted')) {
      nonces.reset()
      withdrawQueued()
    }
    sendable.forEach((entry, index) => {
      const outcome = outcomes[index]!
      if ('kind' in outcome) entry.resolve(outcome)
      else entry.reject(outcome.fault)
    })
  }

  /**
   * Sends the entries until each is answered: accepted, refused, or a fault
   * once the attempts are spent (or the entry's budget is) without an answer.
   * The unanswered ones go again together, same bytes, in order.
   */
  const deliver = async (entries: readonly Queued[]): Promise<(LaneOutcome | { fault: unknown })[]> => {
    const outcomes: (LaneOutcome | { fault: unknown })[] = []
    const lastErrors: unknown[] = []
    let open = entries.map((_, index) => index)
    for (let attempt = 1; open.length > 0; attempt++) {
      const answers = await attemptSend(open.map((index) => entries[index]!.raw))
      const unanswered: number[] = []
      open.forEach((index, at) => {
        const error = answers[at]
        lastErrors[index] = error
        if (error === undefined || ALREADY_KNOWN.test(rpcErrorText(error))) outcomes[index] = { kind: 'accepted' }
        else if (answeredByNode(error)) outcomes[index] = { kind: 'refused', error }
        else if (attempt >= SEND_ATTEMPTS || entries[index]!.signal.aborted) outcomes[index] = { fault: toRpcFault(error, 'sending the settlement transaction') }
        else unanswered.push(index)
      })
      if (unanswered.length === 0) break
      await pause(SEND_PAUSE_MS * attempt, AbortSignal.any(unanswered.map((index) => entries[index]!.signal)))
      // A budget ran out while pausing: that caller has answered; its bytes are not sent again.
      open = []
      for (const index of unanswered) {
        if (!entries[index]!.signal.aborted) open.push(index)
        else outcomes[index] = { fault: toRpcFault(lastErrors[index], 'sending the settlement transaction') }
      }
    }
    return outcomes
  }

  /** One try at sending, in order: per transaction `undefined` (taken) or the error it got. */
  const attemptSend = async (raws: readonly Hex[]): Promise<unknown[]> => {
    if (raws.length > 1 && options.sendBatch) {
      let answers: BatchEntryAnswer[] | undefined
      try {
        answers = await options.sendBatch(raws.map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })))
      } catch (error) {
        return raws.map(() => error)
      }
      if (answers) return answers.map((answer) => ('error' in answer ? answer.error : undefined))
      // The server takes no batches: one at a time, as below.
    }
    const errors: unknown[] = []
    for (const raw of raws) {
      errors.push(
        await options.sendOne(raw).then(
          () => undefined,
          (error: unknown) => error,
        ),
      )
    }
    return errors
  }

  return {
    send(entry) {
      const answered = new Promise<LaneOutcome>((resolve, reject) => queue.push({ ...entry, resolve, reject }))
      nonces.queued(entry.ticket)
      if (!draining) void drain()
      return answered
    },
  }
}

/** JSON-RPC codes of a gateway's own failure (upstream error, rate limit), not of a node that looked at the transaction. */
const GATEWAY_CODES = new Set([-32603, -32005])

/** Whether the node answered and refused: a JSON-RPC error answer, other than a gateway's, on a successful HTTP exchange. */
function answeredByNode(error: unknown): boolean {
  const found = error instanceof BaseError ? error.walk((e) => e instanceof RpcRequestError) : null
  if (!(found instanceof RpcRequestError)) return false
  if (GATEWAY_CODES.has(found.code)) return false
  return found.status === undefined || found.status < 300
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
