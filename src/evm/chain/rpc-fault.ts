import { BaseError, HttpRequestError, RpcRequestError, TimeoutError } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { connectionCause } from '../../transport/connection-cause.js'

/**
 * Turns an error of an RPC request into the library's fault family. Messages
 * are our own: viem's quote the RPC URL, which often carries an API key, so
 * the original error is only kept as `cause` for logs.
 *
 * @example
 * try { await client.request(...) } catch (e) { throw toRpcFault(e, 'reading the chain state') }
 */
export function toRpcFault(error: unknown, what: string): FacilitatorError {
  if (error instanceof FacilitatorError) return error
  const found = error instanceof BaseError ? error.walk((e) => e instanceof TimeoutError || e instanceof HttpRequestError || e instanceof RpcRequestError) : undefined
  if (found instanceof TimeoutError) {
    return new FacilitatorError('rpc_timeout', `${what}: the RPC endpoint did not answer in time`, { cause: error })
  }
  if (found instanceof HttpRequestError) {
    // Why, in a few words: the HTTP status, or how the connection failed (refused, host not found, reset).
    const why = found.status ? `HTTP ${found.status}` : connectionCause(found.cause)
    return new FacilitatorError('rpc_unavailable', `${what}: the RPC endpoint is unreachable${why ? ` (${why})` : ''}`, { cause: error })
  }
  if (found instanceof RpcRequestError) {
    return new FacilitatorError('rpc_error', `${what}: the RPC endpoint answered error ${found.code}`, { cause: error })
  }
  return new FacilitatorError('rpc_error', `${what}: the RPC request failed`, { cause: error })
}

/** The node's own words for an error (for matching only, never shown to clients). */
export function rpcErrorText(error: unknown): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    parts.push(current.message)
    if (current instanceof BaseError && current.details) parts.push(current.details)
    current = current.cause
  }
  return parts.join(' | ')
}
