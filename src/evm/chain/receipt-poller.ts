import type { Hex } from 'viem'

/** What a receipt lookup answers: the fields settle reads, or `null` while the transaction is not mined. */
export interface ReceiptSummary {
  readonly status: string
  readonly blockNumber: string
  /** Hex quantities of the receipt that price it (see `receiptCost`). */
  readonly gasUsed?: string
  readonly effectiveGasPrice?: string
  /** OP-stack chains (Base, Optimism): the L1 data fee the sender also paid. */
  readonly l1Fee?: string | null
}

/**
 * Outcome of waiting for a receipt. `cost` is what the sender paid for the transaction, in wei
 * (see `receiptCost`), when the receipt says.
 */
export type ReceiptOutcome = { status: 'success' | 'reverted'; blockNumber: bigint; cost?: bigint } | { status: 'pending' }

/**
 * What a mined transaction cost its sender, in wei: `gasUsed × effectiveGasPrice`, plus the
 * `l1Fee` an OP-stack receipt carries; `undefined` when the receipt lacks the first two.
 *
 * @example
 * receiptCost({ status: '0x1', blockNumber: '0x5', gasUsed: '0x5208', effectiveGasPrice: '0x3b9aca00' }) // 21000000000000n
 */
export function receiptCost(receipt: ReceiptSummary): bigint | undefined {
  const quantity = (value: unknown) => (typeof value === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(value) ? BigInt(value) : undefined)
  const gasUsed = quantity(receipt.gasUsed)
  const price = quantity(receipt.effectiveGasPrice)
  if (gasUsed === undefined || price === undefined) return undefined
  return gasUsed * price + (quantity(receipt.l1Fee) ?? 0n)
}

/** The bounds of one wait. */
export interface ReceiptWait {
  /** How long to wait for the receipt; 0 asks once. */
  readonly timeoutMs: number
  /** Longest pause between two lookups of this hash (lookups start fast and back off). */
  readonly maxIntervalMs: number
  /** Ends the wait with a pending outcome at once. */
  readonly signal: AbortSignal
}

/** One network's receipt poller, shared by every settle waiting on that network. */
export interface ReceiptPoller {
  /**
   * Resolves when the receipt of `hash` appears, `timeoutMs` passes or `signal` aborts
   * (then `pending`). Lookup errors are retried: the transaction is already out, so only
   * a pending answer (which keeps the hash) may end the wait early. Never rejects.
   */
  wait(hash: Hex, options: ReceiptWait): Promise<ReceiptOutcome>
  /** Hashes currently waited for. */
  pending(): number
}

// A local node mines within milliseconds; one lookup per tick serves every waiting hash, so starting fast costs little.
const FIRST_INTERVAL_MS = 10
/** How soon a hash is looked up again when a new block appeared while its lookup was out: the node is mining what was sent with it. */
const PROGRESS_RECHECK_MS = 2

interface Waiter {
  readonly hash: Hex
  readonly deadline: number
  readonly maxIntervalMs: number
  readonly signal: AbortSignal
  interval: number
  /** When this hash is next looked up. */
  due: number
  /** A lookup for this waiter is on the way. */
  checking: boolean
  /** How many new blocks had been seen when its last lookup was issued (see `blocksSeen`). */
  askedAtBlocks: number
  finish(outcome: ReceiptOutcome): void
}

/**
 * One polling loop per network instead of one per settle: every tick looks up
 * the hashes that are due, all issued in the same tick so the default transport
 * sends them as JSON-RPC batches (one HTTP request per 100 settles waiting).
 * Each hash keeps its own schedule (at once, then 10 ms doubling up to its
 * `maxIntervalMs`, never past its deadline); a hash due within a quarter of its interval
 * joins the current tick rather than costing a request of its own. A receipt from
 * a new block gives every other waiter one lookup at once: the chain is including
 * our transactions, and backing off would only delay their answers; a lookup
 * that comes back empty while such a block appeared is repeated 2 ms later. When nothing
 * is pending, no timer is left behind; while something is, the timer keeps the
 * process alive, as a settle awaiting its receipt always did.
 *
 * @example
 * const receipts = createReceiptPoller((hash) => client.request({ method: 'eth_getTransactionReceipt', params: [hash] }))
 * const outcome = await receipts.wait(hash, { timeoutMs: 30_000, maxIntervalMs: 1_000, signal })
 */
