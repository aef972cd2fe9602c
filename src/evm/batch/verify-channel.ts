/**
 * The specification's verification rules for client payloads (deposit, voucher, refund): the channel
 * config against the requirements, the voucher signature, and the voucher against the channel state.
 */
import { encodeAbiParameters, encodeFunctionData, getAddress, hashTypedData, isAddressEqual, keccak256, zeroAddress, type Address, type Hex } from 'viem'
import type { PaymentContext } from '../../core/adapter.js'
import { PERMIT2_ADDRESS } from '../codec/permit2-abi.js'
import { gasSponsoringPermit, type Eip2612Permit } from '../permit2/eip2612-extension.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { unwrapErc6492 } from '../codec/erc6492.js'
import { batchSettlementAbi } from './abi.js'
import type { BatchChain } from './chain.js'
import { channelId, voucherDigest, type ChannelConfig, type ChannelSnapshot, type DepositPayload } from './codec.js'
import {
  ERC3009_DEPOSIT_COLLECTOR_ADDRESS,
  MAX_WITHDRAW_DELAY,
  MIN_WITHDRAW_DELAY,
  PERMIT2_DEPOSIT_COLLECTOR_ADDRESS,
  depositPermitWitnessTypes,
  receiveWithAuthorizationTypes,
} from './constants.js'
import { BATCH_REJECTION as R } from './reasons.js'
import { ecdsaSignedBy, isEoaVoucherSigned, isErc6492, signatureCheckerValid } from './signature-check.js'

export interface Refusal {
  readonly reason: string
  readonly message?: string
}

/** Rules 1–5: the config hashes to the claimed id and matches the requirements' payTo, receiver authorizer, asset and withdraw delay. */
export function checkChannelConfig(ctx: PaymentContext, chainId: number, config: ChannelConfig, claimedId: Hex): Refusal | undefined {
  if (channelId(config, chainId) !== claimedId.toLowerCase()) return { reason: R.channelIdMismatch, message: 'the channel config does not hash to voucher.channelId' }
  if (!sameAddress(config.receiver, ctx.payTo)) return { reason: R.receiverMismatch, message: 'channelConfig.receiver is not payTo' }
  const extra = ctx.requirements.extra as Record<string, unknown> | undefined
  const wanted = extra?.receiverAuthorizer
  if (typeof wanted !== 'string' || !sameAddress(wanted, config.receiverAuthorizer) || isAddressEqual(config.receiverAuthorizer, zeroAddress)) {
    return { reason: R.receiverAuthorizerMismatch, message: 'channelConfig.receiverAuthorizer is not extra.receiverAuthorizer' }
  }
  if (!sameAddress(config.token, ctx.asset)) return { reason: R.tokenMismatch, message: 'channelConfig.token is not the asset' }
  if (extra?.withdrawDelay !== undefined && Number(extra.withdrawDelay) !== config.withdrawDelay) return { reason: R.withdrawDelayMismatch, message: 'channelConfig.withdrawDelay is not extra.withdrawDelay' }
  if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) return { reason: R.withdrawDelayOutOfRange, message: 'the withdraw delay is outside 900 s to 30 days' }
  return undefined
}

/**
 * Rule 6: an EOA payer authorizer by recovery (offline); a zero one through the payer as the
 * contract's SignatureChecker does (ECDSA without code, ERC-1271 with code). An ERC-6492 envelope
 * is refused: the contract never unwraps one, so its claim would revert. A node fault throws.
 */
export async function checkVoucherSignature(chain: BatchChain, config: ChannelConfig, id: Hex, maxClaimableAmount: bigint, signature: Hex): Promise<Refusal | undefined> {
  if (isErc6492(signature)) return { reason: R.voucherSignature, message: 'an ERC-6492 signature (a wallet not deployed yet): the contract checks vouchers against the payer as it is on chain' }
  const ok = isAddressEqual(config.payerAuthorizer, zeroAddress)
    ? await signatureCheckerValid(chain.client, config.payer, voucherDigest(chain.chainId, id, maxClaimableAmount), signature, 'checking the voucher signature with the payer wallet')
    : await isEoaVoucherSigned(config, chain.chainId, id, maxClaimableAmount, signature)
  return ok ? undefined : { reason: R.voucherSignature, message: 'the voucher is not signed by the payer authorizer' }
}

