import type { VerifyResponse } from '../../schemas/messages.js'

/** A verify answer refusing the payment with `reason`. */
export function invalid(reason: string, message: string, payer?: string): VerifyResponse {
  return { isValid: false, invalidReason: reason, invalidMessage: message, ...(payer ? { payer } : {}) }
}
