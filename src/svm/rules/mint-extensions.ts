import { SVM_REASON, type SvmReason } from '../reasons.js'

/**
 * Token-2022 extension types: the u16 at the head of each TLV entry of a mint
 * or token account, in the order of spl-token-2022's `ExtensionType` enum
 * (`interface/src/extension/mod.rs`).
 */
export const EXTENSION_TYPE = Object.freeze({
  Uninitialized: 0,
  TransferFeeConfig: 1,
  TransferFeeAmount: 2,
  MintCloseAuthority: 3,
  ConfidentialTransferMint: 4,
  ConfidentialTransferAccount: 5,
  DefaultAccountState: 6,
  ImmutableOwner: 7,
  MemoTransfer: 8,
  NonTransferable: 9,
  InterestBearingConfig: 10,
  CpiGuard: 11,
  PermanentDelegate: 12,
  NonTransferableAccount: 13,
  TransferHook: 14,
  TransferHookAccount: 15,
  ConfidentialTransferFeeConfig: 16,
  ConfidentialTransferFeeAmount: 17,
  MetadataPointer: 18,
  TokenMetadata: 19,
  GroupPointer: 20,
  TokenGroup: 21,
  GroupMemberPointer: 22,
  TokenGroupMember: 23,
  ConfidentialMintBurn: 24,
  ScaledUiAmount: 25,
  Pausable: 26,
  PausableAccount: 27,
})

/**
 * Mint extensions that change nothing a plain TransferChecked moves or whether it
 * succeeds: display (interest-bearing, scaled UI amount), metadata, groups, the
 * close authority (a mint with supply cannot be closed), confidential settings
 * (public transfers are untouched; a payee refusing public credits fails the simulation).
 */
const HARMLESS: ReadonlySet<number> = new Set([
  EXTENSION_TYPE.MintCloseAuthority,
  EXTENSION_TYPE.ConfidentialTransferMint,
  EXTENSION_TYPE.InterestBearingConfig,
  EXTENSION_TYPE.ConfidentialTransferFeeConfig,
  EXTENSION_TYPE.MetadataPointer,
  EXTENSION_TYPE.TokenMetadata,
  EXTENSION_TYPE.GroupPointer,
  EXTENSION_TYPE.TokenGroup,
  EXTENSION_TYPE.GroupMemberPointer,
  EXTENSION_TYPE.TokenGroupMember,
  EXTENSION_TYPE.ConfidentialMintBurn,
  EXTENSION_TYPE.ScaledUiAmount,
])

/** Extensions of token accounts: never valid in a mint. */
const ACCOUNT_ONLY: ReadonlySet<number> = new Set([
  EXTENSION_TYPE.TransferFeeAmount,
  EXTENSION_TYPE.ConfidentialTransferAccount,
  EXTENSION_TYPE.ImmutableOwner,
  EXTENSION_TYPE.MemoTransfer,
  EXTENSION_TYPE.CpiGuard,
  EXTENSION_TYPE.NonTransferableAccount,
  EXTENSION_TYPE.TransferHookAccount,
  EXTENSION_TYPE.ConfidentialTransferFeeAmount,
  EXTENSION_TYPE.PausableAccount,
])

/** Value sizes of the extensions whose content is read here (Pod structs, fixed). */
const VALUE_SIZE: ReadonlyMap<number, number> = new Map([
  [EXTENSION_TYPE.TransferFeeConfig, 108],
  [EXTENSION_TYPE.DefaultAccountState, 1],
  [EXTENSION_TYPE.NonTransferable, 0],
  [EXTENSION_TYPE.PermanentDelegate, 32],
  [EXTENSION_TYPE.TransferHook, 64],
  [EXTENSION_TYPE.Pausable, 33],
])

/**
 * Mint extensions an operator may accept although they can short payTo or block a
 * transfer (see `allowedMintExtensions` of `exactSvm`'s network entries).
 * Non-transferable mints are not among them: no transfer of one can succeed.
 */
export const ALLOWABLE_MINT_EXTENSIONS = Object.freeze(['transferFee', 'permanentDelegate', 'pausable', 'defaultAccountStateFrozen', 'transferHook'] as const)
export type MintExtensionName = (typeof ALLOWABLE_MINT_EXTENSIONS)[number]

/** One transfer-fee schedule of a mint. */
export interface TransferFeeSchedule {
  /** First epoch the schedule applies. */
  readonly epoch: bigint
  readonly maximumFee: bigint
  readonly basisPoints: number
}

