/**
 * Hands out consecutive transaction nonces of one signer without asking the
 * node each time, so many settles can sign at once, and lets their
 * transactions reach the node in nonce order. The first call (and the first
 * after `reset`) reads the chain's pending count; concurrent callers share
 * that one read.
 *
 * Why the order: a node that receives nonce n+1 before n parks it as a future
 * transaction. geth keeps few of those per account (64 by default) and drops
 * the rest; a load-balanced RPC may hand n+1 to a backend that never sees n;
 * anvil sometimes never promotes a parked transaction at all (seen here with
 * 100 concurrent sends from one key). Every later transaction of the key then
 * waits behind it. So a nonce is held from `next()` until its send is answered
 * (`release`), and `turn` waits until no lower nonce is held: signing still
 * overlaps, only the journaling and sending of one key go one after another.
 * When a lower nonce is given up (a reset), the holders of higher ones take
 * fresh nonces rather than send behind a gap.
 */
export interface NonceManager {
  /** The next unused nonce, held until {@link NonceManager.release}. */
  next(): Promise<NonceTicket>
  /**
   * Resolves `true` once no lower nonce is held (every transaction before this
   * one was answered or given up), or `false` as soon as the count is reset:
   * a lower nonce may then be a gap, and this ticket must be released and a
   * fresh one taken instead of sending behind it.
   */
  turn(ticket: NonceTicket): Promise<boolean>
  /** The send of this ticket was answered, or it will never be sent: later nonces may go. */
  release(ticket: NonceTicket): void
  /** Forgets the local count (after a failed send) so the next call re-reads the chain. */
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
 * try { if (await nonces.turn(ticket)) await send(ticket.nonce) } finally { nonces.release(ticket) }
 */
export function createNonceManager(readPendingCount: () => Promise<number>): NonceManager {
  let nextNonce: number | undefined
  let loading: Promise<void> | undefined
  let generation = 0
  // Held nonces with how many holders each (a re-read after a reset may hand a nonce out twice).
  const held = new Map<number, number>()
  const waiting = new Set<{ ticket: NonceTicket; go(fresh: boolean): void }>()

  const lowestHeld = (): number => {
    let lowest = Number.POSITIVE_INFINITY
    for (const nonce of held.keys()) if (nonce < lowest) lowest = nonce
    return lowest
  }
  const wake = () => {
    if (waiting.size === 0) return
    const lowest = lowestHeld()
    for (const waiter of waiting) {
      const stale = waiter.ticket.generation !== generation
      if (stale || waiter.ticket.nonce <= lowest) {
        waiting.delete(waiter)
        waiter.go(!stale)
      }
    }
  }

  return {
    async next() {
      while (nextNonce === undefined) {
        if (!loading) {
          const started = generation
          loading = readPendingCount()
            .then((count) => {
              // A reset during the read makes this count stale: read again.
              if (started === generation) nextNonce = count
            })
            .finally(() => {
              loading = undefined
            })
        }
        await loading
      }
      const nonce = nextNonce++
      held.set(nonce, (held.get(nonce) ?? 0) + 1)
      return { nonce, generation }
    },
    turn(ticket) {
      if (ticket.generation !== generation) return Promise.resolve(false)
      if (ticket.nonce <= lowestHeld()) return Promise.resolve(true)
      return new Promise<boolean>((go) => waiting.add({ ticket, go }))
    },
    release(ticket) {
      const holders = held.get(ticket.nonce)
      if (holders === undefined) return
      if (holders > 1) held.set(ticket.nonce, holders - 1)
      else held.delete(ticket.nonce)
      wake()
    },
    reset() {
      generation++
      nextNonce = undefined
      wake()
    },
  }
}
