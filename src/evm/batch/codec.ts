/**
 * The wire shapes of `batch-settlement` payloads (as the official `@x402/evm` client and server
 * make them) and the EIP-712 hashes over them: the channel id of a config, the voucher, refund and
 * claim-batch digests, and the recovery of an EOA voucher's signer (no RPC).
 */
import * as z from 'zod'
import { domainSeparator, getAddress, hashTypedData, stringToHex, type Address, type Hex } from 'viem'
import { keccak256 } from '../crypto/keccak.js'
import { batchSettlementDomain, channelConfigTypes, claimBatchTypes, refundTypes, voucherTypes } from './constants.js'

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte hex address')
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex')
const hexBytes = z.string().regex(/^0x(?:[0-9a-fA-F]{2})*$/, 'must be hex bytes')
const UINT128_MAX = 2n ** 128n - 1n
const UINT256_MAX = 2n ** 256n - 1n
const uint = (max: bigint) =>
  z
    .union([z.string().regex(/^\d{1,78}$/, 'must be a decimal integer string'), z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)])
    .transform((value) => BigInt(value))
    .refine((value) => value <= max, 'is out of range')
/** A uint256 written as decimal or as 0x hex (the EIP-3009 deposit salt is 32 bytes of hex). */
const uint256OrHex = z.union([uint(UINT256_MAX), z.string().regex(/^0x[0-9a-fA-F]{1,64}$/).transform((value) => BigInt(value))])

export const channelConfigSchema = z.object({
  payer: address,
  payerAuthorizer: address,
  receiver: address,
  receiverAuthorizer: address,
  token: address,
  withdrawDelay: z.number().int().nonnegative().max(2 ** 40 - 1),
  salt: bytes32,
})
export type ChannelConfigWire = z.input<typeof channelConfigSchema>

/** A channel config with checksummed addresses, as the contract takes it. */
export interface ChannelConfig {
  readonly payer: Address
  readonly payerAuthorizer: Address
  readonly receiver: Address
  readonly receiverAuthorizer: Address
  readonly token: Address
  readonly withdrawDelay: number
  readonly salt: Hex
}

const config = channelConfigSchema.transform(
  (c): ChannelConfig => ({
    payer: getAddress(c.payer),
    payerAuthorizer: getAddress(c.payerAuthorizer),
    receiver: getAddress(c.receiver),
    receiverAuthorizer: getAddress(c.receiverAuthorizer),
    token: getAddress(c.token),
    withdrawDelay: c.withdrawDelay,
    salt: c.salt.toLowerCase() as Hex,
  }),
)

const voucher = z.object({
  channelId: bytes32.transform((id) => id.toLowerCase() as Hex),
  maxClaimableAmount: uint(UINT128_MAX),
  signature: hexBytes.transform((s) => s as Hex),
})

const erc3009Authorization = z.object({
  validAfter: uint(UINT256_MAX),
  validBefore: uint(UINT256_MAX),
  salt: uint256OrHex,
  signature: hexBytes.transform((s) => s as Hex),
})

const permit2Authorization = z.object({
  from: address.transform((a) => getAddress(a)),
  permitted: z.object({ token: address.transform((a) => getAddress(a)), amount: uint(UINT256_MAX) }),
  spender: address.transform((a) => getAddress(a)),
  nonce: uint(UINT256_MAX),
  deadline: uint(UINT256_MAX),
  witness: z.object({ channelId: bytes32.transform((id) => id.toLowerCase() as Hex) }),
  signature: hexBytes.transform((s) => s as Hex),
})

export const depositPayloadSchema = z.object({
  type: z.literal('deposit'),
  channelConfig: config,
  voucher,
  deposit: z.object({
    amount: uint(UINT128_MAX).refine((a) => a > 0n, 'must be positive'),
    authorization: z
      .object({ erc3009Authorization: erc3009Authorization.optional(), permit2Authorization: permit2Authorization.optional() })
      .refine((a) => (a.erc3009Authorization === undefined) !== (a.permit2Authorization === undefined), 'must hold exactly one of erc3009Authorization and permit2Authorization'),
  }),
})

export const voucherPayloadSchema = z.object({ type: z.literal('voucher'), channelConfig: config, voucher })

/** One claim row: a payer's voucher over a channel, and the total to claim on it (at most its ceiling). */
const voucherClaim = z.object({
  voucher: z.object({ channel: config, maxClaimableAmount: uint(UINT128_MAX) }),
  signature: hexBytes.transform((s) => s as Hex),
  totalClaimed: uint(UINT128_MAX),
})
export type VoucherClaim = z.output<typeof voucherClaim>

/** A refund as the client signs it (`amount` absent: everything unclaimed), or as the server completes it for settle. */
export const refundPayloadSchema = z.object({
  type: z.literal('refund'),
  channelConfig: config,
  voucher,
  amount: z.string().optional(),
  refundNonce: uint(UINT256_MAX).optional(),
  claims: z.array(voucherClaim).max(1000).optional(),
  refundAuthorizerSignature: hexBytes.transform((s) => s as Hex).optional(),
  claimAuthorizerSignature: hexBytes.transform((s) => s as Hex).optional(),
})

export const claimPayloadSchema = z.object({
  type: z.literal('claim'),
  claims: z.array(voucherClaim).min(1).max(1000),
  claimAuthorizerSignature: hexBytes.transform((s) => s as Hex).optional(),
})

export const settlePayloadSchema = z.object({
  type: z.literal('settle'),
  receiver: address.transform((a) => getAddress(a)),
  token: address.transform((a) => getAddress(a)),
})

