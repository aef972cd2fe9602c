import * as z from 'zod'
import { isAddress, type Address, type Hex } from 'viem'
import { formatIssuePath } from '../../schemas/parse-request.js'
import type { Permit2WitnessMessage } from '../codec/permit2-typed-data.js'
import { address, uint256 } from '../exact/authorization.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'

/** The inner payload of an `exact` payment through Permit2, as the official `@x402/evm` client sends it. */
export const permit2PayloadSchema = z.object({
  // Permit2 takes a 65-byte (or 64-byte compact) signature from an account without code, any bytes for ERC-1271.
  signature: z.string().regex(/^0x([0-9a-fA-F]{2}){1,16384}$/, 'must be hex signature bytes'),
  permit2Authorization: z.object({
    from: address,
    permitted: z.object({ token: address, amount: uint256 }),
    spender: address,
    nonce: uint256,
    deadline: uint256,
    witness: z.object({ to: address, validAfter: uint256 }),
  }),
})

/** The signed fields (see Permit2WitnessMessage), with the signature and the owner they came from. */
export interface Permit2Payload extends Permit2WitnessMessage {
  readonly signature: Hex
  readonly from: Address
}

/** Validates the untrusted inner payload; a bad shape is an `invalid_payload` rejection naming the field. */
export function parsePermit2Payload(raw: unknown): Permit2Payload | Rejection {
  const parsed = permit2PayloadSchema.safeParse(raw)
  if (!parsed.success) return payloadShapeRejection(parsed.error, 'a Permit2 authorization and signature')
  return permit2PayloadOf(parsed.data)
}

/** A schema-checked hex string, typed as viem's. */
const hex = (value: string): Hex => `0x${value.slice(2)}`

/** A payload that failed its schema, as `invalid_payload` naming the first field at fault. */
export function payloadShapeRejection(error: z.ZodError, expected: string): Rejection {
  const issue = error.issues[0]
  const path = formatIssuePath(['paymentPayload', 'payload', ...(issue?.path ?? [])])
  return { reason: EVM_REJECTION.invalidPayload, message: `${path}: ${issue?.message ?? 'is invalid'} (expected ${expected})` }
}

/**
 * A Permit2 payload that passed its schema (or a schema extending it), its addresses' checksums
 * checked (`witnessAddresses`: those a wider witness adds), as the adapter reads it.
 */
export function permit2PayloadOf(data: z.infer<typeof permit2PayloadSchema>, witnessAddresses: readonly (readonly [string, string])[] = []): Permit2Payload | Rejection {
  const { signature, permit2Authorization: a } = data
  for (const [field, value] of [['from', a.from], ['permitted.token', a.permitted.token], ['spender', a.spender], ['witness.to', a.witness.to], ...witnessAddresses] as const) {
    if (!isAddress(value, { strict: true })) {
      return { reason: EVM_REJECTION.invalidPayload, message: `paymentPayload.payload.permit2Authorization.${field} is not a valid address (wrong checksum)` }
    }
  }
  return {
    signature: hex(signature),
    from: hex(a.from),
    token: hex(a.permitted.token),
    amount: a.permitted.amount,
    spender: hex(a.spender),
    nonce: a.nonce,
    deadline: a.deadline,
    to: hex(a.witness.to),
    validAfter: a.witness.validAfter,
  }
}
