import * as z from 'zod'

/**
 * A token amount in the smallest unit, as a decimal integer string of any size.
 * Never a float and never a JS number, so no value overflows or loses precision.
 */
export const amountSchema = z
  .string()
  .regex(/^\d{1,78}$/, 'must be a decimal integer string (smallest token unit)')

/** A non-empty string of bounded length, for identifiers on the wire. */
export const nonEmptyString = z.string().min(1, 'must not be empty').max(2048, 'is too long')

/** A protocol version this library knows. */
export const x402VersionSchema = z.union([z.literal(1), z.literal(2)], {
  error: 'must be 1 or 2',
})

/** A free-form JSON object (`extra`, `payload`, `extensions`). */
export const jsonObjectSchema = z.record(z.string(), z.unknown())