export function createReceiptPoller(lookup: (hash: Hex) => Promise<ReceiptSummary | null | undefined>): ReceiptPoller {
  const waiters = new Set<Waiter>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let timerAt = Number.POSITIVE_INFINITY
  // The newest block a receipt came from: only a new block hurries the other waiters.
  let newestBlock = -1n
  // How many times a receipt came from a new block: a lookup that comes back empty after this moved saw the chain progress.
  let blocksSeen = 0

  const schedule = () => {
    let next = Number.POSITIVE_INFINITY
    for (const waiter of waiters) if (!waiter.checking && waiter.due < next) next = waiter.due
    if (next === timerAt) return
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    timerAt = next
    if (next === Number.POSITIVE_INFINITY) return
    timer = setTimeout(tick, Math.max(0, next - Date.now()))
  }

  function tick() {
    timer = undefined
    timerAt = Number.POSITIVE_INFINITY
    const now = Date.now()
    const due = new Map<Hex, Waiter[]>()
    for (const waiter of waiters) {
      if (waiter.checking || waiter.due > now + waiter.interval / 4) continue
      waiter.checking = true
      waiter.askedAtBlocks = blocksSeen
      const same = due.get(waiter.hash)
      if (same) same.push(waiter)
      else due.set(waiter.hash, [waiter])
    }
    // Issued in one synchronous loop: the transport batches them.
    for (const [hash, group] of due) void check(hash, group)
    schedule()
  }

  async function check(hash: Hex, group: readonly Waiter[]) {
    let receipt: ReceiptSummary | null | undefined
    try {
      receipt = await lookup(hash)
    } catch {
      // Transient: keep polling until the bound.
    }
    const now = Date.now()
    if (receipt) hurryOthers(hash, BigInt(receipt.blockNumber), now)
    for (const waiter of group) {
      waiter.checking = false
      if (!waiters.has(waiter)) continue
      if (receipt) {
        const cost = receiptCost(receipt)
        waiter.finish({ status: receipt.status === '0x1' ? 'success' : 'reverted', blockNumber: BigInt(receipt.blockNumber), ...(cost === undefined ? {} : { cost }) })
      } else if (now >= waiter.deadline) {
        waiter.finish({ status: 'pending' })
      } else if (blocksSeen > waiter.askedAtBlocks) {
        // A new block came while this lookup was out (an answer of the same batch, read before
        // this one): one more lookup soon, the backoff left as it is, as in hurryOthers.
        waiter.due = Math.min(now + PROGRESS_RECHECK_MS, waiter.deadline)
      } else {
        waiter.due = Math.min(now + waiter.interval, waiter.deadline)
        waiter.interval = Math.min(waiter.interval * 2, waiter.maxIntervalMs)
      }
    }
    schedule()
  }

  /**
   * A receipt from a block not seen before: the others sent around the same
   * time may be in it too. Each gets one lookup now instead of sleeping out its
   * backed-off interval (which stays as it is, so a chain with 2 s blocks costs
   * one extra round per block, not a return to fast polling).
   */
  function hurryOthers(found: Hex, block: bigint, now: number) {
    if (block <= newestBlock) return
    newestBlock = block
    blocksSeen++
    for (const waiter of waiters) {
      if (waiter.hash !== found && !waiter.checking && waiter.due > now) waiter.due = now
    }
  }

  return {
    wait(hash, options) {
      if (options.signal.aborted) return Promise.resolve({ status: 'pending' })
      return new Promise<ReceiptOutcome>((resolve) => {
        const now = Date.now()
        const onAbort = () => waiter.finish({ status: 'pending' })
        const waiter: Waiter = {
          hash,
          deadline: now + options.timeoutMs,
          maxIntervalMs: options.maxIntervalMs,
          signal: options.signal,
          interval: FIRST_INTERVAL_MS,
          due: now,
          checking: false,
          askedAtBlocks: blocksSeen,
          finish(outcome) {
            if (!waiters.delete(waiter)) return
            options.signal.removeEventListener('abort', onAbort)
            resolve(outcome)
            schedule()
          },
        }
        waiters.add(waiter)
        options.signal.addEventListener('abort', onAbort, { once: true })
        schedule()
      })
    },
    pending: () => waiters.size,
  }
}
