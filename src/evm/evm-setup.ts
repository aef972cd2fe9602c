import type { AdapterServices, PaymentContext } from '../core/adapter.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { createNetworkRuntime, type NetworkRuntime } from './chain/network-runtime.js'
import { TRANSACTION_BASE_GAS } from './chain/settlement-simulation.js'
import type { ExactEvmConfig } from './exact-evm-config.js'
import type { PrepareOptions } from './exact/prepare-payment.js'

const DEFAULT_GAS_LIMIT = 150_000n
const DEFAULT_MAX_SETTLEMENT_GAS = 300_000n
const DEFAULT_MAX_DEPLOYMENT_GAS = 500_000n

/** What the EVM adapters of one configuration share: its networks with their signers and nonces, and its limits, read once. */
export interface EvmSetup {
  readonly runtimes: ReadonlyMap<string, NetworkRuntime>
  /** Every signer's address, once, as supported() lists them. */
  readonly signerAddresses: readonly string[]
  /** The offline checks as settle runs them. */
  readonly prepareOptions: PrepareOptions
  /** Verify's offline checks: its chain check proves a plain signature on a known token (see checkChainState). */
  readonly verifyPrepareOptions: PrepareOptions
  readonly deployWallets: boolean
  readonly maxInFlight: number
  readonly gasLimit: bigint
  readonly maxSettlementGas: bigint
  readonly maxDeploymentGas: bigint
  readonly rebroadcastIntervalMs: number
  /** How long and how often a settle waits for its receipt. */
  receiptOptions(signal: AbortSignal): { timeoutMs: number; maxIntervalMs: number; signal: AbortSignal }
  /** The runtime of the context's network (the registry only routes networks the adapters listed). */
  runtimeOf(ctx: PaymentContext): NetworkRuntime
  /** Takes the facilitator's services (both adapters of one setup get the same facilitator's): the signers' first nonce reads use them. */
  attach(services: AdapterServices): void
}

/** Builds the networks' runtimes and checks the limits of `config`; throws `misconfigured` on a bad one. */
export function createEvmSetup(config: ExactEvmConfig): EvmSetup {
  const runtimes = new Map<string, NetworkRuntime>()
  let services: AdapterServices | undefined
  for (const entry of config.networks) {
    const runtime = createNetworkRuntime(entry, config, () => services)
    if (runtimes.has(runtime.network.caip2)) {
      throw new FacilitatorError('misconfigured', `exactEvm: ${runtime.network.caip2} is configured twice`)
    }
    runtimes.set(runtime.network.caip2, runtime)
  }
  const prepareOptions: PrepareOptions = {
    settleMarginSeconds: config.settleMarginSeconds ?? 6,
    erc6492Factories: new Set((config.erc6492Factories ?? []).map((factory) => factory.toLowerCase())),
    nowSeconds: () => BigInt(Math.floor(Date.now() / 1000)),
  }
  const maxInFlight = config.maxInFlightSettlesPerSigner ?? Number.POSITIVE_INFINITY
  if (!(maxInFlight >= 1)) throw new FacilitatorError('misconfigured', 'exactEvm: maxInFlightSettlesPerSigner must be at least 1')
  const maxSettlementGas = config.maxSettlementGas ?? DEFAULT_MAX_SETTLEMENT_GAS
  if (!(maxSettlementGas >= TRANSACTION_BASE_GAS)) {
    throw new FacilitatorError('misconfigured', `exactEvm: maxSettlementGas must be at least ${TRANSACTION_BASE_GAS}`)
  }
  const maxDeploymentGas = config.maxDeploymentGas ?? DEFAULT_MAX_DEPLOYMENT_GAS
  if (!(maxDeploymentGas >= TRANSACTION_BASE_GAS)) {
    throw new FacilitatorError('misconfigured', `exactEvm: maxDeploymentGas must be at least ${TRANSACTION_BASE_GAS}`)
  }
  return {
    runtimes,
    signerAddresses: [...new Set([...runtimes.values()].flatMap((r) => r.signers.map((s) => s.signer.address)))],
    prepareOptions,
    verifyPrepareOptions: { ...prepareOptions, deferSignerCheck: true },
    deployWallets: config.deployErc6492Wallets ?? false,
    maxInFlight,
    gasLimit: config.gasLimit ?? DEFAULT_GAS_LIMIT,
    maxSettlementGas,
    maxDeploymentGas,
    rebroadcastIntervalMs: config.rebroadcastIntervalMs ?? 3_000,
    receiptOptions: (signal) => ({ timeoutMs: config.receiptTimeoutMs ?? 30_000, maxIntervalMs: config.receiptPollIntervalMs ?? 1_000, signal }),
    attach(given) {
      services = given
    },
    runtimeOf(ctx) {
      const runtime = runtimes.get(ctx.network)
      if (!runtime) throw new FacilitatorError('misconfigured', `exactEvm does not serve ${ctx.network}`)
      return runtime
    },
  }
}