/**
 * Rules 7, 9, 10: the channel exists (or this deposit creates it), the voucher's ceiling stays within
 * the balance (plus this deposit), and a paid voucher advances past the claimed total by the price
 * (a refund's zero-charge voucher may equal it).
 */
export function checkAgainstState(kind: 'deposit' | 'voucher' | 'refund', state: ChannelSnapshot, maxClaimableAmount: bigint, price: bigint, deposit = 0n): Refusal | undefined {
  if (kind !== 'deposit' && state.balance === 0n) return { reason: R.channelNotFound, message: 'the channel has no balance' }
  if (maxClaimableAmount > state.balance + deposit) return { reason: R.cumulativeExceedsBalance, message: `the voucher's ${maxClaimableAmount} exceeds the channel's balance ${state.balance + deposit}` }
  const floor = kind === 'refund' ? state.totalClaimed : state.totalClaimed + price
  if (maxClaimableAmount < floor) return { reason: R.cumulativeBelowClaimed, message: `the voucher's ${maxClaimableAmount} is below ${floor} (claimed ${state.totalClaimed})` }
  return undefined
}

/**
 * The deposit call through the collector its authorization names, with the collector's data; a
 * Permit2 deposit sponsored with an EIP-2612 permit carries it for the collector to run first.
 */
export function depositCall(payload: DepositPayload, permit2612?: Eip2612Permit): { collector: Address; collectorData: Hex; data: Hex } {
  const { erc3009Authorization: eip3009, permit2Authorization: permit2 } = payload.deposit.authorization
  const collector = eip3009 ? ERC3009_DEPOSIT_COLLECTOR_ADDRESS : PERMIT2_DEPOSIT_COLLECTOR_ADDRESS
  const permitData = permit2612
    ? encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint8' }, { type: 'bytes32' }, { type: 'bytes32' }], [permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s])
    : '0x'
  const collectorData = eip3009
    ? encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }], [eip3009.validAfter, eip3009.validBefore, eip3009.salt, innerSignature(eip3009.signature)])
    : encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }, { type: 'bytes' }], [permit2!.nonce, permit2!.deadline, permit2!.signature, permitData])
  const data = encodeFunctionData({ abi: batchSettlementAbi, functionName: 'deposit', args: [payload.channelConfig, payload.deposit.amount, collector, collectorData] })
  return { collector, collectorData, data }
}

/** A deposit authorization that passed: what its collector call needs, and what Permit2 may move. */
export interface DepositAuthorization {
  /** The payer's EIP-2612 permit to Permit2, for the collector to run first (only when the allowance falls short). */
  readonly permit2612?: Eip2612Permit
  /** A Permit2 deposit: what Permit2 can move from the payer (its allowance, or the permit's value when it runs). */
  readonly spendable?: bigint
}

/**
 * The deposit's own authorization: EIP-3009 to the collector (nonce bound to the channel), or Permit2
 * with the channel witness and an allowance to Permit2 that covers the deposit, or else (as the
 * official facilitator) the payer's EIP-2612 permit to Permit2 from `eip2612GasSponsoring`.
 */
