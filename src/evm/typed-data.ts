import { hashTypedData, type Address, type Hex } from 'viem'
import { transferWithAuthorizationTypes } from './abi.js'

/** The EIP-712 domain of an EIP-3009 token. */
export interface TokenDomain {
  readonly name: string
  readonly version: string
  readonly chainId: number
  /** The token contract. */
  readonly verifyingContract: Address
}

/** The signed fields of a transfer authorization. */
export interface AuthorizationMessage {
  readonly from: Address
  readonly to: Address
  readonly value: bigint
  readonly validAfter: bigint
  readonly validBefore: bigint
  readonly nonce: Hex
}

/**
 * The typed data a payer signs for EIP-3009 `TransferWithAuthorization`,
 * in the shape viem's `signTypedData` takes.
 *
 * @example
 * const signature = await account.signTypedData(authorizationTypedData(domain, message))
 */
export function authorizationTypedData(domain: TokenDomain, message: AuthorizationMessage) {
  return {
    domain: { ...domain },
    types: transferWithAuthorizationTypes,
    primaryType: 'TransferWithAuthorization' as const,
    message: { ...message },
  }
}

/** The EIP-712 digest the token checks the signature against. */
export function hashAuthorization(domain: TokenDomain, message: AuthorizationMessage): Hex {
  return hashTypedData(authorizationTypedData(domain, message))
}