export type DepositPayload = z.output<typeof depositPayloadSchema>
export type VoucherPayload = z.output<typeof voucherPayloadSchema>
export type RefundPayload = z.output<typeof refundPayloadSchema>
export type ClaimPayload = z.output<typeof claimPayloadSchema>
export type SettlePayload = z.output<typeof settlePayloadSchema>
export type BatchPayload = DepositPayload | VoucherPayload | RefundPayload | ClaimPayload | SettlePayload

/** The config with checksummed addresses and a lower-case salt (what the hashes and the contract take). */
export function normalizeChannelConfig(wire: ChannelConfigWire): ChannelConfig {
  return config.parse(wire)
}

/** Channel ids computed lately: every voucher of a channel hashes the same config. Cleared when full. */
const channelIds = new Map<string, Hex>()
const CHANNEL_ID_CACHE = 10_000

/** The channel id: the EIP-712 hash of the config under the batch-settlement domain of `chainId`. */
export function channelId(channel: ChannelConfig, chainId: number): Hex {
  // A config object read once per channel (parseBatchPayload's) skips building the key.
  const byObject = idsByConfig.get(channel)
  if (byObject?.chainId === chainId) return byObject.id
  const id = channelIdOf(channel, chainId)
  if (Object.isFrozen(channel)) idsByConfig.set(channel, { chainId, id })
  return id
}

/** Ids of frozen configs by the object (a frozen one cannot change under its id). */
const idsByConfig = new WeakMap<ChannelConfig, { chainId: number; id: Hex }>()

function channelIdOf(channel: ChannelConfig, chainId: number): Hex {
  const key = `${chainId}|${channel.payer}|${channel.payerAuthorizer}|${channel.receiver}|${channel.receiverAuthorizer}|${channel.token}|${channel.withdrawDelay}|${channel.salt}`.toLowerCase()
  const known = channelIds.get(key)
  if (known) return known
  const id = hashTypedData({ domain: batchSettlementDomain(chainId), types: channelConfigTypes, primaryType: 'ChannelConfig', message: channel })
  if (channelIds.size >= CHANNEL_ID_CACHE) channelIds.clear()
  channelIds.set(key, id)
  return id
}

export function voucherTypedData(chainId: number, id: Hex, maxClaimableAmount: bigint) {
  return { domain: batchSettlementDomain(chainId), types: voucherTypes, primaryType: 'Voucher', message: { channelId: id, maxClaimableAmount } } as const
}

export function refundTypedData(chainId: number, id: Hex, nonce: bigint, amount: bigint) {
  return { domain: batchSettlementDomain(chainId), types: refundTypes, primaryType: 'Refund', message: { channelId: id, nonce, amount } } as const
}

/** The ClaimBatch a receiver authorizer signs for `claimWithSignature`: one entry per row, in order. */
export function claimBatchTypedData(chainId: number, claims: readonly VoucherClaim[]) {
  const entries = claims.map((c) => ({ channelId: channelId(c.voucher.channel, chainId), maxClaimableAmount: c.voucher.maxClaimableAmount, totalClaimed: c.totalClaimed }))
  return { domain: batchSettlementDomain(chainId), types: claimBatchTypes, primaryType: 'ClaimBatch', message: { claims: entries } } as const
}

const VOUCHER_TYPEHASH = keccak256(stringToHex('Voucher(bytes32 channelId,uint128 maxClaimableAmount)')).slice(2)
const domainSeparators = new Map<number, string>()

/**
 * The voucher's EIP-712 digest, `keccak256(0x1901 ‖ domainSeparator ‖ keccak256(typeHash ‖ channelId ‖ amount))`,
 * with the domain separator computed once per chain and the process's fast keccak: the hash of every
 * voucher verify (the same as viem's hashTypedData, checked in test/evm/batch/codec.test.ts).
 */
export function voucherDigest(chainId: number, id: Hex, maxClaimableAmount: bigint): Hex {
  let separator = domainSeparators.get(chainId)
  if (separator === undefined) {
    separator = domainSeparator({ domain: batchSettlementDomain(chainId) }).slice(2)
    domainSeparators.set(chainId, separator)
  }
  const struct = keccak256(`0x${VOUCHER_TYPEHASH}${id.slice(2).toLowerCase().padStart(64, '0')}${maxClaimableAmount.toString(16).padStart(64, '0')}`)
  return keccak256(`0x1901${separator}${struct.slice(2)}`)
}


const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n

/**
 * Whether a 65-byte signature is one OpenZeppelin's ECDSA.tryRecover (what the contract runs) accepts:
 * low s (at most n/2) and v 27 or 28. viem recovers high-s and v 0/1 too, which the contract rejects.
 */
export function isContractRecoverable(signature: Hex): boolean {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return false
  const s = BigInt(`0x${signature.slice(66, 130)}`)
  const v = Number.parseInt(signature.slice(130, 132), 16)
  return s <= SECP256K1_HALF_N && (v === 27 || v === 28)
}

/** A channel's on-chain state, as verify answers it in `extra` and settle in `extra.channelState`. */
export interface ChannelSnapshot {
  readonly channelId: Hex
  readonly balance: bigint
  readonly totalClaimed: bigint
  /** Seconds since the epoch when a timed withdrawal was initiated, 0 when none is pending. */
  readonly withdrawRequestedAt: number
  readonly refundNonce: bigint
}

/** The snapshot on the wire: amounts as decimal strings, `withdrawRequestedAt` a number. */
export function snapshotWire(s: ChannelSnapshot) {
  return {
    channelId: s.channelId,
    balance: s.balance.toString(),
    totalClaimed: s.totalClaimed.toString(),
    withdrawRequestedAt: s.withdrawRequestedAt,
    refundNonce: s.refundNonce.toString(),
  }
}
