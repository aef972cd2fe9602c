import { bytesToHex, type Address, type Hex, type LocalAccount } from 'viem'
import { describeNetwork, evmChainId } from '../../networks/networks.js'
import type { PaymentPayload } from '../../schemas/payload.js'
import { paymentRequirementsV1Schema, paymentRequirementsV2Schema, type PaymentRequirements, type ResourceInfo } from '../../schemas/requirements.js'
import { isHexAddress } from './authorization.js'
import { authorizationTypedData, type AuthorizationMessage } from '../codec/typed-data.js'

/** Who signs a payment: a viem LocalAccount, or any object with an address and EIP-712 signing (a smart wallet's owner). */
export type EvmPaymentSigner = Pick<LocalAccount, 'address' | 'signTypedData'>

/** Input of `signExactEvmPayment`. */
export interface SignExactEvmPaymentInput {
  /** The payer. For a smart wallet, `address` is the wallet and `signTypedData` its owner's. */
  readonly signer: EvmPaymentSigner
  /** What the resource server asked for (v1 `maxAmountRequired` or v2 `amount`); `extra.name`/`extra.version` give the domain. */
  readonly requirements: PaymentRequirements
  /** v2 only: the paid resource. */
  readonly resource?: ResourceInfo
  /** Seconds the authorization stays valid. @default 300 */
  readonly validForSeconds?: number
  /** Overrides of the signed fields or the domain (tests build bad payments with them). */
  readonly overrides?: Partial<AuthorizationMessage> & {
    readonly chainId?: number
    readonly name?: string
    readonly version?: string
  }
  /** Rewrites the signature before it is placed in the payload (e.g. an ERC-6492 wrapper). */
  readonly wrapSignature?: (signature: Hex) => Hex
}

/**
 * Signs an EIP-3009 `exact` payment for the given requirements and returns
 * the payment payload a client would send (v1 for requirements with
 * `maxAmountRequired`, v2 for requirements with `amount`). Handy for tests
 * and demos; browsers and agents normally use the official x402 clients.
 *
 * @example
 * // partial
 * const paymentPayload = await signExactEvmPayment({ signer: privateKeyToAccount(key), requirements })
 * await facilitator.verify({ x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements: requirements })
 */
export async function signExactEvmPayment(input: SignExactEvmPaymentInput): Promise<PaymentPayload> {
  const { requirements, signer, overrides = {} } = input
  const network = describeNetwork(requirements.network)
  if (!network || network.family !== 'eip155') throw new TypeError(`${requirements.network} is not an EVM network`)
  const name = overrides.name ?? stringField(requirements.extra?.name, 'extra.name')
  const version = overrides.version ?? stringField(requirements.extra?.version, 'extra.version')
  const now = BigInt(Math.floor(Date.now() / 1000))
  // The requirements' own shape decides the protocol version of the payload.
  const v2 = paymentRequirementsV2Schema.safeParse(requirements)
  const v1 = paymentRequirementsV1Schema.safeParse(requirements)
  const amount = v2.success ? v2.data.amount : v1.success ? v1.data.maxAmountRequired : undefined
  if (amount === undefined) throw new TypeError('requirements carry neither amount (v2) nor maxAmountRequired (v1)')
  const message: AuthorizationMessage = {
    from: signer.address,
    to: address(requirements.payTo),
    value: BigInt(amount),
    // A little in the past so clock skew between client and chain does not reject it.
    validAfter: now - 60n,
    validBefore: now + BigInt(input.validForSeconds ?? 300),
    nonce: bytesToHex(crypto.getRandomValues(new Uint8Array(32))),
    ...withoutDomain(overrides),
  }
  const domain = {
    name,
    version,
    chainId: overrides.chainId ?? evmChainId(network.caip2),
    verifyingContract: address(requirements.asset),
  }
  const signed = await signer.signTypedData(authorizationTypedData(domain, message))
  const payload = {
    signature: input.wrapSignature ? input.wrapSignature(signed) : signed,
    authorization: {
      from: message.from,
      to: message.to,
      value: message.value.toString(),
      validAfter: message.validAfter.toString(),
      validBefore: message.validBefore.toString(),
      nonce: message.nonce,
    },
  }
  if (v2.success) {
    return { x402Version: 2, accepted: v2.data, payload, ...(input.resource ? { resource: input.resource } : {}) }
  }
  return { x402Version: 1, scheme: requirements.scheme, network: requirements.network, payload }
}

function withoutDomain(overrides: NonNullable<SignExactEvmPaymentInput['overrides']>): Partial<AuthorizationMessage> {
  const { chainId: _chainId, name: _name, version: _version, ...message } = overrides
  return message
}

function stringField(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new TypeError(`requirements.${field} must name the token's EIP-712 domain`)
  return value
}

function address(value: string): Address {
  if (!isHexAddress(value)) throw new TypeError(`${value} is not an EVM address`)
  return value
}
