import { BaseError, RpcRequestError, TimeoutError, type Hex } from 'viem'
import type { BatchEntryAnswer, BatchPoster } from './keep-alive-transport.js'
import type { NonceManager, NonceTicket } from './nonce-manager.js'
import { rpcErrorText, toRpcFault } from './rpc-fault.js'

/** A signed transaction of the lane's key, with the journal write that must land before it is sent. */
export interface LaneEntry {
  readonly ticket: NonceTicket
  readonly raw: Hex
  /** Records the transaction (the settlement journal); nothing is sent before it resolves. */
  readonly record: () => Promise<void>
  /** The settle's budget: unanswered entries are sent again while the budget of any of them lasts. */
  readonly signal: AbortSignal
  /**
   * What the node checks the transaction's cost by (its gas limit and fees). Only entries of one
   * shape share a batch, so that a node that refuses one of them for its cost ("insufficient
   * funds") refuses the others too, instead of parking them behind the refused nonce.
   */
  readonly shape?: string
}

/**
 * What became of an entry: the node took it, the node refused it (its error
 * answer), or it was withdrawn: never journaled, never sent, because an
 * earlier transaction of the key failed and it would wait behind the gap; the
 * caller takes a fresh nonce.
 */
export type LaneOutcome = { readonly kind: 'accepted' } | { readonly kind: 'refused'; readonly error: unknown } | { readonly kind: 'withdrawn' }

/** Sends one key's transactions; see {@link createSendLane}. */
export interface SendLane {
  /**
   * Queues a transaction whose turn came (see NonceManager.turn) behind the
   * key's earlier ones and marks its ticket queued. Rejects with the journal's
   * error when the record failed (nothing was sent), or with an `rpc_*` fault
   * (or, unexpectedly, any error) once journaled without an answer from the
   * node: the bytes may or may not have reached it.
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
  /**
   * Longest wait for one send (or batch) to be answered before it counts as unanswered:
   * a transport that never returns must not hold the key's lane for good.
   */
  readonly attemptTimeoutMs: number
}

/** The node has these bytes already: as good as taken. */
export const ALREADY_KNOWN = /already known|known transaction|already imported|already exists|alreadyknown/i
/** A node's refusal because the nonce went to another transaction (mined, or in its pool at a higher fee). */
export const NONCE_TAKEN = /nonce too low|nonce has already been used|nonce is too low|invalid nonce|lower than the current nonce|oldnonce|replacement transaction underpriced|replacement fee too low|could not replace existing/i
/** Sends of the same signed bytes while the node gives no answer (one try of ours; the transport may retry inside it). */
const SEND_ATTEMPTS = 3
const SEND_PAUSE_MS = 100

type Answer = { readonly kind: 'accepted' } | { readonly kind: 'refused'; readonly error: unknown } | { readonly kind: 'unanswered'; readonly error: unknown }

/**
 * The sender of one key. Transactions leave in the order they are queued,
 * which is nonce order (a ticket's turn comes once the lower ones are
 * queued). While a send is on the wire, the transactions queued behind it
 * wait, then go together: journaled one after another in nonce order, then
 * sent as one JSON-RPC batch, which a node handles in order (geth, anvil). So
 * one key sends as many transactions per round trip as are ready, instead of
 * one, and the node sees no nonce before the one below it.
 *
 * A transaction is withdrawn only while it is not journaled: when a journal
 * write fails, the entries after it are not written. A journaled entry's
 * caller learns the node's answer, or gets a fault when there was none (its
 * settle then reports it pending, and a later settle resumes it). When an
 * entry is refused or unanswered, its nonce is given up (see
 * NonceManager.giveUp: the next transaction of the key takes it) and the
 * entries queued behind it are withdrawn. Entries of the same batch after it
 * were sent with it; a batch holds transactions of one shape (gas limit and
 * fees), so a node that refuses one for its cost refuses them all, and those
 * it takes after a refusal for another reason are parked until the gap is
 * filled, keeping their nonces. Without batches (a server that refuses them, a
 * transport of the user's), the same entries go one at a time, each after the
 * previous answer; an unanswered one holds back those above it, which then
 * share its fault when the attempts run out, never sent.
 *
 * @example
 * const lane = createSendLane({ nonces, sendOne: (raw) => client.request({ method: 'eth_sendRawTransaction', params: [raw] }), maxBatch: 20, attemptTimeoutMs: 30_000 })
 * if (await nonces.turn(ticket)) outcome = await lane.send({ ticket, raw, record, signal })
 */
