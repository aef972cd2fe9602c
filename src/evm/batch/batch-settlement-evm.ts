/**
 * `batchSettlementEvm()`: the `batch-settlement` scheme on EVM networks (x402 spec
 * `scheme_batch_settlement_evm.md`). Verify checks deposit, voucher and refund payloads and answers
 * the channel snapshot in `extra`; settle sends deposits through the canonical collectors, claims
 * many channels in one `claimWithSignature`, sweeps, and refunds, each simulated first. Its
 * transactions go through the EVM runtime (nonces, send lanes, journaled sender slots) of its own
 * setup; `evmSchemes(config, { batchSettlement })` builds it over the setup of exactEvm and uptoEvm
 * instead, so that one key serves all three.
 *
 * @example
 * // partial
 * const adapter = batchSettlementEvm({
 *   networks: [{ network: 'eip155:8453', rpcUrls: [process.env.BASE_RPC!] }],
 *   signers: [privateKeyToAccount(process.env.GAS_KEY as Hex)],
 * })
 */
import type { LocalAccount, Transport } from 'viem'
import type { SchemeAdapter } from '../../core/adapter.js'
import { secretsOfUrl, withRedactedErrors } from '../../core/redact.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { describeNetwork } from '../../networks/networks.js'
import { createEvmSetup } from '../evm-setup.js'
import { createBatchAdapter } from './batch-adapter.js'
import type { BatchSettlementSigner } from './chain.js'

/** Configuration of `batchSettlementEvm()`. */
export interface BatchSettlementEvmConfig {
  readonly networks: readonly { readonly network: string; readonly rpcUrls: readonly string[]; readonly signers?: readonly BatchSettlementSigner[] }[]
  /** Keys that send (and pay gas for) deposits, claims, sweeps and refunds on every network without its own. */
  readonly signers?: readonly BatchSettlementSigner[]
  /**
   * A key of the facilitator's own (never a gas signer) that signs `ClaimBatch` and `Refund` for
   * servers that delegate to it: listed as `extra.receiverAuthorizer` in supported(). It signs
   * claims (they only move what payers signed to the channel's receiver); refunds only with
   * `allowDelegatedRefunds`.
   */
  readonly receiverAuthorizer?: Pick<LocalAccount, 'address' | 'signTypedData'>
  /**
   * Sign refunds for channels delegated to `receiverAuthorizer`. The spec requires that such a
   * refund come from the service that created the channel: the HTTP handler settles them only for
   * authenticated callers (`settle_requires_authentication` without an `authenticate` hook), and
   * every authenticated caller must be that service (anyone knowing a channel could close it otherwise).
   * @default false
   */
  readonly allowDelegatedRefunds?: boolean
  /**
   * How long a channel state read stays fresh enough to verify an EOA voucher without the chain. The
   * read lives in the facilitator's settlement store (shared by the instances on it; a claim, deposit
   * or refund settled by any of them drops it), or in memory without a facilitator. @default 2_000
   */
  readonly channelStateTtlMs?: number
  /** Seconds a deposit authorization must stay valid after verify. @default 6 */
  readonly settleMarginSeconds?: number
  /** How long settle waits for a receipt before answering `settlement_pending`. @default 30_000 */
  readonly confirmTimeoutMs?: number
  /** Longest pause between two polls for the receipt (polling starts fast and backs off). @default 1_000 */
  readonly confirmPollIntervalMs?: number
  /**
   * The most gas a deposit, claim, sweep or refund may take: a transaction whose estimate exceeds it
   * is refused (the kind's simulation-failed code) before anything is sent, and no transaction's gas
   * limit goes above it. @default 1_000_000n
   */
  readonly maxSettlementGas?: bigint
  /**
   * Most settlements one signer may have in flight (verify, send and confirmation) on a network.
   * When every signer of the network is at the bound, settle throws `FacilitatorError('signer_busy')`
   * (HTTP 503 with Retry-After) before anything is claimed or sent, as `exactEvm` does. @default unbounded
   */
  readonly maxInFlightSettlesPerSigner?: number
  /** Builds the transport of one RPC URL (tests use it for fault injection and request counting). @default as exactEvm's */
  readonly transport?: (url: string) => Transport
}

/** What `evmSchemes(config, { batchSettlement })` takes: the networks, signers and bounds come from `config`. */
export type BatchSettlementOptions = Pick<BatchSettlementEvmConfig, 'receiverAuthorizer' | 'allowDelegatedRefunds' | 'channelStateTtlMs' | 'settleMarginSeconds' | 'maxSettlementGas'>


export function batchSettlementEvm(config: BatchSettlementEvmConfig): SchemeAdapter {
  for (const entry of config.networks) {
    const info = describeNetwork(entry.network)
    if (!info || info.family !== 'eip155') throw new FacilitatorError('misconfigured', `batchSettlementEvm: batch-settlement serves eip155 networks, not ${entry.network}`)
    if ((entry.signers ?? config.signers ?? []).length === 0) throw new FacilitatorError('misconfigured', `batchSettlementEvm: batch-settlement on ${info.caip2} needs at least one signer`)
  }
  if (config.maxInFlightSettlesPerSigner !== undefined && !(config.maxInFlightSettlesPerSigner >= 1)) {
    throw new FacilitatorError('misconfigured', 'batchSettlementEvm: maxInFlightSettlesPerSigner must be at least 1')
  }
  const setup = createEvmSetup({
    networks: config.networks.map((entry) => ({ network: entry.network, rpcUrls: entry.rpcUrls, ...(entry.signers ? { signers: entry.signers } : {}) })),
    ...(config.signers ? { signers: config.signers } : {}),
    ...(config.confirmTimeoutMs !== undefined ? { receiptTimeoutMs: config.confirmTimeoutMs } : {}),
    ...(config.confirmPollIntervalMs !== undefined ? { receiptPollIntervalMs: config.confirmPollIntervalMs } : {}),
    ...(config.maxInFlightSettlesPerSigner !== undefined ? { maxInFlightSettlesPerSigner: config.maxInFlightSettlesPerSigner } : {}),
    ...(config.settleMarginSeconds !== undefined ? { settleMarginSeconds: config.settleMarginSeconds } : {}),
    ...(config.transport ? { transport: config.transport } : {}),
  })
  // RPC URLs often carry API keys and viem quotes them in its errors: no cause chain leaves with one.
  const secrets = config.networks.flatMap((entry) => entry.rpcUrls.flatMap(secretsOfUrl))
  return withRedactedErrors(createBatchAdapter(setup, config), secrets)
}

export type { BatchSettlementSigner }
