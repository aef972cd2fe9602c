/**
 * Bounds the requests in flight to one JSON-RPC server, and lets the calls that
 * queue up meanwhile travel together. A request that finds a free slot leaves at
 * once, alone (a `together` one with the others of its microtask, or of its
 * event-loop turn while another is on the wire), so a quiet facilitator's calls
 * never wait for anybody; one that finds every slot taken waits, and when a slot
 * frees, everything waiting (up to `maxGroup`) leaves as one batch. A burst of a
 * thousand verifies then opens at most `maxInFlight` connections instead of a
 * thousand (each one a TCP, maybe a TLS, handshake on both sides), and sends as
 * many calls per round trip as queued up.
 */
/** The default bound of requests in flight to one server, for the transports built on this queue. */
export const DEFAULT_MAX_IN_FLIGHT = 8
/** The highest bound a transport accepts. */
export const MAX_IN_FLIGHT = 1_000

export interface RpcCoalescerOptions<Call> {
  /** Most groups on the wire at once (`now` requests aside). */
  readonly maxInFlight: number
  /**
   * Most weight in one group; asked each time a group is formed, so a server that
   * refused a batch can be sent groups of one. A heavier request still goes, alone.
   */
  readonly maxGroup: () => number
  /** The weight of one call. @default 1 */
  readonly weigh?: (call: Call) => number
  /** How long a request may wait for a slot; past it, it fails with `expired(calls)` and is never sent. */
  readonly maxWaitMs: number
  readonly expired: (calls: readonly Call[]) => unknown
}

/**
 * Sends one group of calls and answers them in call order, one answer per call.
 * Throwing fails every request of the group alike; throwing {@link Regroup}
 * puts them back at the head of the queue, to be grouped again.
 */
export type SendGroup<Call, Answer> = (calls: readonly Call[]) => Promise<readonly Answer[]>

/** Thrown by a {@link SendGroup} whose batch the server refused as a whole (after lowering `maxGroup`). */
export class Regroup extends Error {
  override readonly name = 'Regroup'
}

export interface RequestOptions {
  /**
   * Hold the request until the current microtask ends, so that requests issued
   * in it leave as one group even while slots are free (a poller asking for many
   * receipts at once). While another request is on the wire, hold it until the
   * current turn of the event loop ends instead: the verifies of HTTP requests
   * that arrived together (each in its own socket callback, all in one turn)
   * then leave as one group. A lone caller of an idle server never waits for a turn.
   */
  readonly together?: boolean
  /** Leave at once, alone, even when every slot is taken (a send whose caller bounds its wait). */
  readonly now?: boolean
  /** Aborting while the request waits for a slot drops it unsent. */
  readonly signal?: AbortSignal
}

export interface RpcCoalescer<Call, Answer> {
  /** Sends the calls of one request (with others, when they wait together) and resolves their answers in order. */
  request(calls: readonly Call[], options?: RequestOptions): Promise<Answer[]>
  /** Groups on the wire now. */
  inFlight(): number
}

interface Entry<Call, Answer> {
  readonly calls: readonly Call[]
  readonly weight: number
  readonly signal: AbortSignal | undefined
  timer?: ReturnType<typeof setTimeout>
  onAbort?: () => void
  resolve(answers: Answer[]): void
  reject(error: unknown): void
}

