/**
 * Hands out consecutive transaction nonces of one signer without asking the
 * node each time, so many settles can sign at once, and lets their
 * transactions reach the node in nonce order. The first call (and the first
 * after a reset) reads the chain's pending count; concurrent callers share
 * that one read.
 *
 * Why the order: a node that receives nonce n+1 before n parks it as a future
 * transaction. geth keeps few of those per account (64 by default) and drops
 * the rest; a load-balanced RPC may hand n+1 to a backend that never sees n;
 * anvil sometimes never promotes a parked transaction at all (seen here with
 * 100 concurrent sends from one key). Every later transaction of the key then
 * waits behind it. So a nonce is held from `next()` until its send is answered
 * (`release`), and `turn` waits until every lower held nonce is handed to the
 * key's send lane in order (`queued`, see ./send-lane.ts, which sends what it
 * is handed in that order): signing overlaps, and so do the sends, but they
 * leave in nonce order.
 *
 * When the lane gives a nonce up (`giveUp`: refused, unanswered or not
 * journaled), the higher tickets whose turn came are doomed: those not sent yet
 * are withdrawn and take fresh nonces rather than send behind the gap. The given-up nonce is the
 * first handed out again after the re-read, unless the node's count is past it
 * (another transaction took it). The re-read count never goes below a nonce the
 * node took (`accepted`) or one still held on its way to the node, so a
 * transaction the node parks behind the gap keeps its nonce.
 */
export interface NonceManager {
  /** The next unused nonce, held until {@link NonceManager.release}. */
  next(): Promise<NonceTicket>
  /**
   * Resolves `true` once every lower nonce still held is queued (handed to the
   * send lane; the others were answered or given up), or `false` as soon as the count is reset:
   * a lower nonce may then be a gap, and this ticket must be released and a
   * fresh one taken instead of sending behind it.
   */
  turn(ticket: NonceTicket): Promise<boolean>
  /** The ticket's bytes were handed, in order, to the lane that sends them: the next nonce may take its turn. */
  queued(ticket: NonceTicket): void
  /** The node took the ticket's transaction: its nonce is used, even if the node parks it. */
  accepted(ticket: NonceTicket): void
  /**
   * The send lane gave up this ticket's transaction (refused, never answered, or not
   * journaled): resets the count, hands the nonce out again first after the re-read,
   * and dooms every higher ticket whose turn already came.
   */
  giveUp(ticket: NonceTicket): void
  /** Whether a lower nonce was given up after this ticket's turn came: if not sent yet, it must not be. */
  doomed(ticket: NonceTicket): boolean
  /** The send of this ticket was answered, or it will never be sent: later nonces may go. */
  release(ticket: NonceTicket): void
  /** Forgets the local count (a nonce taken was never used) so the next call re-reads the chain. */
  reset(): void
}

/** A nonce handed out by a {@link NonceManager}. */
export interface NonceTicket {
  readonly nonce: number
  /** The count it came from: a reset starts a new one. */
  readonly generation: number
}

/**
 * @example
 * const nonces = createNonceManager(() => client.getTransactionCount({ address, blockTag: 'pending' }))
 * const ticket = await nonces.next()
 * try {
 *   // lane.send marks the ticket queued (see ./send-lane.ts)
 *   if (await nonces.turn(ticket)) await lane.send({ ticket, raw: await sign(ticket.nonce), record, signal })
 * } finally { nonces.release(ticket) }
 */
export function createNonceManager(readPendingCount: () => Promise<number>): NonceManager {
  let nextNonce: number | undefined
  let loading: Promise<void> | undefined
  let generation = 0
  // Above every nonce the node took: a re-read count that does not see parked transactions stays above them.
  let floor = 0
  // Nonces given up below the count: handed out again first, lowest first.
  let gaps: number[] = []
  // Tickets handed out and not released; `sending` once their turn came (they may be on the wire),
  // `queued` once handed to the send lane (they no longer hold back the next turn), `doomed` once
  // behind a nonce given up (they no longer keep the count above them).
  // Each hold repeats its ticket's nonce, so scans walk values alone (no [key, value] pair per entry).
  const held = new Map<NonceTicket, { nonce: number; sending: boolean; queued: boolean; doomed: boolean }>()
  const waiting = new Set<{ ticket: NonceTicket; go(fresh: boolean): void }>()

  const lowestUnqueued = (): number => {
    let lowest = Number.POSITIVE_INFINITY
    for (const hold of held.values()) if (!hold.queued && !hold.doomed && hold.nonce < lowest) lowest = hold.nonce
    return lowest
  }
  const highestSending = (): number => {
    let highest = Number.NEGATIVE_INFINITY
    for (const hold of held.values()) if (hold.sending && !hold.doomed && hold.nonce > highest) highest = hold.nonce
    return highest
  }
  const wake = () => {
    if (waiting.size === 0) return
    const lowest = lowestUnqueued()
    for (const waiter of waiting) {
      const hold = waiter.ticket.generation === generation ? held.get(waiter.ticket) : undefined
      if (!hold) {
        waiting.delete(waiter)
        waiter.go(false)
      } else if (waiter.ticket.nonce <= lowest) {
        waiting.delete(waiter)
        hold.sending = true
        waiter.go(true)
      }
    }
  }
  const reset = () => {
    generation++
    nextNonce = undefined
    // Tickets that never got their turn will not send (their turn answers false): they hold nothing back.
    for (const [ticket, hold] of held) if (!hold.sending) held.delete(ticket)
    wake()
  }

  return {
    async next() {
      while (nextNonce === undefined) {
        if (!loading) {
          const started = generation
          loading = readPendingCount()
            .then((count) => {
              // A reset during the read makes this count stale: read again. A send still on the wire
              // may not be counted yet: never hand its nonce out a second time.
              if (started !== generation) return
              nextNonce = Math.max(count, floor, highestSending() + 1)
              const top = nextNonce
              gaps = gaps.filter((gap) => gap >= count && gap < top)
            })
            .finally(() => {
              loading = undefined
            })
        }
        await loading
      }
      const nonce = gaps.shift() ?? nextNonce++
      const ticket: NonceTicket = { nonce, generation }
      held.set(ticket, { nonce, sending: false, queued: false, doomed: false })
      return ticket
    },
    turn(ticket) {
      const hold = held.get(ticket)
      if (!hold || ticket.generation !== generation) return Promise.resolve(false)
      if (ticket.nonce <= lowestUnqueued()) {
        hold.sending = true
        return Promise.resolve(true)
      }
      return new Promise<boolean>((go) => waiting.add({ ticket, go }))
    },
    queued(ticket) {
      const hold = held.get(ticket)
      if (!hold?.sending || hold.queued) return
      hold.queued = true
      wake()
    },
    accepted(ticket) {
      floor = Math.max(floor, ticket.nonce + 1)
    },
    giveUp(given) {
      for (const hold of held.values()) if (hold.sending && hold.nonce > given.nonce) hold.doomed = true
      if (!gaps.includes(given.nonce)) gaps = [...gaps, given.nonce].sort((a, b) => a - b)
      reset()
    },
    doomed(ticket) {
      return held.get(ticket)?.doomed ?? false
    },
    release(ticket) {
      if (held.delete(ticket)) wake()
    },
    reset,
  }
}
