import type { SchemeAdapter } from '../core/adapter.js'
import { secretsOfUrl, withRedactedErrors } from '../core/redact.js'
import { loadKeccak } from './crypto/keccak.js'
import { createEvmSetup } from './evm-setup.js'
import type { ExactEvmConfig } from './exact-evm-config.js'
import { createExactAdapter } from './exact/exact-adapter.js'
import { createUptoAdapter } from './upto/upto-adapter.js'
import { createBatchAdapter } from './batch/batch-adapter.js'
import type { BatchSettlementOptions } from './batch/batch-settlement-evm.js'

/**
 * The `exact` scheme on EVM chains: EIP-3009 `transferWithAuthorization`
 * payments, verified offline then in one Multicall3 round trip, settled by
 * the facilitator's own keys with locally managed nonces.
 *
 * Served under each network's v1 name (when it has one) and its CAIP-2 id;
 * the signers are listed under `eip155:*`.
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
  return createEvmAdapters(config).exact
}

/**
 * The EVM adapters of one configuration, sharing its networks, signers and their nonces: `exact`
 * (EIP-3009 and Permit2, as {@link exactEvm}) and `upto` (Permit2 through the x402 upto proxy: the
 * client authorizes a maximum, the resource server settles the amount it used, possibly zero).
 * `GET /supported` lists the upto kind of each network with `extra.facilitatorAddress`, the signer
 * the payer names in its witness (the only account the upto proxy lets settle).
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
export function evmSchemes(config: ExactEvmConfig, options: EvmSchemesOptions = {}): SchemeAdapter[] {
  const { exact, upto, batch } = createEvmAdapters(config, options)
  return batch ? [exact, upto, batch] : [exact, upto]
}

/** Schemes `evmSchemes()` adds over the same setup. */
export interface EvmSchemesOptions {
  /**
   * Adds `batch-settlement` (see `batchSettlementEvm`) on the same networks and signers: its deposits,
   * claims, sweeps and refunds take nonces from the same counters and go through the same send lanes
   * and journal as exact and upto settles, so one key serves all three.
   */
  readonly batchSettlement?: BatchSettlementOptions
}

function createEvmAdapters(config: ExactEvmConfig, options: EvmSchemesOptions = {}): { exact: SchemeAdapter; upto: SchemeAdapter; batch?: SchemeAdapter } {
  // The WebAssembly keccak compiles in the background; the first verifies may use viem's.
  void loadKeccak()
  const setup = createEvmSetup(config)
  // RPC URLs often carry API keys and viem quotes them in its errors: no cause chain leaves with one.
  const secrets = config.networks.flatMap((entry) => entry.rpcUrls.flatMap(secretsOfUrl))
  const redacted = <A extends SchemeAdapter>(adapter: A) => withRedactedErrors(adapter, secrets)
  return {
    exact: redacted(createExactAdapter(setup, config)),
    upto: redacted(createUptoAdapter(setup)),
    ...(options.batchSettlement ? { batch: withRedactedErrors(createBatchAdapter(setup, options.batchSettlement), secrets) } : {}),
  }
}
