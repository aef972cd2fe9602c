/**
 * What test/interop/evm-batch-differential.test.ts needs besides the batch world: the official
 * facilitator's signer over a fixture, how an answer is seen by a client (its shape: types and hex
 * casing), and payloads the support helpers do not make (an EIP-3009 deposit with a chosen validity
 * window, a high-s copy of a signature).
 */
import { encodeAbiParameters, keccak256, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { channelId, type ChannelConfig } from '../../src/evm/batch/codec.js'
import { ERC3009_DEPOSIT_COLLECTOR_ADDRESS, receiveWithAuthorizationTypes } from '../../src/evm/batch/constants.js'
import { signVoucher } from './batch-settlement-signing.js'
import { officialEvmSigner } from './official-evm-signer.js'
import type { EvmFixture } from './evm-fixture.js'

/** A /verify or /settle body as both facilitators take it (the official one its two halves). */
export interface Body {
  x402Version: number
  paymentPayload: { x402Version: number; accepted: Record<string, unknown>; payload: Record<string, unknown> }
  paymentRequirements: Record<string, unknown>
}

/** What a client sees of one answer (`raw`: the whole settle answer). */
export interface Answer {
  ok: boolean
  reason: string | null
  payer: string | null
  extra: unknown
  raw?: Record<string, unknown>
}
/** An answer, or `threw` when the facilitator threw instead of answering (an HTTP 500 through its server). */
export type Seen = Answer | { threw: true }

/** The official facilitator's signer: `account` sending through the fixture's anvil. */
export const officialSigner = (world: EvmFixture, account: LocalAccount) => officialEvmSigner(account, world.node.chain, world.node.rpcUrl)

/** A value's shape: numbers stay numbers, strings are told apart by form (decimal, lower/mixed-case hex of n bytes). */
export function shape(value: unknown): unknown {
  if (value === undefined || value === null) return null
  if (typeof value === 'string') {
    if (value === '') return 'empty'
    if (/^\d+$/.test(value)) return 'decimal'
    if (/^0x[0-9a-f]*$/.test(value)) return `hex${(value.length - 2) / 2}-lower`
    if (/^0x[0-9a-fA-F]*$/.test(value)) return `hex${(value.length - 2) / 2}-mixed`
    return 'string'
  }
  if (typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((k) => [k, shape((value as Record<string, unknown>)[k])]))
  return typeof value
}

/** One cell of the printed comparison table. */
export function label(s: Seen): string {
  if ('threw' in s) return 'throws'
  return `${s.ok ? 'valid' : 'invalid'}${s.reason ? ` \`${s.reason.replace('invalid_batch_settlement_evm_', '…')}\`` : ''}`
}

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

/** The same signature with s mirrored to the upper half (and v flipped): viem still recovers the signer, OpenZeppelin's ECDSA does not. */
export function highS(signature: Hex): Hex {
  const s = BigInt(`0x${signature.slice(66, 130)}`)
  const v = Number.parseInt(signature.slice(130, 132), 16)
  return `${signature.slice(0, 66)}${(SECP256K1_N - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

/** A deposit of `amount` by EIP-3009 valid from `validAfter` to `validBefore` (the support helper fixes validAfter at 0), with a first voucher of `ceiling`. */
export async function depositWindow(world: EvmFixture, payer: LocalAccount, config: ChannelConfig, amount: bigint, ceiling: bigint, validAfter: bigint, validBefore: bigint) {
  const chainId = world.node.chain.id
  const id = channelId(config, chainId)
  const salt = generatePrivateKey()
  const nonce = keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [id, BigInt(salt)]))
  const signature = await payer.signTypedData({
    domain: { name: world.token.name, version: world.token.version, chainId, verifyingContract: world.token.address },
    types: receiveWithAuthorizationTypes,
    primaryType: 'ReceiveWithAuthorization',
    message: { from: config.payer, to: ERC3009_DEPOSIT_COLLECTOR_ADDRESS, value: amount, validAfter, validBefore, nonce },
  })
  return {
    type: 'deposit',
    channelConfig: config,
    voucher: { channelId: id, maxClaimableAmount: ceiling.toString(), signature: await signVoucher(payer, chainId, id, ceiling) },
    deposit: { amount: amount.toString(), authorization: { erc3009Authorization: { validAfter: validAfter.toString(), validBefore: validBefore.toString(), salt, signature } } },
  }
}
