/**
 * What test/interop/evm-upto-differential.test.ts needs besides exact-differential.ts: one anvil with
 * Permit2 and both proxies, our facilitator (evmSchemes on one key) and the official one (@x402/evm
 * ExactEvmScheme and UptoEvmScheme under x402Facilitator on another key), and /settle seen by a client
 * together with what moved on chain. Payments: upto-payments.ts.
 */
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { UptoEvmScheme } from '@x402/evm/upto/facilitator'
import type { LocalAccount } from 'viem'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { evmSchemes } from '../../src/evm/index.js'
import { shape } from './batch-differential.js'
import { tokenBalance } from './evm-contracts.js'
import { startEvmFixture, type EvmFixture } from './evm-fixture.js'
import type { Body, Side } from './exact-differential.js'
import { installPermit2 } from './permit2-contracts.js'
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
