import * as z from 'zod'
import { jsonObjectSchema, nonEmptyString } from './primitives.js'
import { paymentRequirementsV2Schema, resourceInfoSchema } from './requirements.js'

/**
 * v1 payment payload. The scheme-specific `payload` stays an open object here:
 * each scheme adapter validates its own inner shape and answers a payment
 * rejection (not a 400) when it does not fit.
 */
export const paymentPayloadV1Schema = z.looseObject({
  x402Version: z.literal(1),
  scheme: nonEmptyString,
  network: nonEmptyString,
  payload: jsonObjectSchema,
})
export type PaymentPayloadV1 = z.infer<typeof paymentPayloadV1Schema>

/** v2 payment payload: `accepted` holds the requirements the client chose. */
export const paymentPayloadV2Schema = z.looseObject({
  x402Version: z.literal(2),
  accepted: paymentRequirementsV2Schema,
  payload: jsonObjectSchema,
  resource: resourceInfoSchema.nullish(),
  extensions: jsonObjectSchema.nullish(),
})
export type PaymentPayloadV2 = z.infer<typeof paymentPayloadV2Schema>

export type PaymentPayload = PaymentPayloadV1 | PaymentPayloadV2
