/**
 * Token-2022 mint-extension initializers for the tests, written from the
 * spl-token-2022 instruction layouts (no client package: `@solana-program/token-2022`
 * is not a dependency). Each runs on the uninitialized mint account, before
 * InitializeMint2, and says how many value bytes its TLV entry takes.
 *
 * @example
 * const mint = await createMint(svm, { payer, authority, tokenProgram: TOKEN_2022_PROGRAM, extensions: [transferFeeExtension({ basisPoints: 1_000, maximumFee: 10n ** 12n })] })
 */
import { type Address, getAddressEncoder } from '@solana/kit'

/** One extension to initialize on a new Token-2022 mint. */
export interface MintExtensionInit {
  /** Bytes of the extension's value in the mint's TLV data. */
  readonly size: number
  /** The initializer's instruction data (its only account is the mint, writable). */
  readonly data: Uint8Array
}

const NONE = new Uint8Array(32)
const key = (address: Address | undefined): Uint8Array => (address ? new Uint8Array(getAddressEncoder().encode(address)) : NONE)
/** A `COption<Pubkey>` in instruction data: 0, or 1 and the key. */
const optionalKey = (address: Address | undefined): number[] => (address ? [1, ...key(address)] : [0])
const u16 = (value: number) => [value & 0xff, value >> 8]
const u64 = (value: bigint) => Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn))

/** TransferFeeExtension (26) / InitializeTransferFeeConfig (0): both fee schedules start as this one. */
export function transferFeeExtension(options: { basisPoints: number; maximumFee: bigint; authority?: Address }): MintExtensionInit {
  return { size: 108, data: Uint8Array.from([26, 0, ...optionalKey(options.authority), 0, ...u16(options.basisPoints), ...u64(options.maximumFee)]) }
}

/** InitializePermanentDelegate (35). */
export function permanentDelegateExtension(delegate: Address): MintExtensionInit {
  return { size: 32, data: Uint8Array.from([35, ...key(delegate)]) }
}

/** PausableExtension (44) / Initialize (0) with a pause authority. */
export function pausableExtension(authority: Address): MintExtensionInit {
  return { size: 33, data: Uint8Array.from([44, 0, ...key(authority)]) }
}

/** InitializeNonTransferableMint (32). */
export function nonTransferableExtension(): MintExtensionInit {
  return { size: 0, data: Uint8Array.from([32]) }
}

/** DefaultAccountStateExtension (28) / Initialize (0): 1 initialized, 2 frozen (needs a freeze authority). */
export function defaultAccountStateExtension(state: 1 | 2): MintExtensionInit {
  return { size: 1, data: Uint8Array.from([28, 0, state]) }
}

/** TransferHookExtension (36) / Initialize (0): authority and hook program (either may be none). */
export function transferHookExtension(options: { authority?: Address; program?: Address }): MintExtensionInit {
  return { size: 64, data: Uint8Array.from([36, 0, ...key(options.authority), ...key(options.program)]) }
}

/** InitializeMintCloseAuthority (25): harmless for payments. */
export function mintCloseAuthorityExtension(authority: Address): MintExtensionInit {
  return { size: 32, data: Uint8Array.from([25, ...optionalKey(authority)]) }
}

/** MetadataPointerExtension (39) / Initialize (0): harmless for payments. */
export function metadataPointerExtension(options: { authority?: Address; metadata?: Address }): MintExtensionInit {
  return { size: 64, data: Uint8Array.from([39, 0, ...key(options.authority), ...key(options.metadata)]) }
}

/**
 * The size of a mint account with these extensions: the base padded to a token account (165),
 * the account type byte, then a 4-byte header and the value of each. Token-2022 refuses a size
 * equal to a multisig's (355) and pads it by two bytes.
 */
export function mintSpaceWith(extensions: readonly MintExtensionInit[]): number {
  if (extensions.length === 0) return 82
  const space = extensions.reduce((total, extension) => total + 4 + extension.size, 166)
  return space === 355 ? space + 2 : space
}
