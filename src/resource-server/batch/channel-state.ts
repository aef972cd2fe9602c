/** What the resource server remembers of one `batch-settlement` channel, and its stored JSON form. */
import type { Hex } from 'viem'
import type { ChannelConfigWire } from '../../evm/batch/codec.js'

/**
 * One channel as the server sees it (the specification's per-channel state): what it charged, the
 * latest voucher the payer signed (what a claim needs), and the on-chain fields mirrored from the
 * facilitator's last answer.
 */
export interface ChannelState {
  readonly channelId: Hex
  /** The CAIP-2 network of the channel (the claim policy claims per network, token and receiver). */
  readonly network: string
  /** The config as the payer sent it (the facilitator re-checks it on claims and refunds). */
  readonly config: ChannelConfigWire
  /** `chargedCumulativeAmount`: the sum of what the server charged on this channel. */
  readonly charged: bigint
  /** `maxClaimableAmount` of the latest voucher, at least `charged`. */
  readonly signedMaxClaimable: bigint
  /** The payer's signature of that voucher. */
  readonly signature: Hex
  readonly balance: bigint
  readonly totalClaimed: bigint
  /** Seconds since the epoch when a timed withdrawal was initiated, 0 when none is pending. */
  readonly withdrawRequestedAt: number
  readonly refundNonce: bigint
  /** Epoch ms when the mirrored fields were last read from the chain (through the facilitator). */
  readonly onchainSyncedAt: number
  /** Epoch ms of the last paid request. */
  readonly lastRequestAt: number
}

/** The on-chain snapshot the facilitator answers (verify `extra`, settle `extra.channelState`). */
export interface MirroredFields {
  readonly balance: bigint
  readonly totalClaimed: bigint
  readonly withdrawRequestedAt: number
  readonly refundNonce: bigint
}

const BIGINT_FIELDS = ['charged', 'signedMaxClaimable', 'balance', 'totalClaimed', 'refundNonce'] as const

export function encodeChannelState(state: ChannelState): string {
  // The known amounts written as strings in place (the spread keeps the key order): a replacer
  // function, called for every key, costs twice as much. One with another bigint takes the replacer.
  const text = (value: unknown) => (typeof value === 'bigint' ? value.toString() : value)
  const plain = { ...state, charged: text(state.charged), signedMaxClaimable: text(state.signedMaxClaimable), balance: text(state.balance), totalClaimed: text(state.totalClaimed), refundNonce: text(state.refundNonce) }
  try {
    return JSON.stringify(plain)
  } catch {
    return JSON.stringify(state, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value))
  }
}

export function decodeChannelState(json: string): ChannelState {
  const raw = JSON.parse(json) as Record<string, unknown>
  const state: Record<string, unknown> = { ...raw }
  for (const field of BIGINT_FIELDS) state[field] = BigInt(raw[field] as string)
  return state as unknown as ChannelState
}

/** Reads the snapshot in a facilitator answer's extra (numbers or decimal strings), or undefined when absent or malformed. */
export function readMirroredFields(extra: Record<string, unknown> | undefined): MirroredFields | undefined {
  if (!extra) return undefined
  const uint = (value: unknown): bigint | undefined => {
    if (typeof value === 'string' && /^\d{1,78}$/.test(value)) return BigInt(value)
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value)
    return undefined
  }
  const balance = uint(extra.balance)
  const totalClaimed = uint(extra.totalClaimed)
  const withdrawRequestedAt = uint(extra.withdrawRequestedAt)
  const refundNonce = uint(extra.refundNonce)
  if (balance === undefined || totalClaimed === undefined || withdrawRequestedAt === undefined || refundNonce === undefined) return undefined
  return { balance, totalClaimed, withdrawRequestedAt: Number(withdrawRequestedAt), refundNonce }
}

/** The `channelState` a paid answer and a corrective 402 carry: the mirrored fields and the charged total. */
export function channelStateWire(channelId: Hex, fields: MirroredFields, charged: bigint) {
  return {
    channelId,
    balance: fields.balance.toString(),
    totalClaimed: fields.totalClaimed.toString(),
    withdrawRequestedAt: fields.withdrawRequestedAt,
    refundNonce: fields.refundNonce.toString(),
    chargedCumulativeAmount: charged.toString(),
  }
}