export function createSendLane(options: SendLaneOptions): SendLane {
  const { nonces, maxBatch } = options
  type Queued = LaneEntry & { resolve(outcome: LaneOutcome): void; reject(error: unknown): void }
  let queue: Queued[] = []
  let draining = false

  const withdraw = (entries: readonly Queued[]) => {
    for (const entry of entries) entry.resolve({ kind: 'withdrawn' })
  }
  const withdrawQueued = () => {
    const dropped = queue
    queue = []
    withdraw(dropped)
  }

  const drain = async () => {
    draining = true
    try {
      while (queue.length > 0) {
        // A lower nonce was given up after these got their turn (they were not queued yet then).
        withdraw(queue.filter((entry) => nonces.doomed(entry.ticket)))
        queue = queue.filter((entry) => !nonces.doomed(entry.ticket))
        const batch = queue.splice(0, sameShape(queue, maxBatch))
        try {
          await sendTogether(batch)
        } catch (error) {
          // Not expected (every failure above is an entry's outcome); never leave a caller waiting.
          if (batch[0]) nonces.giveUp(batch[0].ticket)
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
    // One write after another, in nonce order: when one fails, the later ones are not written,
    // so a transaction that is not sent is never on record as sent.
    let recorded = 0
    for (const entry of batch) {
      try {
        await entry.record()
      } catch (error) {
        nonces.giveUp(entry.ticket)
        entry.reject(error)
        withdraw(batch.slice(recorded + 1))
        withdrawQueued()
        break
      }
      recorded++
    }
    const sendable = batch.slice(0, recorded)
    if (sendable.length === 0) return
    const answers = await deliver(sendable)
    sendable.forEach((entry, index) => {
      if (answers[index]!.kind === 'accepted') nonces.accepted(entry.ticket)
      else nonces.giveUp(entry.ticket)
    })
    if (answers.some((answer) => answer.kind !== 'accepted')) withdrawQueued()
    sendable.forEach((entry, index) => {
      const answer = answers[index]!
      if (answer.kind === 'unanswered') entry.reject(toRpcFault(answer.error, 'sending the settlement transaction'))
      else entry.resolve(answer)
    })
  }

  /**
   * Sends the entries until each is answered (taken or refused), or the attempts
   * are spent. The unanswered ones go again, same bytes, in order, while the budget
   * of any of them lasts (a lower one goes again with them, or they would wait behind it).
   */
  const deliver = async (entries: readonly Queued[]): Promise<Answer[]> => {
    const answers: Answer[] = []
    let open = entries.map((_, index) => index)
    for (let attempt = 1; ; attempt++) {
      const got = await attemptSend(open.map((index) => entries[index]!.raw))
      open.forEach((index, at) => (answers[index] = got[at]!))
      open = open.filter((index) => answers[index]!.kind === 'unanswered')
      if (open.length === 0 || attempt >= SEND_ATTEMPTS || open.every((index) => entries[index]!.signal.aborted)) return answers
      await pause(SEND_PAUSE_MS * attempt)
    }
  }

  /** One try at sending, in order. */
  const attemptSend = async (raws: readonly Hex[]): Promise<Answer[]> => {
    if (raws.length > 1 && options.sendBatch) {
      let answers: BatchEntryAnswer[] | undefined
      try {
        answers = await bounded(options.sendBatch(raws.map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] }))))
      } catch (error) {
        return raws.map(() => ({ kind: 'unanswered', error }))
      }
      if (answers) return answers.map((answer) => classify('error' in answer ? answer.error : undefined))
      // The server takes no batches: one at a time, as below.
    }
    const answers: Answer[] = []
    for (const raw of raws) {
      const answer = classify(
        await bounded(options.sendOne(raw)).then(
          () => undefined,
          (error: unknown) => error,
        ),
      )
      answers.push(answer)
      if (answer.kind === 'unanswered') {
        // The ones above it wait: sent now, they could reach the node before it.
        while (answers.length < raws.length) answers.push(answer)
        break
      }
    }
    return answers
  }

  /** The send's outcome, or a rejection once `attemptTimeoutMs` passed without one (a late answer is dropped). */
  const bounded = <T>(sending: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      // viem's own timeout error, so that it maps to `rpc_timeout` as a transport's would.
      const timer = setTimeout(() => reject(new TimeoutError({ body: { method: 'eth_sendRawTransaction' }, url: 'the send lane' })), options.attemptTimeoutMs)
      sending.then(
        (value) => {
          clearTimeout(timer)
          resolve(value)
        },
        (error: unknown) => {
          clearTimeout(timer)
          reject(error)
        },
      )
    })

  return {
    send(entry) {
      const answered = new Promise<LaneOutcome>((resolve, reject) => queue.push({ ...entry, resolve, reject }))
      nonces.queued(entry.ticket)
      if (!draining) void drain()
      return answered
    },
  }
}

/** How many entries from the front of the queue share the first one's shape, up to `max`. */
function sameShape(queue: readonly LaneEntry[], max: number): number {
  let count = 1
  while (count < queue.length && count < max && queue[count]!.shape === queue[0]!.shape) count++
  return count
}

/** What one send's error (or `undefined`: no error) says about the transaction. */
function classify(error: unknown): Answer {
  if (error === undefined || ALREADY_KNOWN.test(rpcErrorText(error))) return { kind: 'accepted' }
  if (answeredByNode(error)) return { kind: 'refused', error }
  return { kind: 'unanswered', error }
}

/**
 * JSON-RPC codes that are no answer about the transaction: a gateway's own failure (upstream
 * error, rate limit), or a call a server did not get to (geth's batch timeout, -32002).
 */
const GATEWAY_CODES = new Set([-32603, -32005, -32002])

/** Whether the node answered and refused: a JSON-RPC error answer, other than a gateway's, on a successful HTTP exchange. */
function answeredByNode(error: unknown): boolean {
  const found = error instanceof BaseError ? error.walk((e) => e instanceof RpcRequestError) : null
  if (!(found instanceof RpcRequestError)) return false
  if (GATEWAY_CODES.has(found.code)) return false
  return found.status === undefined || found.status < 300
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