export async function checkDepositAuthorization(ctx: PaymentContext, chain: BatchChain, payload: DepositPayload, marginSeconds: number): Promise<Refusal | DepositAuthorization> {
  const now = BigInt(Math.floor(Date.now() / 1000))
  const payer = payload.channelConfig.payer
  const amount = payload.deposit.amount
  const { erc3009Authorization: eip3009, permit2Authorization: permit2 } = payload.deposit.authorization
  const method = (ctx.requirements.extra as Record<string, unknown> | undefined)?.assetTransferMethod
  if (method === 'permit2' && !permit2) return { reason: R.permit2AuthorizationRequired }
  if (method !== undefined && method !== 'permit2' && !eip3009) return { reason: R.erc3009AuthorizationRequired }
  if (eip3009) {
    const extra = ctx.requirements.extra as Record<string, unknown> | undefined
    if (typeof extra?.name !== 'string' || typeof extra?.version !== 'string') return { reason: R.missingEip712Domain }
    if (eip3009.validBefore < now + BigInt(marginSeconds)) return { reason: R.validBefore }
    if (eip3009.validAfter > now) return { reason: R.validAfter }
    const nonce = keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [payload.voucher.channelId, eip3009.salt]))
    const typed = {
      domain: { name: extra.name, version: extra.version, chainId: chain.chainId, verifyingContract: getAddress(ctx.asset) },
      types: receiveWithAuthorizationTypes,
      primaryType: 'ReceiveWithAuthorization' as const,
      message: { from: payer, to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS, value: amount, validAfter: eip3009.validAfter, validBefore: eip3009.validBefore, nonce },
    }
    // An ERC-6492 envelope, as the official facilitator reads one: a deployed wallet checks the inner
    // signature (the one the collector passes the token); an undeployed one would need its factory
    // run first, which no batch deposit here does (the official's default: no factory allowed).
    const wrapped = unwrapErc6492(eip3009.signature)
    if (wrapped && !(await hasCode(chain, payer))) {
      return { reason: R.factoryNotAllowed, message: `the payer ${payer} is an undeployed ERC-6492 wallet: batch-settlement deposits deploy no wallet (factory ${wrapped.factory} not allowed)` }
    }
    const ok = await signedBy(chain, payer, typed, wrapped?.signature ?? eip3009.signature)
    return ok ? {} : { reason: R.receiveAuthorizationSignature }
  }
  const auth = permit2!
  if (!isAddressEqual(auth.from, payer)) return { reason: R.permit2InvalidSignature, message: 'permit2Authorization.from is not the payer' }
  if (!isAddressEqual(auth.spender, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS)) return { reason: R.permit2InvalidSpender }
  if (!sameAddress(auth.permitted.token, ctx.asset)) return { reason: R.tokenMismatch }
  if (auth.permitted.amount !== amount) return { reason: R.permit2AmountMismatch }
  if (auth.witness.channelId !== payload.voucher.channelId) return { reason: R.channelIdMismatch, message: 'the Permit2 witness names another channel' }
  if (auth.deadline < now + BigInt(marginSeconds)) return { reason: R.permit2DeadlineExpired }
  const typed = {
    domain: { name: 'Permit2', chainId: chain.chainId, verifyingContract: PERMIT2_ADDRESS },
    types: depositPermitWitnessTypes,
    primaryType: 'PermitWitnessTransferFrom' as const,
    message: { permitted: { token: auth.permitted.token, amount }, spender: auth.spender, nonce: auth.nonce, deadline: auth.deadline, witness: { channelId: auth.witness.channelId } },
  }
  if (!(await signedBy(chain, payer, typed, auth.signature))) return { reason: R.permit2InvalidSignature }
  const permit2612 = gasSponsoringPermit(ctx, {
    payer,
    asset: ctx.asset,
    permittedAmount: amount,
    nowSeconds: now,
    settleMarginSeconds: marginSeconds,
    // A signed approve transaction is refused with the code the official answers when it has no signer to broadcast one.
    naming: { amountMismatch: R.eip2612AmountMismatch, erc20Approval: R.erc20ApprovalUnavailable, runBy: 'the Permit2 deposit collector' },
  })
  if (permit2612 && 'reason' in permit2612) return permit2612
  const allowance = await chain.allowance(getAddress(ctx.asset), payer, PERMIT2_ADDRESS)
  // An allowance that covers the deposit leaves a permit unrun, as for exact: it would set the allowance
  // down to its value under other payments of this payer verified against the larger one.
  if (allowance >= amount) return { spendable: allowance }
  if (!permit2612) return { reason: R.permit2AllowanceRequired }
  // The collector runs the permit before the transfer; that it grants the deposit is the simulation's to prove.
  return { permit2612, spendable: permit2612.value }
}

/** An EOA signature by recovery (offline); anything else as the token's or Permit2's check would take it, on chain. */
async function signedBy(chain: BatchChain, signer: Address, typed: Parameters<typeof hashTypedData>[0], signature: Hex): Promise<boolean> {
  const digest = hashTypedData(typed)
  // Only signatures the token's or Permit2's ECDSA also takes (low s, v 27/28) pass by recovery.
  if (await ecdsaSignedBy(signer, digest, signature)) return true
  return signatureCheckerValid(chain.client, signer, digest, signature, 'checking the deposit authorization signature with the payer wallet')
}

/** The signature inside an ERC-6492 envelope, or the signature itself. */
function innerSignature(signature: Hex): Hex {
  return unwrapErc6492(signature)?.signature ?? signature
}

async function hasCode(chain: BatchChain, account: Address): Promise<boolean> {
  const code = await chain.client.getCode({ address: account }).catch((error: unknown) => Promise.reject(toRpcFault(error, 'reading the payer wallet\'s code')))
  return code !== undefined && code !== '0x'
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase()
}
