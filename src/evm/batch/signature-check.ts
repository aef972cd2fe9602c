/**
 * The check the batch-settlement contract runs on a signature of an address (OpenZeppelin's
 * SignatureChecker): ECDSA for an account without code, ERC-1271 `isValidSignature` for one with
 * code. An ERC-6492 envelope is never unwrapped there, so it is never valid here. A node that does
 * not answer is a fault of ours (`rpc_*`), never a verdict against the signer.
 */
import { isAddressEqual, isErc6492Signature, zeroAddress, type Address, type Hex, type PublicClient } from 'viem'
import { recoverAuthorizationSigner } from '../crypto/recover-signer.js'
import { nodeRefusal } from '../chain/node-answers.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { isValidSignatureCalldata } from '../codec/calldata.js'
import { isContractRecoverable, voucherDigest, type ChannelConfig } from './codec.js'
import { ERC1271_MAGIC_VALUE } from '../codec/abi.js'

/** `isValidSignature`'s magic value as the 32-byte word SignatureChecker compares. */
const MAGIC_WORD = `${ERC1271_MAGIC_VALUE}${'0'.repeat(56)}`

/** Whether `signature` is in an ERC-6492 envelope (a wallet not deployed yet): the contract cannot take it. */
export function isErc6492(signature: Hex): boolean {
  try {
    return isErc6492Signature(signature)
  } catch {
    return false
  }
}

/** ECDSA as OpenZeppelin's `tryRecover` takes it (65 bytes, low s, v 27/28), offline. */
export async function ecdsaSignedBy(signer: Address, digest: Hex, signature: Hex): Promise<boolean> {
  if (!isContractRecoverable(signature)) return false
  const recovered = await recoverAuthorizationSigner(digest, signature)
  return recovered !== undefined && isAddressEqual(recovered, signer)
}

/**
 * Whether an EOA voucher (a config with a payer authorizer) was signed by that authorizer: an
 * ECDSA recovery, no RPC. Configs with a zero payer authorizer need the chain (ERC-1271 via the payer).
 */
export function isEoaVoucherSigned(channel: ChannelConfig, chainId: number, id: Hex, maxClaimableAmount: bigint, signature: Hex): Promise<boolean> {
  if (isAddressEqual(channel.payerAuthorizer, zeroAddress)) throw new Error('the channel has no payer authorizer: its vouchers are checked through the payer (ERC-1271)')
  return ecdsaSignedBy(channel.payerAuthorizer, voucherDigest(chainId, id, maxClaimableAmount), signature)
}

/**
 * SignatureChecker.isValidSignatureNow(signer, digest, signature) against the chain as it is:
 * one code read, and one eth_call for a contract. Throws an `rpc_*` FacilitatorError when the
 * node does not answer (`doing` names the check in the fault's message).
 */
export async function signatureCheckerValid(client: Pick<PublicClient, 'getCode' | 'call'>, signer: Address, digest: Hex, signature: Hex, doing: string): Promise<boolean> {
  if (isErc6492(signature)) return false
  const code = await client.getCode({ address: signer }).catch((error: unknown) => Promise.reject(toRpcFault(error, doing)))
  if (code === undefined || code === '0x') return ecdsaSignedBy(signer, digest, signature)
  try {
    const { data } = await client.call({ to: signer, data: isValidSignatureCalldata(digest, signature) })
    return data !== undefined && data.length >= MAGIC_WORD.length && data.slice(0, MAGIC_WORD.length).toLowerCase() === MAGIC_WORD
  } catch (error) {
    // A revert (no isValidSignature, or a wallet that refuses by reverting) is the wallet's answer: not valid.
    if (nodeRefusal(error) === 'failed') return false
    throw toRpcFault(error, doing)
  }
}
