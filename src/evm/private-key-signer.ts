import { bytesToHex, hexToBytes, keccak256, serializeTransaction, type Address, type Hex, type LocalAccount } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { EvmSettlementSigner } from './exact-evm-config.js'
import { loadTinySecp256k1 } from './secp256k1-wasm.js'

/**
 * A settlement signer for a raw private key that signs legacy and EIP-1559
 * transactions with the WebAssembly build of libsecp256k1 when the optional
 * `tiny-secp256k1` is installed: several times cheaper than viem's pure-JS
 * signing, which is a tenth of a settle's CPU. The bytes are exactly viem's
 * (both sign deterministically per RFC 6979 with low s); any other transaction
 * type, a custom serializer or a missing `tiny-secp256k1` signs through
 * `privateKeyToAccount`.
 *
 * @example
 * exactEvm({ networks, signers: [privateKeySigner(process.env.FACILITATOR_KEY as Hex)] })
 */
export function privateKeySigner(privateKey: Hex): EvmSettlementSigner & { readonly address: Address } {
  // Validates the key and serves every case the fast path does not.
  const account = privateKeyToAccount(privateKey)
  const key = hexToBytes(privateKey)
  const signTransaction = async (transaction: Parameters<LocalAccount['signTransaction']>[0], options?: Parameters<LocalAccount['signTransaction']>[1]) => {
    const type = transaction.type
    const secp = options?.serializer || (type !== 'eip1559' && type !== 'legacy') ? undefined : await loadTinySecp256k1()
    if (!secp) return account.signTransaction(transaction, options)
    const { signature, recoveryId } = secp.signRecoverable(keccak256(serializeTransaction(transaction), 'bytes'), key)
    const yParity = recoveryId === 1 ? 1 : 0
    return serializeTransaction(transaction, {
      r: bytesToHex(signature.subarray(0, 32)),
      s: bytesToHex(signature.subarray(32, 64)),
      v: BigInt(27 + yParity),
      yParity,
    })
  }
  return { address: account.address, signTransaction: signTransaction as LocalAccount['signTransaction'] }
}
