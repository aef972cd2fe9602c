/**
 * The v2 payment payload schema's check written out by hand, for the paywall's hot path (a voucher
 * per request): the same rules as `paymentPayloadV2Schema` and the same output (known keys in the
 * schema's order, then the others; records copied), or undefined for anything it does not accept
 * outright, which then goes to the schema for its verdict and message.
 */
import type { PaymentPayloadV2 } from './payload.js'

const TOP = ['x402Version', 'accepted', 'payload', 'resource', 'extensions'] as const
const ACCEPTED = ['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds', 'extra'] as const
const RESOURCE = ['url', 'description', 'mimeType'] as const
const AMOUNT = /^\d{1,78}$/

type Plain = Record<string, unknown>

const isPlain = (value: unknown): value is Plain => typeof value === 'object' && value !== null && !Array.isArray(value) && !Object.hasOwn(value, '__proto__')
const nonEmpty = (value: unknown): boolean => typeof value === 'string' && value.length >= 1 && value.length <= 2048
const textUpTo = (value: unknown, max: number): boolean => value === undefined || value === null || (typeof value === 'string' && value.length <= max)
const nullishRecord = (value: unknown): boolean => value === undefined || value === null || isPlain(value)

/** The object as a zod loose object outputs it: `known` keys present, in that order, then the rest in theirs. */
function ordered(value: Plain, known: readonly string[], copy: (key: string, item: unknown) => unknown = (_key, item) => item): Plain {
  const out: Plain = {}
  for (const key of known) if (Object.hasOwn(value, key)) out[key] = copy(key, value[key])
  for (const key in value) if (!known.includes(key)) out[key] = value[key]
  return out
}

const copyRecord = (value: unknown): unknown => (isPlain(value) ? { ...value } : value)

/** The payload as `paymentPayloadV2Schema.parse` answers it, or undefined to ask the schema. */
export function checkPaymentPayloadV2(json: unknown): PaymentPayloadV2 | undefined {
  if (!isPlain(json) || json.x402Version !== 2) return undefined
  const { accepted, payload, resource, extensions } = json
  if (!isPlain(accepted) || !isPlain(payload) || !nullishRecord(extensions)) return undefined
  if (!nonEmpty(accepted.scheme) || !nonEmpty(accepted.network) || !nonEmpty(accepted.asset) || !nonEmpty(accepted.payTo)) return undefined
  if (typeof accepted.amount !== 'string' || !AMOUNT.test(accepted.amount)) return undefined
  const timeout = accepted.maxTimeoutSeconds
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isSafeInteger(timeout) || timeout < 0)) return undefined
  if (!nullishRecord(accepted.extra)) return undefined
  if (resource !== undefined && resource !== null) {
    if (!isPlain(resource) || !nonEmpty(resource.url) || !textUpTo(resource.description, 4096) || !textUpTo(resource.mimeType, 256)) return undefined
  }
  return ordered(json, TOP, (key, item) => {
    if (key === 'accepted') return ordered(accepted, ACCEPTED, (field, value) => (field === 'extra' ? copyRecord(value) : value))
    if (key === 'resource') return isPlain(item) ? ordered(item, RESOURCE) : item
    return key === 'payload' || key === 'extensions' ? copyRecord(item) : item
  }) as PaymentPayloadV2
}
