import { bytesToHex, hexToBytes, serializeTransaction, type Address, type Hex, type LocalAccount } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { EvmSettlementSigner } from '../exact-evm-config.js'
import { encodeEip1559, type Eip1559Fields } from '../codec/eip1559-transaction.js'
import { keccak256, loadKeccak } from './keccak.js'
import { loadSecp256k1, type Secp256k1 } from './secp256k1-backend.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'

/**
 * Refuses what is not a 32-byte hex key (an unset environment variable, a key without its
 * 0x, a truncated paste) with a message that names the problem and never quotes the key.
 */
function checkPrivateKey(privateKey: unknown): asserts privateKey is Hex {
  if (privateKey === undefined || privateKey === null || privateKey === '') {
    throw new FacilitatorError('misconfigured', 'privateKeySigner: no private key was given (is its environment variable set?)')
  }
  if (typeof privateKey !== 'string') throw new FacilitatorError('misconfigured', `privateKeySigner: the private key must be a hex string, not ${typeof privateKey}`)
  if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey)) {
    const hint = /^[0-9a-fA-F]{64}$/.test(privateKey) ? ' (add the 0x prefix)' : ` (${privateKey.length} characters)`
    throw new FacilitatorError('misconfigured', `privateKeySigner: the private key must be 0x followed by 64 hex digits${hint}`)
  }
}

/**
 * A settlement signer for a raw private key that signs legacy and EIP-1559
 * transactions with libsecp256k1 when an optional package provides it (native
 * `secp256k1`, else the WebAssembly `tiny-secp256k1`): several times cheaper
 * than viem's pure-JS signing, which is a tenth of a settle's CPU. The bytes
 * are exactly viem's (all sign deterministically per RFC 6979 with low s, unless
 * the application turned on viem's extra signing entropy); any other
 * transaction type, a custom serializer or neither package signs through
 * `privateKeyToAccount`.
 *
 * @example
 * // partial
 * exactEvm({ networks, signers: [privateKeySigner(process.env.FACILITATOR_KEY as Hex)] })
 */
export function privateKeySigner(privateKey: Hex): EvmSettlementSigner & { readonly address: Address } {
  return signerOn(privateKey, loadSecp256k1)
}

/** {@link privateKeySigner} on a given backend (viem's code when it gives none); the tests try each. */
export function signerOn(privateKey: Hex, backend: () => Promise<Secp256k1 | undefined>): EvmSettlementSigner & { readonly address: Address } {
  checkPrivateKey(privateKey)
  void loadKeccak()
  // Validates the key and serves every case the fast path does not.
  let account: LocalAccount
  try {
    account = privateKeyToAccount(privateKey)
  } catch (error) {
    // viem's message quotes the key: never repeated here.
    throw new FacilitatorError('misconfigured', 'privateKeySigner: the private key is not a valid secp256k1 key', { cause: undefined, details: { reason: error instanceof Error ? error.name : 'invalid' } })
  }
  const key = hexToBytes(privateKey)
  const signTransaction = async (transaction: Parameters<LocalAccount['signTransaction']>[0], options?: Parameters<LocalAccount['signTransaction']>[1]) => {
    const type = transaction.type
    const secp = options?.serializer || (type !== 'eip1559' && type !== 'legacy') ? undefined : await backend()
    if (!secp) return account.signTransaction(transaction, options)
    // A settlement's own shape is encoded once, on bytes (./eip1559-transaction.ts); anything else by viem.
    const plain = plainEip1559(transaction)
    const encoded = plain ? encodeEip1559(plain) : undefined
    const { signature, recoveryId } = secp.sign(keccak256(encoded ? encoded.unsigned : serializeTransaction(transaction), 'bytes'), key)
    // A transaction's y parity is 0 or 1; the practically impossible overflowed r goes to viem.
    if (recoveryId !== 0 && recoveryId !== 1) return account.signTransaction(transaction, options)
    if (encoded) return encoded.signed(recoveryId, signature)
    return serializeTransaction(transaction, {
      r: bytesToHex(signature.subarray(0, 32)),
      s: bytesToHex(signature.subarray(32, 64)),
      v: BigInt(27 + recoveryId),
      yParity: recoveryId,
    })
  }
  return { address: account.address, signTransaction: signTransaction as LocalAccount['signTransaction'] }
}

/** The fields the lean encoder writes (and `from`, which no serializer writes). */
const PLAIN_FIELDS = new Set(['type', 'chainId', 'nonce', 'to', 'data', 'gas', 'value', 'maxFeePerGas', 'maxPriorityFeePerGas', 'accessList', 'from'])

/**
 * The transaction as {@link Eip1559Fields} when it is an EIP-1559 call with no field beyond those
 * the lean encoder writes (an allowlist: a signature already on it, `input`, an authorization list,
 * or any field viem adds later goes to viem), an empty access list at most, a recipient and a chain id.
 */
function plainEip1559(transaction: Parameters<LocalAccount['signTransaction']>[0]): Eip1559Fields | undefined {
  if (transaction.type !== 'eip1559') return undefined
  for (const [field, value] of Object.entries(transaction)) if (value !== undefined && !PLAIN_FIELDS.has(field)) return undefined
  const t = transaction
  if (t.to == null || t.chainId === undefined || (t.accessList && t.accessList.length > 0)) return undefined
  return { chainId: t.chainId, nonce: t.nonce, maxPriorityFeePerGas: t.maxPriorityFeePerGas, maxFeePerGas: t.maxFeePerGas, gas: t.gas, to: t.to, value: t.value, data: t.data }
}
