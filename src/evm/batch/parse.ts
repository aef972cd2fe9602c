/** Reading a `batch-settlement` payload once per request: its type, its shape, and its replay key. */
import { encodeAbiParameters, keccak256, type Hex } from 'viem'
import type { Parsed } from '../../core/adapter.js'
import {
  channelId,
  claimPayloadSchema,
  depositPayloadSchema,
  normalizeChannelConfig,
  refundPayloadSchema,
  settlePayloadSchema,
  voucherPayloadSchema,
  type BatchPayload,
  type ChannelConfig,
  type VoucherPayload,
} from './codec.js'
import { BATCH_REJECTION as R } from './reasons.js'

const SCHEMAS = {
  deposit: [depositPayloadSchema, R.depositPayload],
  voucher: [voucherPayloadSchema, R.voucherPayload],
  refund: [refundPayloadSchema, R.refundPayload],
  claim: [claimPayloadSchema, R.claimPayload],
  settle: [settlePayloadSchema, R.settlePayload],
} as const

/**
 * The payload in our type and its key: a deposit's is its authorization's replay domain (the same as
 * an `exact` payment's on that token or Permit2 nonce); a refund's its channel and refund nonce; a
 * claim's its rows. A sweep is permissionless and idempotent on chain: each request is its own.
 */
export function parseBatchPayload(raw: unknown, chainId: number, asset: string, assetTransferMethod?: unknown): Parsed<BatchPayload> {
  const type = typeof raw === 'object' && raw !== null ? (raw as { type?: unknown }).type : undefined
  const entry = typeof type === 'string' && Object.hasOwn(SCHEMAS, type) ? SCHEMAS[type as keyof typeof SCHEMAS] : undefined
  if (!entry) return { refusal: { isValid: false, invalidReason: R.payloadType, invalidMessage: 'payload.type must be deposit, voucher, refund, claim or settle' } }
  if (type === 'voucher') {
    const voucher = readVoucher(raw as Record<string, unknown>)
    if (voucher) return { payload: voucher, key: replayKey(voucher, chainId, asset) }
  }
  const [schema, reason] = entry
  const result = schema.safeParse(raw)
  if (!result.success) {
    const issue = result.error.issues[0]
    const payer = (raw as { channelConfig?: { payer?: unknown } }).channelConfig?.payer
    // A deposit well formed but for naming no authorization: the spec's code for the one the requirements want.
    if (type === 'deposit' && result.error.issues.every((i) => i.path.join('.') === 'deposit.authorization') && namesNoAuthorization(raw)) {
      const missing = assetTransferMethod === 'permit2' ? R.permit2AuthorizationRequired : R.erc3009AuthorizationRequired
      return { refusal: { isValid: false, invalidReason: missing, invalidMessage: 'deposit.authorization holds neither erc3009Authorization nor permit2Authorization', ...(typeof payer === 'string' ? { payer } : {}) } }
    }
    return { refusal: { isValid: false, invalidReason: reason, invalidMessage: `${issue?.path.join('.') || 'payload'}: ${issue?.message ?? 'malformed'}`, ...(typeof payer === 'string' ? { payer } : {}) } }
  }
  const payload = result.data as BatchPayload
  return { payload, key: replayKey(payload, chainId, asset) }
}

/** Whether a deposit's `authorization` is an object naming neither method (absent or not an object is malformed). */
function namesNoAuthorization(raw: unknown): boolean {
  const authorization = (raw as { deposit?: { authorization?: unknown } }).deposit?.authorization
  if (typeof authorization !== 'object' || authorization === null) return false
  const { erc3009Authorization, permit2Authorization } = authorization as Record<string, unknown>
  return erc3009Authorization === undefined && permit2Authorization === undefined
}

