import type { SchemeAdapter } from '../core/adapter.js'
import { renamedOption } from '../core/renamed-option.js'
import { evmSchemes as evmAdapters, exactEvm as exactEvmAdapter, type EvmSchemesOptions } from './evm-schemes.js'
import type { ExactEvmConfig as AdapterConfig } from './exact-evm-config.js'

/** Configuration of `exactEvm()` and `evmSchemes()`: the names it shares with `exactSvm()` mean the same there. */
export interface ExactEvmConfig extends Omit<AdapterConfig, 'receiptTimeoutMs' | 'receiptPollIntervalMs'> {
  /** How long settle waits for the transaction's receipt before answering `settlement_pending`. @default 30_000 */
  readonly confirmTimeoutMs?: number
  /** Longest pause between two polls for the receipt (polling starts fast and backs off). @default 1_000 */
  readonly confirmPollIntervalMs?: number
  /** @deprecated Renamed `confirmTimeoutMs` (the name `exactSvm` uses); still read. */
  readonly receiptTimeoutMs?: number
  /** @deprecated Renamed `confirmPollIntervalMs` (the name `exactSvm` uses); still read. */
  readonly receiptPollIntervalMs?: number
}

/** The adapter's own configuration: the current names mapped onto the ones it reads. */
export function evmAdapterConfig(config: ExactEvmConfig): AdapterConfig {
  const { confirmTimeoutMs, confirmPollIntervalMs, receiptTimeoutMs, receiptPollIntervalMs, ...rest } = config
  const timeout = renamedOption('exactEvm', ['confirmTimeoutMs', confirmTimeoutMs], ['receiptTimeoutMs', receiptTimeoutMs])
  const poll = renamedOption('exactEvm', ['confirmPollIntervalMs', confirmPollIntervalMs], ['receiptPollIntervalMs', receiptPollIntervalMs])
  return { ...rest, ...(timeout === undefined ? {} : { receiptTimeoutMs: timeout }), ...(poll === undefined ? {} : { receiptPollIntervalMs: poll }) }
}

/**
 * The `exact` scheme on EVM chains: EIP-3009 `transferWithAuthorization` and Permit2 payments,
 * verified offline then in one Multicall3 round trip, settled by the facilitator's own keys with
 * locally managed nonces. Served under each network's v1 name (when it has one) and its CAIP-2
 * id; the signers are listed under `eip155:*`.
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { exactEvm } from 'x402-facilitator/evm'
 * import { privateKeyToAccount } from 'viem/accounts'
 *
 * const facilitator = createFacilitator({
 *   schemes: [exactEvm({
 *     networks: [{ network: 'base', rpcUrls: [process.env.BASE_RPC!] }],
 *     signers: [privateKeyToAccount(process.env.FACILITATOR_KEY as `0x${string}`)],
 *   })],
 * })
 */
export function exactEvm(config: ExactEvmConfig): SchemeAdapter {
  return exactEvmAdapter(evmAdapterConfig(config))
}

/**
 * The EVM adapters of one configuration, sharing its networks, signers and their nonces: `exact`
 * (as {@link exactEvm}) and `upto` (Permit2 through the x402 upto proxy: the client authorizes a
 * maximum, the resource server settles the amount it used, possibly zero), and with
 * `options.batchSettlement` also `batch-settlement` (as `batchSettlementEvm`, on the same keys). `GET /supported` lists
 * the upto kind of each network with `extra.facilitatorAddress`, the signer the payer names in its
 * witness (the only account the upto proxy lets settle).
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { evmSchemes } from 'x402-facilitator/evm'
 * import { privateKeyToAccount } from 'viem/accounts'
 *
 * const facilitator = createFacilitator({
 *   schemes: evmSchemes({
 *     networks: [{ network: 'base', rpcUrls: [process.env.BASE_RPC!] }],
 *     signers: [privateKeyToAccount(process.env.FACILITATOR_KEY as `0x${string}`)],
 *   }),
 * })
 */
export function evmSchemes(config: ExactEvmConfig, options?: EvmSchemesOptions): SchemeAdapter[] {
  return evmAdapters(evmAdapterConfig(config), options)
}
