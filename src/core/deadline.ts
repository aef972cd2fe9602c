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
