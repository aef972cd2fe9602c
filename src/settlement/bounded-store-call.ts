import { traced } from '../core/tracing.js'
import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * Runs one store call within `boundMs`. A store that throws, or does not
 * answer in time, becomes a `store_unavailable` fault (HTTP 503) whose message
 * names what was being done and never quotes the store's own error (it may
 * carry a host or credentials); the original error stays in `cause`.
 *
 * The bound only stops the waiting: a write already on the wire may still
 * land later, which is why settlement treats an unanswered claim or journal
 * write as "not done" and never sends after it.
 *
 * @example
 * const record = await boundedStoreCall(() => store.get(key), 1_000, 'reading the settlement record')
 */
export function boundedStoreCall<T>(work: () => Promise<T>, boundMs: number, what: string): Promise<T> {
  return traced('x402.store', { 'x402.store.operation': what }, () => boundedCall(work, boundMs, what))
}

function boundedCall<T>(work: () => Promise<T>, boundMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let answered = false
    let started: Promise<T>
    try {
      started = work()
    } catch (error) {
      started = Promise.reject(error)
    }
    started.then(
      (value) => {
        answered = true
        if (timer) clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        answered = true
        if (timer) clearTimeout(timer)
        reject(error instanceof FacilitatorError ? error : new FacilitatorError('store_unavailable', `the store is unavailable (${what})`, { cause: error }))
      },
    )
    // The timer is armed a microtask later: a store that answers from memory has answered by then
    // and needs none (half of a call's cost); any other waits within the bound as before.
    queueMicrotask(() => {
      if (answered) return
      timer = setTimeout(() => reject(new FacilitatorError('store_unavailable', `the store did not answer in time (${what})`)), Math.max(1, boundMs))
    })
  })
}