export function createRpcCoalescer<Call, Answer>(send: SendGroup<Call, Answer>, options: RpcCoalescerOptions<Call>): RpcCoalescer<Call, Answer> {
  const { maxInFlight, maxGroup, weigh, maxWaitMs, expired } = options
  let inFlight = 0
  let waiting: Entry<Call, Answer>[] = []
  // Requests held until the end of the current microtask or event-loop turn (`together`), kept apart
  // so that a request made meanwhile with a free slot still leaves alone.
  let held: Entry<Call, Answer>[] = []

  /** The request leaves the queue: its wait bound and abort listener go with it. */
  const leave = (entry: Entry<Call, Answer>) => {
    clearTimeout(entry.timer)
    if (entry.onAbort) entry.signal?.removeEventListener('abort', entry.onAbort)
    entry.timer = undefined
    entry.onAbort = undefined
  }
  const drop = (entry: Entry<Call, Answer>, error: unknown) => {
    const index = waiting.indexOf(entry)
    if (index < 0) return
    waiting.splice(index, 1)
    leave(entry)
    entry.reject(error)
  }
  const enqueue = (entry: Entry<Call, Answer>, atHead = false) => {
    // Aborted while held or while its refused group was on the wire: an abort listener added now would never fire.
    if (entry.signal?.aborted) return entry.reject(entry.signal.reason)
    if (atHead) waiting.unshift(entry)
    else waiting.push(entry)
    entry.timer = setTimeout(() => drop(entry, expired(entry.calls)), maxWaitMs)
    entry.timer.unref?.()
    if (entry.signal) {
      entry.onAbort = () => drop(entry, entry.signal?.reason)
      entry.signal.addEventListener('abort', entry.onAbort, { once: true })
    }
  }

  const launch = (group: Entry<Call, Answer>[]) => {
    inFlight++
    for (const entry of group) leave(entry)
    const calls = group.length === 1 ? group[0]!.calls : group.flatMap((entry) => entry.calls)
    let sent: Promise<readonly Answer[]>
    try {
      sent = send(calls)
    } catch (error) {
      sent = Promise.reject(error)
    }
    // The slot frees before the answers go out, so that a caller's next request sees it free.
    const free = () => void inFlight--
    sent
      .then(
        (answers) => {
          free()
          if (answers.length !== calls.length) throw new Error(`a group of ${calls.length} calls got ${answers.length} answers`)
          let at = 0
          for (const entry of group) {
            entry.resolve(answers.slice(at, at + entry.calls.length))
            at += entry.calls.length
          }
        },
        (error: unknown) => {
          if (error instanceof Regroup && group.length > 1) {
            // Back at the head, in their order, each with a fresh wait budget, before the slot frees for anybody.
            for (const entry of group.reverse()) enqueue(entry, true)
            return free()
          }
          free()
          throw error
        },
      )
      .catch((error: unknown) => {
        for (const entry of group) entry.reject(error)
      })
      .finally(drain)
  }

  const drain = () => {
    while (inFlight < maxInFlight && waiting.length > 0) {
      // The oldest requests first, as many as fit in one group (at least one).
      const limit = maxGroup()
      let weight = waiting[0]!.weight
      let taken = 1
      while (taken < waiting.length && weight + waiting[taken]!.weight <= limit) weight += waiting[taken++]!.weight
      const group = taken === waiting.length ? waiting : waiting.slice(0, taken)
      waiting = taken === waiting.length ? [] : waiting.slice(taken)
      launch(group)
    }
  }

  /** The held `together` requests join the queue and leave. */
  const release = () => {
    const ready = held
    held = []
    for (const each of ready) enqueue(each)
    drain()
  }

  const weightOf = (calls: readonly Call[]) => (weigh ? calls.reduce((sum, call) => sum + weigh(call), 0) : calls.length)

  return {
    request(calls, requestOptions = {}) {
      return new Promise<Answer[]>((resolve, reject) => {
        if (requestOptions.signal?.aborted) return reject(requestOptions.signal.reason)
        const entry: Entry<Call, Answer> = { calls, weight: weightOf(calls), signal: requestOptions.signal, resolve, reject }
        if (requestOptions.now || (!requestOptions.together && waiting.length === 0 && inFlight < maxInFlight)) return launch([entry])
        if (!requestOptions.together) {
          enqueue(entry)
          return drain()
        }
        held.push(entry)
        if (held.length > 1) return
        queueMicrotask(() => {
          // Idle: what this microtask made leaves now. Busy: the rest of the turn joins it (setImmediate, as the
          // socket callbacks of one turn each end in their own microtask checkpoint).
          if (inFlight === 0) release()
          else setImmediate(release)
        })
      })
    },
    inFlight: () => inFlight,
  }
}
