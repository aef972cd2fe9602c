/**
 * Bounds the requests in flight to one JSON-RPC server, and lets the calls that
 * queue up meanwhile travel together. A request that finds a free slot leaves at
 * once, alone, so a quiet facilitator's calls never wait for anybody; one that
 * finds every slot taken waits, and when a slot frees, everything waiting (up
 * to `maxCalls` calls) leaves as one batch. A burst of a thousand verifies then
 * opens at most `maxInFlight` connections instead of a thousand (each one a TCP,
 * maybe a TLS, handshake on both sides), and sends as many calls per round trip
 * as queued up.
 */
export interface RpcCoalescerOptions {
  /** Most groups of calls on the wire at once. */
  readonly maxInFlight: number
  /** Most calls in one group; a request with more calls still goes, alone. */
  readonly maxCalls: number
}

/**
 * Sends one group of calls and answers them in call order, one answer per call.
 * Throwing fails every request of the group alike.
 */
export type SendGroup<Call, Answer> = (calls: readonly Call[]) => Promise<readonly Answer[]>

export interface RpcCoalescer<Call, Answer> {
  /**
   * Sends the calls of one request (with others, when they wait together) and
   * resolves their answers in order. `together` holds the request back until the
   * current microtask ends, so that requests issued in the same tick leave as one
   * group even while slots are free (a poller asking for many receipts at once).
   */
  request(calls: readonly Call[], options?: { readonly together?: boolean }): Promise<Answer[]>
  /** Groups on the wire now. */
  inFlight(): number
}

interface Waiting<Call, Answer> {
  readonly calls: readonly Call[]
  resolve(answers: Answer[]): void
  reject(error: unknown): void
}

export function createRpcCoalescer<Call, Answer>(send: SendGroup<Call, Answer>, options: RpcCoalescerOptions): RpcCoalescer<Call, Answer> {
  const { maxInFlight, maxCalls } = options
  let inFlight = 0
  let waiting: Waiting<Call, Answer>[] = []
  // Requests held until the end of the current microtask (`together`), kept apart so that a
  // request made meanwhile with a free slot still leaves alone.
  let held: Waiting<Call, Answer>[] = []

  const launch = (group: Waiting<Call, Answer>[]) => {
    inFlight++
    const calls = group.length === 1 ? group[0]!.calls : group.flatMap((entry) => entry.calls)
    let sent: Promise<readonly Answer[]>
    try {
      sent = send(calls)
    } catch (error) {
      sent = Promise.reject(error)
    }
    sent
      .then(
        (answers) => {
          if (answers.length !== calls.length) throw new Error(`a group of ${calls.length} calls got ${answers.length} answers`)
          let at = 0
          for (const entry of group) {
            entry.resolve(answers.slice(at, at + entry.calls.length))
            at += entry.calls.length
          }
        },
      )
      .catch((error: unknown) => {
        for (const entry of group) entry.reject(error)
      })
      .finally(() => {
        inFlight--
        drain()
      })
  }

  const drain = () => {
    while (inFlight < maxInFlight && waiting.length > 0) {
      // The oldest requests first, as many as fit in one group (at least one).
      let calls = waiting[0]!.calls.length
      let taken = 1
      while (taken < waiting.length && calls + waiting[taken]!.calls.length <= maxCalls) calls += waiting[taken++]!.calls.length
      const group = taken === waiting.length ? waiting : waiting.slice(0, taken)
      waiting = taken === waiting.length ? [] : waiting.slice(taken)
      launch(group)
    }
  }

  return {
    request(calls, requestOptions) {
      return new Promise<Answer[]>((resolve, reject) => {
        if (!requestOptions?.together) {
          waiting.push({ calls, resolve, reject })
          return drain()
        }
        held.push({ calls, resolve, reject })
        if (held.length > 1) return
        queueMicrotask(() => {
          waiting = waiting.concat(held)
          held = []
          drain()
        })
      })
    },
    inFlight: () => inFlight,
  }
}
