import { channelConfigFields } from './constants.js'

/** The part of `x402BatchSettlement`'s ABI the facilitator calls and reads. */

const channelConfigComponents = channelConfigFields

const voucherClaimComponents = [
  {
    name: 'voucher',
    type: 'tuple',
    components: [
      { name: 'channel', type: 'tuple', components: channelConfigComponents },
      { name: 'maxClaimableAmount', type: 'uint128' },
    ],
  },
  { name: 'signature', type: 'bytes' },
  { name: 'totalClaimed', type: 'uint128' },
] as const

const config = { name: 'config', type: 'tuple', components: channelConfigComponents } as const

export const batchSettlementAbi = [
  { type: 'function', name: 'multicall', stateMutability: 'nonpayable', inputs: [{ name: 'data', type: 'bytes[]' }], outputs: [{ name: 'results', type: 'bytes[]' }] },
  {
    type: 'function',
    name: 'deposit',
    stateMutability: 'nonpayable',
    inputs: [config, { name: 'amount', type: 'uint128' }, { name: 'collector', type: 'address' }, { name: 'collectorData', type: 'bytes' }],
    outputs: [],
  },
  { type: 'function', name: 'claim', stateMutability: 'nonpayable', inputs: [{ name: 'voucherClaims', type: 'tuple[]', components: voucherClaimComponents }], outputs: [] },
  {
    type: 'function',
    name: 'claimWithSignature',
    stateMutability: 'nonpayable',
    inputs: [{ name: 'voucherClaims', type: 'tuple[]', components: voucherClaimComponents }, { name: 'authorizerSignature', type: 'bytes' }],
    outputs: [],
  },
  { type: 'function', name: 'settle', stateMutability: 'nonpayable', inputs: [{ name: 'receiver', type: 'address' }, { name: 'token', type: 'address' }], outputs: [] },
  { type: 'function', name: 'initiateWithdraw', stateMutability: 'nonpayable', inputs: [config, { name: 'amount', type: 'uint128' }], outputs: [] },
  { type: 'function', name: 'finalizeWithdraw', stateMutability: 'nonpayable', inputs: [config], outputs: [] },
  { type: 'function', name: 'refund', stateMutability: 'nonpayable', inputs: [config, { name: 'amount', type: 'uint128' }], outputs: [] },
  {
    type: 'function',
    name: 'refundWithSignature',
    stateMutability: 'nonpayable',
    inputs: [config, { name: 'amount', type: 'uint128' }, { name: 'nonce', type: 'uint256' }, { name: 'receiverAuthorizerSignature', type: 'bytes' }],
    outputs: [],
  },
  { type: 'function', name: 'getChannelId', stateMutability: 'view', inputs: [config], outputs: [{ name: '', type: 'bytes32' }] },
  {
    type: 'function',
    name: 'channels',
    stateMutability: 'view',
    inputs: [{ name: 'channelId', type: 'bytes32' }],
    outputs: [{ name: 'balance', type: 'uint128' }, { name: 'totalClaimed', type: 'uint128' }],
  },
  {
    type: 'function',
    name: 'pendingWithdrawals',
    stateMutability: 'view',
    inputs: [{ name: 'channelId', type: 'bytes32' }],
    outputs: [{ name: 'amount', type: 'uint128' }, { name: 'initiatedAt', type: 'uint40' }],
  },
  { type: 'function', name: 'refundNonce', stateMutability: 'view', inputs: [{ name: 'channelId', type: 'bytes32' }], outputs: [{ name: '', type: 'uint256' }] },
  {
    type: 'function',
    name: 'receivers',
    stateMutability: 'view',
    inputs: [{ name: 'receiver', type: 'address' }, { name: 'token', type: 'address' }],
    outputs: [{ name: 'totalClaimed', type: 'uint128' }, { name: 'totalSettled', type: 'uint128' }],
  },
  {
    type: 'event',
    name: 'Settled',
    anonymous: false,
    inputs: [
      { name: 'receiver', type: 'address', indexed: true },
      { name: 'token', type: 'address', indexed: true },
      { name: 'sender', type: 'address', indexed: true },
      { name: 'amount', type: 'uint128', indexed: false },
    ],
  },
  {
    type: 'event',
    name: 'Refunded',
    anonymous: false,
    inputs: [
      { name: 'channelId', type: 'bytes32', indexed: true },
      { name: 'nonce', type: 'uint256', indexed: false },
      { name: 'amount', type: 'uint128', indexed: false },
    ],
  },
] as const
