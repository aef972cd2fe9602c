import type { Address } from 'viem'

/** The EIP-2612 permit the proxies' `settleWithPermit` runs (in a try/catch) before the transfer: owner -> Permit2, `value` = `permitted.amount`. */
const eip2612PermitTuple = {
  name: 'permit2612',
  type: 'tuple',
  components: [
    { name: 'value', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'r', type: 'bytes32' },
    { name: 's', type: 'bytes32' },
    { name: 'v', type: 'uint8' },
  ],
} as const

const permitTransferFromTuple = {
  name: 'permit',
  type: 'tuple',
  components: [
    { name: 'permitted', type: 'tuple', components: [{ name: 'token', type: 'address' }, { name: 'amount', type: 'uint256' }] },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const

const exactWitnessTuple = { name: 'witness', type: 'tuple', components: [{ name: 'to', type: 'address' }, { name: 'validAfter', type: 'uint256' }] } as const
const uptoWitnessTuple = {
  name: 'witness',
  type: 'tuple',
  components: [{ name: 'to', type: 'address' }, { name: 'facilitator', type: 'address' }, { name: 'validAfter', type: 'uint256' }],
} as const

/** Uniswap's Permit2, the same address on every EVM chain (CREATE2). */
export const PERMIT2_ADDRESS: Address = '0x000000000022D473030F116dDEE9F6B43aC78BA3'
/** The x402 exact Permit2 proxy (the `spender` of every exact Permit2 payment), the same on every chain. */
export const X402_EXACT_PERMIT2_PROXY: Address = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001'

/** The EIP-712 types the payer signs for an exact Permit2 payment (domain: name "Permit2", chainId, Permit2). */
export const permitWitnessTransferFromTypes = {
  PermitWitnessTransferFrom: [
    { name: 'permitted', type: 'TokenPermissions' },
    { name: 'spender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
    { name: 'witness', type: 'Witness' },
  ],
  TokenPermissions: [
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
  Witness: [
    { name: 'to', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const

export const exactPermit2ProxyAbi = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [permitTransferFromTuple, { name: 'owner', type: 'address' }, exactWitnessTuple, { name: 'signature', type: 'bytes' }],
    outputs: [],
  },
  {
    type: 'function',
    name: 'settleWithPermit',
    stateMutability: 'nonpayable',
    inputs: [eip2612PermitTuple, permitTransferFromTuple, { name: 'owner', type: 'address' }, exactWitnessTuple, { name: 'signature', type: 'bytes' }],
    outputs: [],
  },
  { type: 'function', name: 'PERMIT2', stateMutability: 'view', inputs: [], outputs: [{ type: 'address' }] },
  { type: 'error', name: 'InvalidAmount', inputs: [] },
  { type: 'error', name: 'InvalidDestination', inputs: [] },
  { type: 'error', name: 'InvalidOwner', inputs: [] },
  { type: 'error', name: 'PaymentTooEarly', inputs: [] },
  { type: 'error', name: 'Permit2612AmountMismatch', inputs: [] },
  // Permit2's own errors, bubbled up through the proxy.
  { type: 'error', name: 'InvalidNonce', inputs: [] },
  { type: 'error', name: 'SignatureExpired', inputs: [{ name: 'signatureDeadline', type: 'uint256' }] },
  { type: 'error', name: 'InvalidSignature', inputs: [] },
  { type: 'error', name: 'InvalidSigner', inputs: [] },
  { type: 'error', name: 'InvalidSignatureLength', inputs: [] },
  { type: 'error', name: 'InvalidContractSignature', inputs: [] },
] as const

export const permit2NonceBitmapAbi = [
  {
    type: 'function',
    name: 'nonceBitmap',
    stateMutability: 'view',
    inputs: [{ type: 'address' }, { type: 'uint256' }],
    outputs: [{ type: 'uint256' }],
  },
] as const

export const erc20AllowanceAbi = [
  {
    type: 'function',
    name: 'allowance',
    stateMutability: 'view',
    inputs: [{ type: 'address' }, { type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
] as const

/** The x402 upto Permit2 proxy (the `spender` of every upto payment), the same on every chain. */
export const X402_UPTO_PERMIT2_PROXY: Address = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002'

/** The EIP-712 types the payer signs for an upto payment: the witness also names the facilitator. */
export const uptoPermitWitnessTransferFromTypes = {
  PermitWitnessTransferFrom: permitWitnessTransferFromTypes.PermitWitnessTransferFrom,
  TokenPermissions: permitWitnessTransferFromTypes.TokenPermissions,
  Witness: [
    { name: 'to', type: 'address' },
    { name: 'facilitator', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const

/** The upto proxy's `settle`: the facilitator the witness names moves `amount` (at most the permitted maximum). */
export const uptoPermit2ProxyAbi = [
  {
    type: 'function',
    name: 'settle',
    stateMutability: 'nonpayable',
    inputs: [permitTransferFromTuple, { name: 'amount', type: 'uint256' }, { name: 'owner', type: 'address' }, uptoWitnessTuple, { name: 'signature', type: 'bytes' }],
    outputs: [],
  },
  {
    type: 'function',
    name: 'settleWithPermit',
    stateMutability: 'nonpayable',
    inputs: [eip2612PermitTuple, permitTransferFromTuple, { name: 'amount', type: 'uint256' }, { name: 'owner', type: 'address' }, uptoWitnessTuple, { name: 'signature', type: 'bytes' }],
    outputs: [],
  },
  { type: 'error', name: 'Permit2612AmountMismatch', inputs: [] },
  { type: 'error', name: 'AmountExceedsPermitted', inputs: [] },
  { type: 'error', name: 'UnauthorizedFacilitator', inputs: [] },
] as const

/** The EIP-2612 `nonces(owner)` of a token (read with a gas-sponsoring permit, to tell why it would not apply). */
export const eip2612NoncesAbi = [
  { type: 'function', name: 'nonces', stateMutability: 'view', inputs: [{ type: 'address' }], outputs: [{ type: 'uint256' }] },
] as const
