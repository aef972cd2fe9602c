import type { z } from 'zod'
import { type PaymentRequest, paymentRequestV1Schema, paymentRequestV2Schema } from './messages.js'

/** The outcome of reading an untrusted verify/settle body. */
export type ParsedPaymentRequest =
  | { ok: true; request: PaymentRequest }
  /** The body does not fit the schema; `path` names the first bad field. */
  | { ok: false; reason: 'malformed'; path: string; message: string }
  /** A well-formed envelope whose protocol version this library does not serve. */
  | { ok: false; reason: 'unsupported_version'; version: number }

/** A JSON object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Renders a zod issue path the way a user would write it: `paymentPayload.payload.nonce`. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    else out += out ? `.${String(key)}` : String(key)
  }
  return out || '(body)'
}

/** First issue of a failed zod parse, as a path and a message. */
export function firstIssue(error: z.ZodError): { path: string; message: string } {
  const issue = error.issues[0]
  if (!issue) return { path: '(body)', message: 'is invalid' }
  return { path: formatIssuePath(issue.path), message: issue.message }
}

/**
 * Validates a verify/settle body. The version is read first (from
 * `paymentPayload.x402Version`, else the top-level `x402Version`) so that the
 * matching schema reports the exact field that is wrong.
 */
export function parsePaymentRequest(body: unknown): ParsedPaymentRequest {
  if (!isRecord(body)) return { ok: false, reason: 'malformed', path: '(body)', message: 'must be a JSON object' }
  const payload = body.paymentPayload
  const version = isRecord(payload) ? payload.x402Version : body.x402Version
  if (typeof version !== 'number' || !Number.isInteger(version)) {
    const path = isRecord(payload) ? 'paymentPayload.x402Version' : 'paymentPayload'
    const message = isRecord(payload) ? 'must be an integer protocol version' : 'must be an object'
    return { ok: false, reason: 'malformed', path, message }
  }
  if (version !== 1 && version !== 2) return { ok: false, reason: 'unsupported_version', version }
  const schema = version === 1 ? paymentRequestV1Schema : paymentRequestV2Schema
  const parsed = schema.safeParse(body)
  if (!parsed.success) return { ok: false, reason: 'malformed', ...firstIssue(parsed.error) }
  return { ok: true, request: parsed.data }
}