/** What a Token-2022 mint says about transfers of it. */
export interface Token2022Mint {
  readonly decimals: number
  /** The extension types present, in account order. */
  readonly extensionTypes: readonly number[]
  readonly transferFee?: { readonly older: TransferFeeSchedule; readonly newer: TransferFeeSchedule }
  /** A permanent delegate is set. */
  readonly permanentDelegate?: boolean
  readonly pausable?: { readonly authority: boolean; readonly paused: boolean }
  readonly nonTransferable?: boolean
  /** The state new token accounts start in (1 initialized, 2 frozen). */
  readonly defaultAccountState?: number
  readonly transferHook?: { readonly authority: boolean; readonly program: boolean }
}

/** Base mint size; a mint with extensions is padded to a token account's size (165), then its account type. */
const MINT_SIZE = 82
const ACCOUNT_SIZE = 165
/** Token-2022 refuses extension data of exactly a multisig's size (it would be ambiguous). */
const MULTISIG_SIZE = 355
const ACCOUNT_TYPE_MINT = 1
const MINT_IS_INITIALIZED_OFFSET = 45
const MINT_DECIMALS_OFFSET = 44

/**
 * Reads a Token-2022 mint account as the program loads it: the 82-byte base,
 * then, when longer, zero padding to 165 bytes, the account type (mint) and
 * TLV entries (u16 type, u16 length, value) up to the first uninitialized one.
 * Returns `undefined` for data the program would refuse to load as a mint.
 *
 * @example
 * const mint = readToken2022Mint(accountData)
 * if (mint?.transferFee) console.log(mint.transferFee.newer.basisPoints)
 */
export function readToken2022Mint(data: Uint8Array): Token2022Mint | undefined {
  if (data.length < MINT_SIZE || data.length === MULTISIG_SIZE) return undefined
  if (data[MINT_IS_INITIALIZED_OFFSET] !== 1) return undefined
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  const decimals = data[MINT_DECIMALS_OFFSET]!
  if (data.length === MINT_SIZE) return { decimals, extensionTypes: [] }
  if (data.length <= ACCOUNT_SIZE) return undefined
  for (let i = MINT_SIZE; i < ACCOUNT_SIZE; i++) if (data[i] !== 0) return undefined
  if (data[ACCOUNT_SIZE] !== ACCOUNT_TYPE_MINT) return undefined

  const mint: { -readonly [K in keyof Token2022Mint]: Token2022Mint[K] } = { decimals, extensionTypes: [] }
  const types: number[] = []
  let at = ACCOUNT_SIZE + 1
  // As the program reads it: fewer than two bytes left, or an uninitialized type, ends the list.
  while (data.length - at >= 2) {
    const type = view.getUint16(at, true)
    if (type === EXTENSION_TYPE.Uninitialized) break
    if (data.length - at < 4) return undefined
    const length = view.getUint16(at + 2, true)
    const start = at + 4
    const end = start + length
    if (end > data.length) return undefined
    // The program finds the first entry of a type; it never writes two.
    if (types.includes(type) || ACCOUNT_ONLY.has(type)) return undefined
    const expected = VALUE_SIZE.get(type)
    if (expected !== undefined && expected !== length) return undefined
    types.push(type)
    const value = data.subarray(start, end)
    switch (type) {
      case EXTENSION_TYPE.TransferFeeConfig:
        // authority (32), withdraw authority (32), withheld (8), then older and newer {epoch u64, maximum u64, bps u16}.
        mint.transferFee = { older: scheduleAt(view, start + 72), newer: scheduleAt(view, start + 90) }
        break
      case EXTENSION_TYPE.DefaultAccountState:
        mint.defaultAccountState = value[0]!
        break
      case EXTENSION_TYPE.NonTransferable:
        mint.nonTransferable = true
        break
      case EXTENSION_TYPE.PermanentDelegate:
        mint.permanentDelegate = isSet(value)
        break
      case EXTENSION_TYPE.TransferHook:
        mint.transferHook = { authority: isSet(value.subarray(0, 32)), program: isSet(value.subarray(32, 64)) }
        break
      case EXTENSION_TYPE.Pausable:
        mint.pausable = { authority: isSet(value.subarray(0, 32)), paused: value[32] !== 0 }
        break
    }
    at = end
  }
  mint.extensionTypes = types
  return mint
}

/**
 * The fee Token-2022 withholds from a transfer of `amount` under one schedule:
 * ceil(amount x bps / 10,000), at most the schedule's maximum.
 *
 * @example
 * transferFeeOf({ epoch: 0n, maximumFee: 10n ** 18n, basisPoints: 1_000 }, 1_000n) // 100n
 */
