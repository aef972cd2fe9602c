import * as z from 'zod'
import { amountSchema, jsonObjectSchema, nonEmptyString } from './primitives.js'

/**
 * x402 v1 payment requirements. `resource`, `description`, `mimeType` and
 * `maxTimeoutSeconds` are optional here because the service's own description
 * shows a reduced form; real v1 clients send them all. Unknown fields are kept.
 */
export const paymentRequirementsV1Schema = z.looseObject({
  scheme: nonEmptyString,
  network: nonEmptyString,
  maxAmountRequired: amountSchema,
  asset: nonEmptyString,
  payTo: nonEmptyString,
  resource: z.string().max(2048).optional(),
  description: z.string().max(4096).optional(),
  mimeType: z.string().max(256).optional(),
  outputSchema: z.unknown().optional(),
  maxTimeoutSeconds: z.number().int().positive().optional(),
  extra: jsonObjectSchema.nullish(),
})
export type PaymentRequirementsV1 = z.infer<typeof paymentRequirementsV1Schema>

/** x402 v2 payment requirements: CAIP-2 network and `amount`. */
export const paymentRequirementsV2Schema = z.looseObject({
  scheme: nonEmptyString,
  network: nonEmptyString,
  amount: amountSchema,
  asset: nonEmptyString,
  payTo: nonEmptyString,
  /** 0 is allowed: the official batch-settlement channel manager sends it with its claim and settle payloads. */
  maxTimeoutSeconds: z.number().int().nonnegative().optional(),
  extra: jsonObjectSchema.nullish(),
})
export type PaymentRequirementsV2 = z.infer<typeof paymentRequirementsV2Schema>

export type PaymentRequirements = PaymentRequirementsV1 | PaymentRequirementsV2

/** v2 resource description carried in the payment payload. */
export const resourceInfoSchema = z.looseObject({
  url: nonEmptyString,
  description: z.string().max(4096).nullish(),
  mimeType: z.string().max(256).nullish(),
})
export type ResourceInfo = z.infer<typeof resourceInfoSchema>
