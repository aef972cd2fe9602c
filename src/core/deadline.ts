import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * Settles with `work`, or rejects with a `timeout` fault as soon as `signal`
 * aborts, so a hung RPC never holds a caller past its budget.
 */
export function withDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Nobody waits for the work any more; its failure must not become an unhandled rejection.
    work.catch(() => undefined)
    return Promise.reject(timeoutFault(signal.reason))
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(timeoutFault(signal.reason))
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

function timeoutFault(cause: unknown) {
  return new FacilitatorError('timeout', 'the operation did not finish within its time budget', { cause })
}

/** A time budget's signal and the end of the budget's bookkeeping. */
export interface Budget {
  /** Aborts when the budget runs out (a `TimeoutError`, as `AbortSignal.timeout`'s), or when the parent aborts (its reason). */
  readonly signal: AbortSignal
  /** The work is over: frees the timer (and the listener on the parent); the signal never aborts after it. */
  end(): void
}

/**
 * `AbortSignal.timeout(ms)` (or `AbortSignal.any([parent, AbortSignal.timeout(ms)])`) for work that
 * knows when it ends. Node's own signals keep their timer and their links (about 1 KB) until the
 * budget runs out, however early the work ended: a request's budget of a minute kept every answered
 * request of that minute, and `AbortSignal.any` costs some 40 µs a call (see docs/benchmarks.md).
 *
 * @example
 * const budget = timeBudget(10_000)
 * try { return await work(budget.signal) } finally { budget.end() }
 */
export function timeBudget(ms: number, parent?: AbortSignal): Budget {
  const controller = new AbortController()
  if (parent?.aborted) {
    controller.abort(parent.reason)
    return { signal: controller.signal, end() {} }
  }
  const onParentAbort = () => {
    clearTimeout(timer)
    controller.abort(parent!.reason)
  }
  const timer = setTimeout(() => {
    parent?.removeEventListener('abort', onParentAbort)
    controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
  }, ms)
  // As AbortSignal.timeout's: a pending budget does not keep the process alive.
  timer.unref?.()
  parent?.addEventListener('abort', onParentAbort, { once: true })
  return {
    signal: controller.signal,
    end() {
      clearTimeout(timer)
      parent?.removeEventListener('abort', onParentAbort)
    },
  }
}
