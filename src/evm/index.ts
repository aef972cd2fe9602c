// The EVM subpath (`x402-facilitator/evm`): everything here may import viem.
export { exactEvm } from './exact-evm.js'
export type { EvmSettlementSigner, ExactEvmAsset, ExactEvmConfig, ExactEvmNetworkConfig } from './exact-evm-config.js'
export { EVM_REJECTION, type EvmRejectionCode } from './reasons.js'
export { exactEvmPayloadSchema, parseExactEvmPayload, type ExactEvmAuthorization, type ExactEvmPayload } from './authorization.js'
export { privateKeySigner } from './private-key-signer.js'
export { signExactEvmPayment, type EvmPaymentSigner, type SignExactEvmPaymentInput } from './sign-payment.js'
export { authorizationTypedData, hashAuthorization, type AuthorizationMessage, type TokenDomain } from './typed-data.js'
export { MULTICALL3_ADDRESS, eip3009Abi, erc1271Abi, multicall3Abi } from './abi.js'
