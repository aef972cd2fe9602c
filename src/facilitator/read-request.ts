import { trace } from '@opentelemetry/api'
import type { RefusalEvent } from '../core/hooks.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { REJECTION } from '../errors/reasons.js'
import type { PaymentRequest } from '../schemas/messages.js'
import { parsePaymentRequest } from '../schemas/parse-request.js'
import type { PaymentOptions } from './facilitator.js'
import { notify } from './run-hooks.js'

/** Network, scheme and version of the request on the active span. */
export function labelSpan(request: PaymentRequest): void {
  trace.getActiveSpan()?.setAttributes({
    'x402.network': request.paymentRequirements.network,
    'x402.scheme': request.paymentRequirements.scheme,
    'x402.version': request.x402Version,
  })
}

export type ParsedBody = { request: PaymentRequest } | { rejection: { reason: string; message: string }; network: string }

function parseOrThrow(body: unknown): ParsedBody {
  const parsed = parsePaymentRequest(body)
  if (parsed.ok) return { request: parsed.request }
  if (parsed.reason === 'unsupported_version') {
    const requirements = (body as { paymentRequirements?: { network?: unknown } }).paymentRequirements
    const network = typeof requirements?.network === 'string' ? requirements.network : ''
    return { rejection: { reason: REJECTION.invalidVersion, message: `x402 version ${parsed.version} is not supported` }, network }
  }
  throw new FacilitatorError('invalid_request', `${parsed.path}: ${parsed.message}`, { details: { field: parsed.path } })
}

/** parseOrThrow, telling the after-hooks of a request refused before it could be read as a payment. */
export function parseOrRefuse(body: unknown, operation: RefusalEvent['operation'], options: PaymentOptions): ParsedBody {
  let parsed: ParsedBody
  try {
    parsed = parseOrThrow(body)
  } catch (error) {
    notify(options, 'afterRefusal', { operation, reason: 'invalid_request' })
    throw error
  }
  if ('rejection' in parsed) notify(options, 'afterRefusal', { operation, reason: REJECTION.invalidVersion })
  return parsed
}