function replayKey(payload: BatchPayload, chainId: number, asset: string): string {
  switch (payload.type) {
    case 'deposit': {
      const { erc3009Authorization: eip3009, permit2Authorization: permit2 } = payload.deposit.authorization
      const payer = payload.channelConfig.payer.toLowerCase()
      if (permit2) return `${chainId}:permit2:${payer}:${permit2.nonce}`
      const nonce = keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [payload.voucher.channelId, eip3009!.salt]))
      return `${chainId}:${asset.toLowerCase()}:${payer}:${nonce}`
    }
    case 'voucher':
      return `${chainId}:batch-voucher:${payload.voucher.channelId}:${payload.voucher.maxClaimableAmount}`
    case 'refund':
      return `${chainId}:batch-refund:${payload.voucher.channelId}:${payload.refundNonce ?? 'incomplete'}`
    case 'claim': {
      const rows = payload.claims.map((c) => `${channelId(c.voucher.channel, chainId)}:${c.totalClaimed}`).join(',')
      return `${chainId}:batch-claim:${keccak256(new TextEncoder().encode(rows) as unknown as Hex)}`
    }
    case 'settle':
      return `${chainId}:batch-sweep:${payload.receiver.toLowerCase()}:${payload.token.toLowerCase()}:${Date.now()}:${Math.random().toString(36).slice(2)}`
  }
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const BYTES32 = /^0x[0-9a-fA-F]{64}$/
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/
const DECIMAL = /^\d{1,78}$/
const UINT128_MAX = 2n ** 128n - 1n

/** Normalized configs by their wire fields: every voucher of a channel sends the same one. Cleared when full. */
const configs = new Map<string, ChannelConfig>()
const CONFIG_CACHE = 10_000

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype

/**
 * A voucher payload as `voucherPayloadSchema` reads it (the same checks, the same output), without
 * zod and with the config normalized once per channel: the payload of nearly every paid request.
 * Undefined for anything it does not accept, which zod then reads and names the fault of.
 */
function readVoucher(raw: Record<string, unknown>): VoucherPayload | undefined {
  const wire = raw.channelConfig
  const voucher = raw.voucher
  if (!isRecord(wire) || !isRecord(voucher)) return undefined
  const { payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt } = wire
  if (typeof payer !== 'string' || !ADDRESS.test(payer) || typeof payerAuthorizer !== 'string' || !ADDRESS.test(payerAuthorizer)) return undefined
  if (typeof receiver !== 'string' || !ADDRESS.test(receiver) || typeof receiverAuthorizer !== 'string' || !ADDRESS.test(receiverAuthorizer)) return undefined
  if (typeof token !== 'string' || !ADDRESS.test(token) || typeof salt !== 'string' || !BYTES32.test(salt)) return undefined
  if (typeof withdrawDelay !== 'number' || !Number.isSafeInteger(withdrawDelay) || withdrawDelay < 0 || withdrawDelay > 2 ** 40 - 1) return undefined
  const { channelId: id, maxClaimableAmount: amount, signature } = voucher
  if (typeof id !== 'string' || !BYTES32.test(id) || typeof signature !== 'string' || !HEX_BYTES.test(signature)) return undefined
  let max: bigint
  if (typeof amount === 'string' && DECIMAL.test(amount)) max = BigInt(amount)
  else if (typeof amount === 'number' && Number.isSafeInteger(amount) && amount >= 0) max = BigInt(amount)
  else return undefined
  if (max > UINT128_MAX) return undefined
  const key = `${payer}|${payerAuthorizer}|${receiver}|${receiverAuthorizer}|${token}|${withdrawDelay}|${salt}`
  let config = configs.get(key)
  if (!config) {
    config = Object.freeze(normalizeChannelConfig({ payer, payerAuthorizer, receiver, receiverAuthorizer, token, withdrawDelay, salt }))
    if (configs.size >= CONFIG_CACHE) configs.clear()
    configs.set(key, config)
  }
  return { type: 'voucher', channelConfig: config, voucher: { channelId: id.toLowerCase() as Hex, maxClaimableAmount: max, signature: signature as Hex } }
}
