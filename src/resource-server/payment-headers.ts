import * as z from 'zod'
import { settleResponseSchema, type SettleResponse } from '../schemas/messages.js'
import { paymentPayloadV1Schema, paymentPayloadV2Schema, type PaymentPayload } from '../schemas/payload.js'
import { firstIssue } from '../schemas/parse-request.js'
import { checkPaymentPayloadV2 } from '../schemas/payload-v2-check.js'

/** Header names of the x402 HTTP transport. */
export const PAYMENT_HEADERS = {
  /** v1: the client's base64 JSON payment payload. */
  v1Payment: 'X-PAYMENT',
  /** v1: the server's base64 JSON settlement answer. */
  v1Response: 'X-PAYMENT-RESPONSE',
  /** v2: the client's base64 JSON payment payload. */
  v2Payment: 'PAYMENT-SIGNATURE',
  /** v2: the server's base64 JSON payment challenge (on a 402). */
  v2Required: 'PAYMENT-REQUIRED',
  /** v2: the server's base64 JSON settlement answer. */
  v2Response: 'PAYMENT-RESPONSE',
} as const

const ASCII = /^[\x00-\x7f]*$/

/** Base64 of the UTF-8 JSON of a value: the encoding of every x402 header. */
export function encodeJsonHeader(value: unknown): string {
  const json = JSON.stringify(value)
  // ASCII is its own UTF-8: btoa takes it as it is, without the byte-by-byte copy.
  if (typeof json === 'string' && ASCII.test(json)) return btoa(json)
  const bytes = new TextEncoder().encode(json)
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

// atob/btoa rather than Buffer: the core also runs in workers and edge runtimes.
function decodeBase64Utf8(value: string): string {
  const binary = atob(value.replace(/-/g, '+').replace(/_/g, '/'))
  if (ASCII.test(binary)) return binary
  // A loop, not Uint8Array.from with a mapper: a third of a paid voucher request's CPU went there.
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
}

/** The outcome of reading a payment header from a request. */
export type DecodedPaymentHeader =
  | { ok: true; header: string; payload: PaymentPayload }
  | { ok: false; reason: 'missing_payment' }
  | { ok: false; reason: 'invalid_payment_header'; message: string }

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/
const anyPayload = z.discriminatedUnion('x402Version', [paymentPayloadV1Schema, paymentPayloadV2Schema])

/** Largest header accepted; a payment payload is a few kilobytes at most. */
const MAX_HEADER_CHARS = 32_768

/**
 * Reads the payment a client sent: `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT`
 * (v1), base64 JSON validated against the payload schemas.
 *
 * @example
 * // partial
 * const payment = decodePaymentHeader(request.headers)
 * if (!payment.ok) return paymentRequiredResponse(challenge)
 */
export function decodePaymentHeader(headers: Headers): DecodedPaymentHeader {
  return readPaymentHeader((name) => headers.get(name))
}

/** {@link decodePaymentHeader} over a header getter (names case-insensitive, null when absent): any transport. */
export function readPaymentHeader(header: (name: string) => string | null): DecodedPaymentHeader {
  const v2 = header(PAYMENT_HEADERS.v2Payment)
  const name = v2 !== null ? PAYMENT_HEADERS.v2Payment : PAYMENT_HEADERS.v1Payment
  const raw = v2 ?? header(name)
  if (raw === null || raw.trim() === '') return { ok: false, reason: 'missing_payment' }
  const invalid = (message: string) => ({ ok: false as const, reason: 'invalid_payment_header' as const, message: `${name}: ${message}` })
  const value = raw.trim()
  if (value.length > MAX_HEADER_CHARS) return invalid('is too long')
  if (!BASE64.test(value)) return invalid('is not base64')
  let json: unknown
  try {
    json = JSON.parse(decodeBase64Utf8(value))
  } catch {
    return invalid('is not base64-encoded JSON')
  }
  // The common case (a v2 payload the schema accepts) checked by hand: the schema costs more than the rest of a voucher's decoding.
  const checked = checkPaymentPayloadV2(json)
  if (checked) return { ok: true, header: name, payload: checked }
  const parsed = anyPayload.safeParse(json)
  if (!parsed.success) {
    const issue = firstIssue(parsed.error)
    return invalid(`${issue.path}: ${issue.message}`)
  }
  return { ok: true, header: name, payload: parsed.data }
}

/**
 * The settlement header for a paid response: `PAYMENT-RESPONSE` for v2 and
 * `X-PAYMENT-RESPONSE` for v1, so each client finds the one it reads.
 */
export function encodePaymentResponseHeader(x402Version: 1 | 2, settlement: SettleResponse): Record<string, string> {
  // A settlement already in the schema's form (its keys, in its order) is what parsing it would answer.
  const value = encodeJsonHeader(isSettlementInSchemaForm(settlement) ? settlement : settleResponseSchema.parse(settlement))
  return x402Version === 2 ? { [PAYMENT_HEADERS.v2Response]: value } : { [PAYMENT_HEADERS.v1Response]: value }
}

/**
 * The work's response with the settlement headers added. Set in place when it has a body (a body is
 * read once, so the response is this request's own) and its headers may change (not a fetched
 * response): rebuilding the response costs as much as the rest of the answer. Otherwise a copy.
 */
export function withSettlementHeaders(response: Response, added: Record<string, string>): Response {
  if (response.body !== null) {
    try {
      for (const [name, value] of Object.entries(added)) response.headers.set(name, value)
      return response
    } catch {
      // Immutable headers (a fetched response, Response.error()): copied below.
    }
  }
  const headers = new Headers(response.headers)
  for (const [name, value] of Object.entries(added)) headers.set(name, value)
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

const SETTLEMENT_KEYS = ['success', 'errorReason', 'errorMessage', 'transaction', 'network', 'payer', 'amount', 'asset', 'extra'] as const

/** Whether `settleResponseSchema.parse` would answer this settlement unchanged: only its keys, in its order, each of its type. */
function isSettlementInSchemaForm(settlement: SettleResponse): boolean {
  if (typeof settlement !== 'object' || settlement === null || Object.getPrototypeOf(settlement) !== Object.prototype) return false
  let at = 0
  for (const key in settlement) {
    while (at < SETTLEMENT_KEYS.length && SETTLEMENT_KEYS[at] !== key) at++
    if (at === SETTLEMENT_KEYS.length) return false
    const value: unknown = settlement[key as keyof SettleResponse]
    if (key === 'success' ? typeof value !== 'boolean' : key === 'extra' ? !isJsonRecord(value) : typeof value !== 'string') return false
  }
  return typeof settlement.success === 'boolean' && typeof settlement.transaction === 'string' && typeof settlement.network === 'string'
}

const isJsonRecord = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype && !Object.hasOwn(value, '__proto__')
