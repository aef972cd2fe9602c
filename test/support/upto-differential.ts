/**
 * What test/interop/evm-upto-differential.test.ts needs besides exact-differential.ts: one anvil with
 * Permit2 and both proxies, our facilitator (evmSchemes on one key) and the official one (@x402/evm
 * ExactEvmScheme and UptoEvmScheme under x402Facilitator on another key), upto payments for a chosen
 * facilitator (the witness names it, so each side gets its own), and /settle seen by a client together
 * with what moved on chain.
 */
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { UptoEvmScheme as UptoEvmClient } from '@x402/evm/upto/client'
import { UptoEvmScheme } from '@x402/evm/upto/facilitator'
import type { LocalAccount } from 'viem'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { evmSchemes } from '../../src/evm/index.js'
import type { PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { shape } from './batch-differential.js'
import { tokenBalance } from './evm-contracts.js'
import { startEvmFixture, type EvmFixture } from './evm-fixture.js'
import type { Body, Json, Side } from './exact-differential.js'
import { installPermit2, signUptoAuthorization, type UptoAuthorizationFields } from './permit2-contracts.js'
import { officialEvmSigner } from './official-evm-signer.js'

export interface UptoWorld {
  readonly world: EvmFixture
  readonly ours: ReturnType<typeof createFacilitator>
  readonly official: x402Facilitator
  /** The signer each side settles upto payments from (its `extra.facilitatorAddress`). */
  readonly address: Record<Side, string>
  stop(): Promise<void>
}

/** The fixture with Permit2, ours on the first signer and the official facilitator (exact and upto) on the second. */
export async function startUptoWorld(): Promise<UptoWorld> {
  const world = await startEvmFixture({ signerCount: 2 })
  await installPermit2(world.node)
  const [ourKey, theirKey] = world.signers as [LocalAccount, LocalAccount]
  const ours = createFacilitator({ schemes: evmSchemes(world.adapterConfig({ signers: [ourKey] })) })
  const signer = officialEvmSigner(theirKey, world.node.chain, world.node.rpcUrl)
  const official = new x402Facilitator().register('eip155:84532', new ExactEvmScheme(signer)).register('eip155:84532', new UptoEvmScheme(signer))
  await world.warmUp(ours)
  return {
    world,
    ours,
    official,
    address: { ours: ourKey.address, official: theirKey.address },
    async stop() {
      await ours.close()
      await world.stop()
    },
  }
}

/** Upto requirements of a maximum of 5000 (`amount`) for the facilitator at `facilitatorAddress`, as a resource server copies it from /supported. */
export function uptoRequirements(world: EvmFixture, facilitatorAddress: string, overrides: Partial<PaymentRequirementsV2> = {}): PaymentRequirementsV2 {
  return world.requirementsV2({
    scheme: 'upto',
    amount: '5000',
    extra: { name: world.token.name, version: world.token.version, assetTransferMethod: 'permit2', facilitatorAddress },
    ...overrides,
  })
}

/** A payload of the official upto client for `requirements` (its witness names `extra.facilitatorAddress`). */
export async function officialUptoPayload(payer: LocalAccount, requirements: PaymentRequirementsV2): Promise<Json> {
  const client = new x402Client().setSpendControls(false).register('eip155:84532', new UptoEvmClient(payer))
  return (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://example.test/metered', description: 'metered', mimeType: 'application/json' },
    accepts: [{ ...requirements, network: 'eip155:84532', maxTimeoutSeconds: 60, extra: requirements.extra ?? {} }],
  })) as unknown as Json
}

/** `payment` with its permit fields changed and re-signed by `signer` (the payer by default): what a hostile client sends. */
export async function resignedUpto(world: EvmFixture, payment: Json, change: (fields: UptoAuthorizationFields) => UptoAuthorizationFields, signer: LocalAccount): Promise<Json> {
  const fields = change(structuredClone((payment.payload as { permit2Authorization: UptoAuthorizationFields }).permit2Authorization))
  return { ...payment, payload: { signature: await signUptoAuthorization(world, signer, fields), permit2Authorization: fields } }
}

/** What a client sees of a settle answer, and what moved on chain (payTo's gain, the payer's loss). */
export interface SettleSeen {
  ok: boolean
  reason: string | null
  payer: string | null
  network: string
  /** The transaction's form (see shape): `hex32-lower` or `empty`. */
  transaction: unknown
  /** `amount` of the answer, null when absent. */
  amount: string | null
  moved: { payTo: string; payer: string }
}

/** Settles `body` on one side, reading payTo's and `payer`'s balances around it; `threw` when the facilitator threw. `raw` gets the whole answer. */
export async function settleSeen(up: UptoWorld, side: Side, body: Body, payer: string, raw?: (answer: { transaction: string }) => void): Promise<SettleSeen | { threw: true }> {
  const { world } = up
  const balances = () => Promise.all([tokenBalance(world.node, world.token, world.payTo), tokenBalance(world.node, world.token, payer as `0x${string}`)])
  const [payToBefore, payerBefore] = await balances()
  let r
  try {
    r = side === 'ours' ? await up.ours.settle(body) : await up.official.settle(body.paymentPayload as unknown as OfficialPayload, body.paymentRequirements as unknown as OfficialRequirements)
  } catch {
    return { threw: true }
  }
  const [payToAfter, payerAfter] = await balances()
  raw?.(r)
  return {
    ok: r.success,
    reason: r.errorReason ?? null,
    payer: r.payer ?? null,
    network: r.network,
    transaction: shape(r.transaction),
    amount: r.amount ?? null,
    moved: { payTo: String(payToAfter - payToBefore), payer: String(payerBefore - payerAfter) },
  }
}

/** One cell of the printed table for a settle answer. */
export function settleLabel(s: SettleSeen | { threw: true }): string {
  if ('threw' in s) return 'throws'
  const amount = s.amount === null ? 'no amount' : `amount ${s.amount}`
  return `${s.ok ? 'success' : `failure \`${s.reason}\``}, ${amount}, tx ${String(s.transaction)}, moved ${s.moved.payTo}`
}
