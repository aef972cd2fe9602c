import * as z from 'zod'
import { jsonObjectSchema, nonEmptyString } from './primitives.js'
import { paymentPayloadV1Schema, paymentPayloadV2Schema } from './payload.js'
import { paymentRequirementsV1Schema, paymentRequirementsV2Schema } from './requirements.js'

/** Body of POST /verify and POST /settle for protocol version 1. */
export const paymentRequestV1Schema = z.looseObject({
  x402Version: z.literal(1, { error: 'must match paymentPayload.x402Version' }).optional(),
  paymentPayload: paymentPayloadV1Schema,
  paymentRequirements: paymentRequirementsV1Schema,
})
export type PaymentRequestV1 = z.infer<typeof paymentRequestV1Schema>

/** Body of POST /verify and POST /settle for protocol version 2. */
export const paymentRequestV2Schema = z.looseObject({
  x402Version: z.literal(2, { error: 'must match paymentPayload.x402Version' }).optional(),
  paymentPayload: paymentPayloadV2Schema,
  paymentRequirements: paymentRequirementsV2Schema,
})
export type PaymentRequestV2 = z.infer<typeof paymentRequestV2Schema>

/** Body of POST /verify and POST /settle, either version. */
export const paymentRequestSchema = z.union([paymentRequestV1Schema, paymentRequestV2Schema])
export type PaymentRequest = PaymentRequestV1 | PaymentRequestV2

/** Answer of verify. A failed check is `isValid: false` with a snake_case `invalidReason`. */
export const verifyResponseSchema = z.object({
  isValid: z.boolean(),
  invalidReason: z.string().optional(),
  invalidMessage: z.string().optional(),
  payer: z.string().optional(),
  /** Scheme-specific facts of the verify (`batch-settlement`: the channel snapshot). */
  extra: jsonObjectSchema.optional(),
})
export type VerifyResponse = z.infer<typeof verifyResponseSchema>

/**
 * Answer of settle. `transaction` is empty only when nothing was broadcast;
 * once a transaction was sent its id is always kept, also in failures and in
 * the `settlement_pending` outcome.
 */
export const settleResponseSchema = z.object({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  transaction: z.string(),
  network: z.string(),
  payer: z.string().optional(),
  /** What was charged, in atomic units (the `upto` scheme: its answers always carry it). */
  amount: z.string().optional(),
  /** The settled asset, when the scheme names it (`batch-settlement` deposits). */
  asset: z.string().optional(),
  /** Scheme-specific facts of the settlement (`batch-settlement`: `channelState`, `chargedAmount`). */
  extra: jsonObjectSchema.optional(),
})
export type SettleResponse = z.infer<typeof settleResponseSchema>

/** One payment kind served: (version, scheme, network) and scheme-specific `extra`. */
export const supportedKindSchema = z.object({
  x402Version: z.number().int(),
  scheme: nonEmptyString,
  network: nonEmptyString,
  extra: jsonObjectSchema.optional(),
})
export type SupportedKind = z.infer<typeof supportedKindSchema>

/** Answer of GET /supported. `signers` is keyed by network family (`eip155:*`, `solana:*`). */
export const supportedResponseSchema = z.object({
  kinds: z.array(supportedKindSchema),
  extensions: z.array(z.string()),
  signers: z.record(z.string(), z.array(z.string())),
})
export type SupportedResponse = z.infer<typeof supportedResponseSchema>

/** Error body of every endpoint: a message and a stable code. */
export const errorBodySchema = z.object({
  error: z.string(),
  code: z.string(),
})
export type ErrorBody = z.infer<typeof errorBodySchema>
