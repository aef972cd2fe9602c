/**
 * Hands out consecutive transaction nonces of one signer without asking the
 * node each time, so many settles can sign and send at once. The first call
 * (and the first after `reset`) reads the chain's pending count; concurrent
 * callers share that one read.
 */
export interface NonceManager {
  /** The next unused nonce. */
  next(): Promise<number>
  /** Forgets the local count (after a failed send) so the next call re-reads the chain. */
  reset(): void
}

/**
 * @example
 * const nonces = createNonceManager(() => client.getTransactionCount({ address, blockTag: 'pending' }))
 * const nonce = await nonces.next()
 */
export function createNonceManager(readPendingCount: () => Promise<number>): NonceManager {
  let nextNonce: number | undefined
  let loading: Promise<void> | undefined
  let generation = 0
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
      return nextNonce++
    },
    reset() {
      generation++
      nextNonce = undefined
    },
  }
}