export function transferFeeOf(schedule: TransferFeeSchedule, amount: bigint): bigint {
  if (schedule.basisPoints === 0 || amount === 0n) return 0n
  const raw = (amount * BigInt(schedule.basisPoints) + 9_999n) / 10_000n
  return raw < schedule.maximumFee ? raw : schedule.maximumFee
}

/** What {@link judgeToken2022Mint} needs to know about the payment and the operator. */
export interface MintJudgement {
  /** What the TransferChecked moves out of the source. */
  readonly amount: bigint
  /** Extensions the operator accepts. */
  readonly allowed: ReadonlySet<MintExtensionName>
  /** The current epoch: which fee schedule applies. Needed when `transferFee` is allowed. */
  readonly epoch?: bigint
}

export type MintVerdict =
  | { readonly ok: true; /** What reaches the destination. */ readonly received: bigint }
  | { readonly ok: false; readonly reason: SvmReason; readonly message: string }

/**
 * Refuses a Token-2022 mint whose extensions can make the payee receive less than
 * the amount, take the tokens back, or block the transfer, unless the operator
 * allows that extension; answers what reaches the payee otherwise. A transfer fee
 * is judged on both schedules when refused (its authority can switch them) and on
 * the one in force at `epoch` when allowed.
 *
 * @example
 * const verdict = judgeToken2022Mint(mint, { amount: 1_000n, allowed: new Set() })
 * if (!verdict.ok) console.log(verdict.reason)
 */
export function judgeToken2022Mint(mint: Token2022Mint, judgement: MintJudgement): MintVerdict {
  const { allowed, amount } = judgement
  const unknown = mint.extensionTypes.find((type) => !HARMLESS.has(type) && !VALUE_SIZE.has(type))
  if (unknown !== undefined) {
    return refuse(SVM_REASON.mintExtensionUnknown, `the mint carries Token-2022 extension type ${unknown}, which this facilitator does not know`)
  }
  if (mint.nonTransferable) return refuse(SVM_REASON.mintNonTransferable, 'the mint is non-transferable: no transfer of it can succeed')
  if (mint.pausable && (mint.pausable.paused || (mint.pausable.authority && !allowed.has('pausable')))) {
    return refuse(SVM_REASON.mintPausable, mint.pausable.paused ? 'the mint is paused: transfers of it fail' : 'the mint is pausable: its authority can block the transfer before it lands')
  }
  if (mint.permanentDelegate && !allowed.has('permanentDelegate')) {
    return refuse(SVM_REASON.mintPermanentDelegate, 'the mint has a permanent delegate, which can take the paid tokens back from payTo')
  }
  if (mint.defaultAccountState === 2 && !allowed.has('defaultAccountStateFrozen')) {
    return refuse(SVM_REASON.mintDefaultAccountStateFrozen, 'token accounts of the mint start frozen: transfers depend on its freeze authority')
  }
  if (mint.transferHook && (mint.transferHook.program || mint.transferHook.authority) && !allowed.has('transferHook')) {
    return refuse(SVM_REASON.mintTransferHook, 'the mint has a transfer hook (or an authority that can set one): the issuer\'s program decides the transfer')
  }
  const fees = mint.transferFee
  if (!fees) return { ok: true, received: amount }
  if (!allowed.has('transferFee')) {
    const fee = maxOf(transferFeeOf(fees.older, amount), transferFeeOf(fees.newer, amount))
    if (fee > 0n) return refuse(SVM_REASON.mintTransferFee, `the mint charges a transfer fee (up to ${fee} on ${amount}): payTo would receive less than the amount`)
    return { ok: true, received: amount }
  }
  if (judgement.epoch === undefined) throw new Error('judgeToken2022Mint: the epoch is needed when transfer fees are allowed')
  const schedule = judgement.epoch >= fees.newer.epoch ? fees.newer : fees.older
  return { ok: true, received: amount - transferFeeOf(schedule, amount) }
}

function refuse(reason: SvmReason, message: string): MintVerdict {
  return { ok: false, reason, message }
}

function scheduleAt(view: DataView, offset: number): TransferFeeSchedule {
  return { epoch: view.getBigUint64(offset, true), maximumFee: view.getBigUint64(offset + 8, true), basisPoints: view.getUint16(offset + 16, true) }
}

/** An `OptionalNonZeroPubkey`: all zeroes is none. */
function isSet(key: Uint8Array): boolean {
  return key.some((byte) => byte !== 0)
}

function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b
}
