// How the PostgreSQL store's calls travel: those issued in one turn of the event loop go to the
// server as one statement (`run_batch`, `apply_counters`), one round trip and one commit for all.

/** One call as `run_batch` takes it: `o` the operation, `k` the key the batch is ordered by. */
export type BatchedOp = Record<string, unknown> & { o: string; k: string }

/** Batches of calls of one kind (writes, reads) at the server at once, per store. */
const BATCHES_IN_FLIGHT = 2

interface BatchedCall {
  op: BatchedOp
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/**
 * Every other call issued in one turn of the event loop goes to the server as one
 * statement (`run_batch`): one round trip, one transaction and one commit (with its
 * flush) for all of them, instead of one each; pg spends tens of µs of CPU per query.
 * They run sorted by key (a key's calls keep their order), so batches of two instances
 * lock rows in one order. A batch that fails is rolled back whole and its calls run
 * again one by one, so that a failure is answered to its own call only. Reads go in
 * batches of their own: a transaction that writes nothing does not wait for the flush.
 *
 * At most `BATCHES_IN_FLIGHT` batches of a kind are at the server at once; calls made
 * meanwhile wait for one to come back and then go together. Measured on anvil: more,
 * smaller batches each waiting for a flush of their own (a pool of 40) settled fewer
 * payments a second than fewer, larger ones.
 */
export function callBatches(runBatch: (ops: BatchedOp[]) => Promise<unknown[]>) {
  const queues = { writes: [] as BatchedCall[], reads: [] as BatchedCall[] }
  const inFlight = { writes: 0, reads: 0 }
  const scheduled = { writes: false, reads: false }
  let closed = false
  function batched(op: BatchedOp): Promise<unknown> {
    if (closed) return Promise.reject(new Error('the PostgreSQL store is closed'))
    const queue = op.o === 'get' || op.o === 'fields' ? 'reads' : 'writes'
    return new Promise((resolve, reject) => {
      queues[queue].push({ op, resolve, reject })
      schedule(queue)
    })
  }
  /** Sends the queue's calls at the end of this turn, if a batch may leave now. */
  function schedule(queue: keyof typeof queues): void {
    if (scheduled[queue] || queues[queue].length === 0 || inFlight[queue] >= BATCHES_IN_FLIGHT) return
    scheduled[queue] = true
    setImmediate(() => {
      scheduled[queue] = false
      if (inFlight[queue] >= BATCHES_IN_FLIGHT || queues[queue].length === 0) return
      inFlight[queue]++
      void flushCalls(queue).finally(() => {
        inFlight[queue]--
        schedule(queue)
      })
    })
  }
  async function flushCalls(queue: keyof typeof queues): Promise<void> {
    const batch = queues[queue]
    queues[queue] = []
    // A stable sort: one key's calls stay in the order they were made.
    const order = batch.map((_, i) => i).sort((a, b) => {
      const ka = batch[a]!.op.k
      const kb = batch[b]!.op.k
      return ka < kb ? -1 : ka > kb ? 1 : a - b
    })
    try {
      const results = await runBatch(order.map((i) => batch[i]!.op))
      for (const [position, i] of order.entries()) batch[i]!.resolve(results[position])
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error)
      // One after the other, in the batch's order: a key's calls must not overtake each other.
      for (const i of order) {
        const call = batch[i]!
        try {
          call.resolve((await runBatch([call.op]))[0])
        } catch (alone) {
          call.reject(alone)
        }
      }
    }
  }
  return {
    batched,
    /** Refuses calls from now on; those already issued are sent (answered when the promise settles). */
    close(): Promise<unknown> {
      closed = true
      return Promise.all([queues.writes.length > 0 ? flushCalls('writes') : undefined, queues.reads.length > 0 ? flushCalls('reads') : undefined])
    },
  }
}

/** The kinds of counter keys: numeric hash, text hash, distinct-count sketch. */
type CounterKind = 'h' | 't' | 'd'
type CounterFields = Map<string, number | string>
interface CounterKey {
  key: string
  kind: CounterKind
  ttl: number | null | undefined
  fields: CounterFields
}

/**
 * Counter writes (hashes, text hashes, sketches) issued in one turn of the event loop go
 * to the server together: one statement, one transaction, each key locked once. The
 * statistics recorder alone writes seven of them per settle; sent one by one, each would
 * cost a round trip and a turn on the hot rows' locks. Writes to one key merge in order
 * (numbers add, texts replace, sketch registers keep the maximum, the last ttl wins), and
 * every caller is answered once the statement has committed.
 *
 * `apply` runs `apply_counters` with its parameters: the columns of the merged writes and `now()`.
 */
export function counterBatches(now: () => number, apply: (values: unknown[]) => Promise<unknown>) {
  let counters = new Map<string, CounterKey>()
  let waiting: { resolve: () => void; reject: (error: unknown) => void }[] = []
  function counter(kind: CounterKind, key: string, ttlMs: number | null, change: (fields: CounterFields) => void): Promise<void> {
    const id = `${kind}\u0000${key}`
    let entry = counters.get(id)
    if (!entry) {
      entry = { key, kind, ttl: undefined, fields: new Map() }
      counters.set(id, entry)
    }
    if (ttlMs !== null) entry.ttl = ttlMs
    change(entry.fields)
    if (waiting.length === 0) setImmediate(() => void flushCounters())
    return new Promise<void>((resolve, reject) => waiting.push({ resolve, reject }))
  }
  async function flushCounters(): Promise<void> {
    const batch = [...counters.values()]
    const callers = waiting
    counters = new Map()
    waiting = []
    // Sorted by key and kind: the order every batch locks its keys in.
    batch.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0))
    const keys: string[] = []
    const kinds: string[] = []
    const ttls: (number | null)[] = []
    const rows: number[] = []
    const fields: string[] = []
    const nums: (number | null)[] = []
    const texts: (string | null)[] = []
    for (const [i, entry] of batch.entries()) {
      keys.push(entry.key)
      kinds.push(entry.kind)
      ttls.push(entry.ttl ?? null)
      for (const [field, value] of entry.fields) {
        rows.push(i + 1)
        fields.push(field)
        nums.push(typeof value === 'number' ? value : null)
        texts.push(typeof value === 'string' ? value : null)
      }
    }
    try {
      await apply([keys, kinds, ttls, rows, fields, nums, texts, now()])
      for (const caller of callers) caller.resolve()
    } catch (error) {
      for (const caller of callers) caller.reject(error)
    }
  }
  return {
    counter,
    /** Sends the writes waiting for the end of this turn now (at close). */
    flushWaiting: (): Promise<void> | undefined => (waiting.length > 0 ? flushCounters() : undefined),
  }
}
