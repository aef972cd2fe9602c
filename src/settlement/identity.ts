/**
 * A payer or account as a key: EVM hex folded to one case (checksums vary), anything else as
 * given. Base58 (Solana) is case-sensitive: folded, two different accounts could share a key,
 * and an attacker could grind an address that folds to a victim's to get the victim refused.
 */
export function identity(value: string): string {
  // Without `0x` (base58 has no 0) or an upper-case hex digit nothing folds: the regex pass and its callback are skipped.
  if (!value.includes('0x') || !UPPER_HEX.test(value)) return value
  return value.replace(/0x[0-9a-fA-F]{40}/g, (hex) => hex.toLowerCase())
}

const UPPER_HEX = /[A-F]/
