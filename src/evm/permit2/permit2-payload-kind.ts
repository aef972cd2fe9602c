/**
 * True when an inner payment payload is a Permit2 one (the official facilitator tells them apart by
 * this key). Apart from permit2-payment.ts, which needs viem, so that the resource-server side can
 * tell an EIP-3009 payment from a Permit2 one without loading the EVM adapter.
 */
export function isPermit2Payload(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && 'permit2Authorization' in raw
}
