/**
 * Codes of faults: the facilitator could not answer (bad request envelope,
 * misconfiguration, an unreachable chain). A payment that fails a check is not
 * a fault; it is an `isValid:false` / `success:false` answer.
 */
export const FAULT_STATUS = {
  invalid_json: 400,
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  misconfigured: 500,
  rpc_error: 502,
  rpc_unavailable: 503,
  server_busy: 503,
  signer_busy: 503,
  signer_unfunded: 503,
  store_unavailable: 503,
  rpc_timeout: 504,
  timeout: 504,
} as const

export type FaultCode = keyof typeof FAULT_STATUS

export interface FacilitatorErrorOptions {
  cause?: unknown
  /** Overrides the HTTP status mapped from the code. */
  status?: number
  /** Extra data safe to show a client (never secrets). */
  details?: Record<string, unknown>
}

/**
 * The one error family the library throws. `message` is written for a client
 * and never carries secrets; `cause` keeps the underlying error for logs.
 *
 * @example
 * // partial
 * try { await facilitator.verify(body) }
 * catch (e) { if (isFacilitatorError(e)) res.status(e.status).json(e.toBody()) }
 */
export class FacilitatorError extends Error {
  override readonly name = 'FacilitatorError'
  readonly code: FaultCode
  readonly status: number
  readonly details: Record<string, unknown> | undefined

  constructor(code: FaultCode, message: string, options: FacilitatorErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = options.status ?? FAULT_STATUS[code]
    this.details = options.details
  }

  /** The public error body `{error, code}`. */
  toBody(): { error: string; code: string } {
    return { error: this.message, code: this.code }
  }
}

export function isFacilitatorError(value: unknown): value is FacilitatorError {
  return value instanceof FacilitatorError
}

/**
 * Turns anything thrown into a FacilitatorError without leaking its message:
 * foreign errors may quote RPC URLs (with API keys) or key material, so only
 * our own messages reach a client.
 */
export function toFacilitatorError(error: unknown): FacilitatorError {
  if (error instanceof FacilitatorError) return error
  return new FacilitatorError('internal_error', 'internal error', { cause: error })
}
