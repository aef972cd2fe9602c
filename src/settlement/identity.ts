/**
 * A payer or account as a key: EVM hex folded to one case (checksums vary), anything else as
 * given. Base58 (Solana) is case-sensitive: folded, two different accounts could share a key,
 * and an attacker could grind an address that folds to a victim's to get the victim refused.
 */
export function identity(value: string): string {
  return value.replace(/0x[0-9a-fA-F]{40}/g, (hex) => hex.toLowerCase())
}
