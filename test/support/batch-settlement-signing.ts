/**
 * Our own signing of batch-settlement messages, for tests that drive the contracts directly: deposit
 * authorizations (EIP-3009 to the collector, Permit2 with the channel witness) and their collector
 * data, vouchers, refunds and claim batches.
 */
import { encodeAbiParameters, encodeAbiParameters as encode, keccak256, type Address, type Hex, type LocalAccount } from 'viem'
import { PERMIT2_ADDRESS } from '../../src/evm/codec/permit2-abi.js'
import { channelId, claimBatchTypedData, refundTypedData, voucherTypedData, type ChannelConfig, type VoucherClaim } from '../../src/evm/batch/codec.js'
import { ERC3009_DEPOSIT_COLLECTOR_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, depositPermitWitnessTypes, receiveWithAuthorizationTypes } from '../../src/evm/batch/constants.js'
import type { TestToken } from './evm-contracts.js'

/** A channel config for `payer` (its own voucher signer unless `payerAuthorizer` is given). */
export function channelConfig(fields: { payer: Address; receiver: Address; receiverAuthorizer: Address; token: Address; payerAuthorizer?: Address; withdrawDelay?: number; salt?: Hex }): ChannelConfig {
  return {
    payer: fields.payer,
    payerAuthorizer: fields.payerAuthorizer ?? fields.payer,
    receiver: fields.receiver,
    receiverAuthorizer: fields.receiverAuthorizer,
    token: fields.token,
    withdrawDelay: fields.withdrawDelay ?? 900,
    salt: fields.salt ?? `0x${'00'.repeat(32)}`,
  }
}

export function signVoucher(signer: LocalAccount, chainId: number, id: Hex, maxClaimableAmount: bigint): Promise<Hex> {
  return signer.signTypedData(voucherTypedData(chainId, id, maxClaimableAmount))
}

export function signRefund(signer: LocalAccount, chainId: number, id: Hex, nonce: bigint, amount: bigint): Promise<Hex> {
  return signer.signTypedData(refundTypedData(chainId, id, nonce, amount))
}

export function signClaimBatch(signer: LocalAccount, chainId: number, claims: readonly VoucherClaim[]): Promise<Hex> {
  return signer.signTypedData(claimBatchTypedData(chainId, claims))
}

/**
 * An EIP-3009 deposit authorization as the official client writes it (`erc3009Authorization`): the
 * payer (`from`, an EOA or a smart wallet whose owner is `signer`) lets the EIP-3009 collector receive
 * `amount`, under a nonce bound to the channel.
 */
export async function erc3009DepositAuthorization(signer: LocalAccount, token: TestToken, chainId: number, config: ChannelConfig, amount: bigint, validBefore = BigInt(Math.floor(Date.now() / 1000) + 3600)) {
  const salt = keccak256(encode([{ type: 'address' }, { type: 'uint256' }], [config.payer, BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000))]))
  const nonce = keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [channelId(config, chainId), BigInt(salt)]))
  const signature = await signer.signTypedData({
    domain: { name: token.name, version: token.version, chainId, verifyingContract: token.address },
    types: receiveWithAuthorizationTypes,
    primaryType: 'ReceiveWithAuthorization',
    message: { from: config.payer, to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS, value: amount, validAfter: 0n, validBefore, nonce },
  })
  return { validAfter: '0', validBefore: validBefore.toString(), salt, signature }
}

/** The EIP-3009 collector's data for a deposit of `amount` into `config`'s channel, signed by its payer. */
export async function erc3009CollectorData(payer: LocalAccount, token: TestToken, chainId: number, config: ChannelConfig, amount: bigint, validBefore?: bigint): Promise<Hex> {
  const auth = await erc3009DepositAuthorization(payer, token, chainId, config, amount, validBefore)
  return encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }], [0n, BigInt(auth.validBefore), BigInt(auth.salt), auth.signature])
}

/** The Permit2 collector's data for a deposit of `amount` into `config`'s channel, signed by its payer. */
export async function permit2CollectorData(payer: LocalAccount, token: TestToken, chainId: number, config: ChannelConfig, amount: bigint, nonce = BigInt(Date.now()) * 1000n + BigInt(Math.floor(Math.random() * 1000))): Promise<Hex> {
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600)
  const signature = await payer.signTypedData({
    domain: { name: 'Permit2', chainId, verifyingContract: PERMIT2_ADDRESS },
    types: depositPermitWitnessTypes,
    primaryType: 'PermitWitnessTransferFrom',
    message: { permitted: { token: token.address, amount }, spender: PERMIT2_DEPOSIT_COLLECTOR_ADDRESS, nonce, deadline, witness: { channelId: channelId(config, chainId) } },
  })
  return encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }], [nonce, deadline, signature, '0x'])
}
