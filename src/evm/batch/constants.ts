/**
 * Facts of the `batch-settlement` EVM scheme (x402 spec `scheme_batch_settlement_evm.md`): the
 * canonical contract addresses (CREATE2, the same on every chain), the EIP-712 domain and types.
 */
import type { Address } from 'viem'
import { transferWithAuthorizationTypes } from '../codec/abi.js'
import { permitWitnessTransferFromTypes } from '../codec/permit2-abi.js'

export const BATCH_SETTLEMENT_SCHEME = 'batch-settlement'

/** `x402BatchSettlement`: channels, claims, the sweep, refunds and withdrawals. */
export const BATCH_SETTLEMENT_ADDRESS: Address = '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003'
/** The collector that deposits with the payer's EIP-3009 `ReceiveWithAuthorization` (to itself). */
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS: Address = '0x4020806089470a89826cB9fB1f4059150b550004'
/** The collector that deposits through Permit2 with a `DepositWitness(bytes32 channelId)`. */
export const PERMIT2_DEPOSIT_COLLECTOR_ADDRESS: Address = '0x4020425FAf3B746C082C2f942b4E5159887B0005'

/** Withdraw delay bounds, in seconds: 15 minutes to 30 days. */
export const MIN_WITHDRAW_DELAY = 900
export const MAX_WITHDRAW_DELAY = 2_592_000

/** The EIP-712 domain of every channel id, voucher, refund and claim batch on `chainId`. */
export function batchSettlementDomain(chainId: number) {
  return { name: 'x402 Batch Settlement', version: '1', chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS } as const
}

/** A channel's configuration, field by field: its EIP-712 type (the channel id) and its ABI tuple are the same list. */
export const channelConfigFields = [
  { name: 'payer', type: 'address' },
  { name: 'payerAuthorizer', type: 'address' },
  { name: 'receiver', type: 'address' },
  { name: 'receiverAuthorizer', type: 'address' },
  { name: 'token', type: 'address' },
  { name: 'withdrawDelay', type: 'uint40' },
  { name: 'salt', type: 'bytes32' },
] as const

export const channelConfigTypes = { ChannelConfig: channelConfigFields } as const

export const voucherTypes = {
  Voucher: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
  ],
} as const

export const refundTypes = {
  Refund: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'nonce', type: 'uint256' },
    { name: 'amount', type: 'uint128' },
  ],
} as const

export const claimBatchTypes = {
  ClaimBatch: [{ name: 'claims', type: 'ClaimEntry[]' }],
  ClaimEntry: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
    { name: 'totalClaimed', type: 'uint128' },
  ],
} as const

/** EIP-3009 deposits: the payer authorizes the EIP-3009 collector to receive the deposit. */
export const receiveWithAuthorizationTypes = {
  // EIP-3009 signs the same fields for a receive as for a transfer, under another type name.
  ReceiveWithAuthorization: transferWithAuthorizationTypes.TransferWithAuthorization,
} as const

/** Permit2 deposits: the permit names the Permit2 collector as spender and the channel as witness. */
export const depositPermitWitnessTypes = {
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'DepositWitness' },
  ],
  TokenPermissions: permitWitnessTransferFromTypes.TokenPermissions,
  DepositWitness: [{ name: 'channelId', type: 'bytes32' }],
} as const
