/**
 * Upto payments for tests: requirements naming a facilitator, the official client's payload for them,
 * and a payload's permit changed and re-signed (what a hostile client sends).
 */
import { x402Client } from '@x402/core/client'
import { UptoEvmScheme as UptoEvmClient } from '@x402/evm/upto/client'
import type { LocalAccount } from 'viem'
import { EIP2612_GAS_SPONSORING } from '../../src/evm/index.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import type { EvmFixture } from './evm-fixture.js'
import { signUptoAuthorization, type UptoAuthorizationFields } from './permit2-contracts.js'

type Json = Record<string, unknown>

/** Upto requirements of a maximum of 5000 (`amount`) for the facilitator at `facilitatorAddress`, as a resource server copies it from /supported. */
export function uptoRequirements(world: EvmFixture, facilitatorAddress: string, overrides: Partial<PaymentRequirementsV2> = {}): PaymentRequirementsV2 {
  return world.requirementsV2({
    scheme: 'upto',
    amount: '5000',
    extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2', facilitatorAddress },
    ...overrides,
  })
}

/**
 * A payload of the official upto client for `requirements` (its witness names `extra.facilitatorAddress`).
 * With `gasSponsoring`, the 402 declares eip2612GasSponsoring and the client, reading the payer's allowance
 * and token nonce over `world`'s RPC, adds an EIP-2612 permit of the maximum when Permit2 lacks the allowance.
 */
export async function officialUptoPayload(payer: LocalAccount, requirements: PaymentRequirementsV2, gasSponsoring?: { world: EvmFixture }): Promise<Json> {
  const scheme = new UptoEvmClient(payer, gasSponsoring ? { rpcUrl: gasSponsoring.world.node.rpcUrl } : undefined)
  const client = new x402Client().setSpendControls(false).register('eip155:84532', scheme)
  return (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://example.test/metered', description: 'metered', mimeType: 'application/json' },
    accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }],
    ...(gasSponsoring ? { extensions: { [EIP2612_GAS_SPONSORING]: DECLARED_GAS_SPONSORING } } : {}),
  })) as unknown as Json
}

/** The 402's eip2612GasSponsoring declaration, in the shape of @x402/extensions' declareEip2612GasSponsoringExtension(). */
const DECLARED_GAS_SPONSORING = {
  info: { description: 'The facilitator accepts EIP-2612 gasless Permit to `Permit2` canonical contract.', version: '1' },
  schema: { type: 'object', required: ['from', 'asset', 'spender', 'amount', 'nonce', 'deadline', 'signature', 'version'] },
}

/** `payment` with its permit fields changed and re-signed by `signer` (the payer by default): what a hostile client sends. */
export async function resignedUpto(world: EvmFixture, payment: Json, change: (fields: UptoAuthorizationFields) => UptoAuthorizationFields, signer: LocalAccount): Promise<Json> {
  const fields = change(structuredClone((payment.payload as { permit2Authorization: UptoAuthorizationFields }).permit2Authorization))
  return { ...payment, payload: { signature: await signUptoAuthorization(world, signer, fields), permit2Authorization: fields } }
}
