/**
 * What the batch-settlement tests (and bench/evm-batch-facilitator.ts) set up alike: an anvil fixture
 * with Permit2 and the batch-settlement contracts, the receiver side of its channels, our adapter
 * pointed at an RPC URL (often a startFaultProxy in front of anvil), and builders of requirements,
 * request bodies, channels and EIP-3009 deposits.
 *
 * @example
 * const world = await startBatchWorld()
 * const to = newBatchReceiver()
 * const { config, id } = batchChannel(world, to, payer.address)
 * await facilitator.settle(batchRequest(batchRequirements(world, to), await depositPayload(world, payer, config)))
 */
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Address, Hex, LocalAccount } from 'viem'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { batchSettlementEvm, type BatchSettlementEvmConfig } from '../../src/evm/batch/batch-settlement-evm.js'
import { batchSettlementAbi } from '../../src/evm/batch/abi.js'
import { channelId, type ChannelConfig } from '../../src/evm/batch/codec.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../src/evm/batch/constants.js'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import { evmSchemes } from '../../src/evm/evm-schemes.js'
import { installBatchSettlement } from './batch-settlement-contracts.js'
import { channelConfig, erc3009DepositAuthorization, signVoucher } from './batch-settlement-signing.js'
import { startEvmFixture, type EvmFixture, type EvmFixtureOptions } from './evm-fixture.js'
import { installPermit2 } from './permit2-contracts.js'

/** The receiver side of a channel: the payee, and the receiver authorizer that signs its claims and refunds. */
export interface BatchReceiver {
  readonly receiver: Address
  readonly authorizer: LocalAccount
}

/** An EVM fixture (chain 84532) with Permit2 and the batch-settlement contracts at their canonical addresses. */
export async function startBatchWorld(options: EvmFixtureOptions = {}): Promise<EvmFixture> {
  const world = await startEvmFixture(options)
  try {
    await installPermit2(world.node)
    await installBatchSettlement(world.node)
  } catch (error) {
    await world.stop()
    throw error
  }
  return world
}

/** A payee and a receiver authorizer, both fresh keys. */
export function newBatchReceiver(): BatchReceiver {
  return { authorizer: privateKeyToAccount(generatePrivateKey()), receiver: privateKeyToAccount(generatePrivateKey()).address }
}

/** Our batchSettlementEvm on eip155:84532 through `rpc` with the fixture's signers. */
export function batchScheme(world: EvmFixture, rpc: string, options: Omit<BatchSettlementEvmConfig, 'networks' | 'signers'> = {}) {
  return batchSettlementEvm({ networks: [{ network: 'eip155:84532', rpcUrls: [rpc] }], signers: world.signers, ...options })
}

/** A facilitator with batchScheme through `rpc`: `authorizer` signs for receivers, delegated refunds allowed, 20 s to confirm. */
export function delegatingBatchFacilitator(world: EvmFixture, rpc: string, authorizer: LocalAccount) {
  return createFacilitator({ schemes: [batchScheme(world, rpc, { receiverAuthorizer: authorizer, allowDelegatedRefunds: true, confirmTimeoutMs: 20_000 })] })
}

/** evmSchemes (exact, upto and batch-settlement under `authorizer`) on the fixture's config, every network through `rpc`. */
export function evmSchemesThrough(world: EvmFixture, rpc: string, authorizer: LocalAccount, overrides: Partial<ExactEvmConfig> = {}) {
  const config = world.adapterConfig(overrides)
  return evmSchemes({ ...config, networks: config.networks.map((n) => ({ ...n, rpcUrls: [rpc] })) }, { batchSettlement: { receiverAuthorizer: authorizer } })
}

/** batch-settlement requirements on eip155:84532 for the fixture's token, paying `to.receiver`, priced `amount` (1000). */
export function batchRequirements(world: EvmFixture, to: BatchReceiver, { amount = '1000', extra = {} }: { amount?: string; extra?: Record<string, unknown> } = {}) {
  return {
    scheme: 'batch-settlement',
    network: 'eip155:84532' as const,
    amount,
    asset: world.token.address,
    payTo: to.receiver,
    maxTimeoutSeconds: 3600,
    extra: { receiverAuthorizer: to.authorizer.address, withdrawDelay: 900, name: world.token.name, version: world.token.version, ...extra },
  }
}

/** A /verify or /settle body (x402 v2) carrying `payload` under `requirements`. */
export function batchRequest<R, P>(requirements: R, payload: P) {
  return { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload }, paymentRequirements: requirements }
}

/** A new channel config of `payer` to `to` (random salt; `payerAuthorizer` defaults to the payer) and its id on 84532. */
export function batchChannel(world: EvmFixture, to: BatchReceiver, payer: Address, payerAuthorizer?: Address): { config: ChannelConfig; id: Hex } {
  const config = channelConfig({ payer, ...(payerAuthorizer ? { payerAuthorizer } : {}), receiver: to.receiver, receiverAuthorizer: to.authorizer.address, token: world.token.address, salt: generatePrivateKey() })
  return { config, id: channelId(config, 84532) }
}

/** A deposit payload: `amount` by EIP-3009 into `config`'s channel, with a first voucher of `ceiling`, all signed by `signer`. */
export async function depositPayload(world: EvmFixture, signer: LocalAccount, config: ChannelConfig, amount = 10_000n, ceiling = 1000n) {
  const id = channelId(config, 84532)
  return {
    type: 'deposit',
    channelConfig: config,
    voucher: { channelId: id, maxClaimableAmount: ceiling.toString(), signature: await signVoucher(signer, 84532, id, ceiling) },
    deposit: { amount: amount.toString(), authorization: { erc3009Authorization: await erc3009DepositAuthorization(signer, world.token, 84532, config, amount) } },
  }
}

/** A channel's balance and claimed total, as the contract's `channels` getter answers them. */
export function channelOnChain(world: EvmFixture, id: Hex): Promise<readonly [bigint, bigint]> {
  return world.node.publicClient.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'channels', args: [id] })
}
