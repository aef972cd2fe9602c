/**
 * The hashes a paid voucher request needs, fast: the voucher's EIP-712 digest built field by field
 * (its shape is fixed: one type hash, one domain separator per chain), and channel ids of configs
 * already seen taken from a bounded cache (a paying channel sends the same config every request).
 */
import { hashDomain, hexToBytes, keccak256 as viemKeccak, toBytes, type Hex } from 'viem'
import { channelId, type ChannelConfig } from '../../evm/batch/codec.js'
import { batchSettlementDomain } from '../../evm/batch/constants.js'
import { keccak256 } from '../../evm/crypto/keccak.js'

const VOUCHER_TYPEHASH = hexToBytes(viemKeccak(toBytes('Voucher(bytes32 channelId,uint128 maxClaimableAmount)')))
const separators = new Map<number, Uint8Array>()

function domainSeparator(chainId: number): Uint8Array {
  let separator = separators.get(chainId)
  if (!separator) {
    const domain = batchSettlementDomain(chainId)
    separator = hexToBytes(hashDomain({ domain: { ...domain, chainId: BigInt(chainId) }, types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'version', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }] } }))
    separators.set(chainId, separator)
  }
  return separator
}

/** The EIP-712 digest of `Voucher(channelId, maxClaimableAmount)` under the batch-settlement domain of `chainId`. */
export function fastVoucherDigest(chainId: number, id: Hex, maxClaimableAmount: bigint): Hex {
  const struct = new Uint8Array(96)
  struct.set(VOUCHER_TYPEHASH, 0)
  struct.set(hexToBytes(id), 32)
  let amount = maxClaimableAmount
  for (let i = 95; i >= 64 && amount > 0n; i--) {
    struct[i] = Number(amount & 0xffn)
    amount >>= 8n
  }
  const message = new Uint8Array(66)
  message[0] = 0x19
  message[1] = 0x01
  message.set(domainSeparator(chainId), 2)
  message.set(keccak256(struct, 'bytes'), 34)
  return keccak256(message)
}

const ids = new Map<string, Hex>()
const MAX_CACHED_IDS = 10_000

/** The channel id of a config (as checksummed by the payload parser), cached. */
export function cachedChannelId(config: ChannelConfig, chainId: number): Hex {
  const key = `${chainId}|${config.payer}|${config.payerAuthorizer}|${config.receiver}|${config.receiverAuthorizer}|${config.token}|${config.withdrawDelay}|${config.salt}`
  let id = ids.get(key)
  if (id === undefined) {
    id = channelId(config, chainId)
    if (ids.size >= MAX_CACHED_IDS) ids.clear()
    ids.set(key, id)
  }
  return id
}
