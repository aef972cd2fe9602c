import type { Address, LocalAccount, Transport } from 'viem'
import type { Logger } from '../core/logger.js'

/**
 * What settle needs from a facilitator key: its address and offline
 * transaction signing. A viem `LocalAccount` (`privateKeyToAccount(...)`,
 * a KMS-backed `toAccount(...)`) fits as is.
 */
export type EvmSettlementSigner = Pick<LocalAccount, 'address' | 'signTransaction'>

/** A token and its EIP-712 domain, for requirements that omit `extra.name` / `extra.version`. */
export interface ExactEvmAsset {
  readonly address: Address
  readonly name: string
  readonly version: string
}

/** One EVM network served by the adapter. */
export interface ExactEvmNetworkConfig {
  /** A v1 name (`base`, `base-sepolia`) or a CAIP-2 id (`eip155:8453`). */
  readonly network: string
  /** One or more JSON-RPC URLs, tried in order (viem `fallback`). They may carry API keys: they never appear in messages. */
  readonly rpcUrls: readonly string[]
  /** Facilitator keys of this network. @default the adapter's `signers` */
  readonly signers?: readonly EvmSettlementSigner[]
  /**
   * Extra tokens with their EIP-712 domain; the built-in USDC table is always known. A known
   * token is trusted to check the payer's signature in verify's simulation (a valid payment
   * then skips the offline recovery), and its payments from plain accounts are sent with the
   * fixed `gasLimit` (verify's one request). Any other token is priced by an estimate of the
   * exact settlement, capped by `maxSettlementGas`. List only real EIP-3009 tokens.
   */
  readonly assets?: readonly ExactEvmAsset[]
  /** Accept only `assets` and the built-in tokens of this network. @default false */
  readonly restrictAssets?: boolean
  /** Where Multicall3 lives on this chain. @default 0xcA11bde05977b3631167028862bE2a173976CA11 */
  readonly multicall3?: Address
}

/** Configuration of `exactEvm()`. */
export interface ExactEvmConfig {
  readonly networks: readonly ExactEvmNetworkConfig[]
  /** Facilitator keys used on every network without its own `signers`. */
  readonly signers?: readonly EvmSettlementSigner[]
  /** Seconds an authorization must stay valid after verify, so settle can still land it. @default 6 */
  readonly settleMarginSeconds?: number
  /** How long settle waits for the receipt before answering `settlement_pending`. @default 30_000 */
  readonly receiptTimeoutMs?: number
  /** Longest pause between two receipt polls (polling starts fast and backs off). @default 1_000 */
  readonly receiptPollIntervalMs?: number
  /**
   * While settle waits for a receipt, how often it asks the node whether it still knows the
   * transaction; a node that lost it (restart, evicting pool, another backend behind a load
   * balancer) gets the same signed bytes again. 0 turns it off. @default 3_000
   */
  readonly rebroadcastIntervalMs?: number
  /** ERC-6492 factories whose wrapped signatures are accepted; any other factory is rejected. @default [] */
  readonly erc6492Factories?: readonly Address[]
  /** Deploy an undeployed ERC-6492 wallet (at the facilitator's cost) before settling. @default false */
  readonly deployErc6492Wallets?: boolean
  /**
   * Gas limit of a settlement in a known token (built-in or `assets`) by a plain account (no estimate).
   * Verify's simulation carries this limit, so a known token whose transfer needs more is refused
   * (`invalid_exact_evm_transaction_simulation_failed`) instead of running out of gas on chain.
   * @default 150_000n
   */
  readonly gasLimit?: bigint
  /**
   * Most gas a settlement priced by an estimate may use: a token outside the known table, and a payer
   * with code (an ERC-1271 wallet, an EIP-7702 account, an ERC-6492 wallet once deployed), whose code
   * runs inside the transfer at the facilitator's expense. Verify estimates the exact settlement (from
   * the signer, with the fees); above the cap it answers `invalid_exact_evm_settlement_gas_too_high`,
   * and settle refuses before anything is sent (an undeployed ERC-6492 wallet is not deployed either).
   * The limit sent is the estimate plus 25 %, rounded up to 10,000, never above the cap.
   * @default 300_000n
   */
  readonly maxSettlementGas?: bigint
  /**
   * Most gas the deployment of an undeployed ERC-6492 wallet may use (with `deployErc6492Wallets`).
   * The facilitator pays for it; a deployment estimated above the cap answers
   * `invalid_exact_evm_settlement_gas_too_high` before anything is sent, and the limit sent never
   * exceeds it. @default 500_000n
   */
  readonly maxDeploymentGas?: bigint
  /**
   * How long a signer whose transaction the node refused for insufficient funds (no gas money)
   * is left out. Settles pick the other signers meanwhile; when every signer of the network is
   * left out, settle throws `FacilitatorError('signer_unfunded')` (HTTP 503) before anything is
   * claimed, instead of leaving each new payment pending. @default 30_000
   */
  readonly unfundedSignerCooldownMs?: number
  /**
   * How long a fee quote is reused between settles. Verify's simulations carry the fees of the last
   * quote even when it is older, and refresh it in the background (only the first verify waits for one).
   * @default 2_000
   */
  readonly feeCacheMs?: number
  /**
   * Budget of one request to one RPC URL with the default transport. Past it the
   * next URL is tried, so it stays well below the verify budget (10 s by default):
   * a hanging first URL then costs one bound, not the whole verify.
   * Ignored when `transport` is given. @default 4_000
   */
  readonly rpcTimeoutMs?: number
  /**
   * Most requests on the wire to one RPC URL at once, with the default transport.
   * A call that finds one free leaves at once, alone; while another is on the wire, a
   * verify's chain check waits for the end of its event-loop turn, to leave with the other
   * verifies of that turn. Calls made while every one is taken (a burst of verifies)
   * wait, and leave together as one JSON-RPC batch when a request comes back. So a
   * burst opens this many connections at most, not one per call, and sends as many
   * calls per round trip as queued up. A server that answers a batch as a whole gets
   * the calls alone again. An integer from 1 to 1,000; anything else is
   * `misconfigured`. Ignored when `transport` is given. @default 8
   */
  readonly maxRpcRequestsInFlight?: number
  /**
   * Most transactions of one signer sent in one JSON-RPC batch. A signer's
   * transactions go in nonce order; those that queue up while a send is on the
   * wire go together, as one batch the node handles in order, so one signer
   * sends as many per round trip as are ready. 1 sends them one at a time, as
   * does a `transport` of your own (its batching may not keep the order), and
   * so does a server that answers a batch as a whole (one error, or an HTTP client
   * error such as 400 or 413). Set 1 for a provider that spreads a batch's calls
   * over several nodes. An integer from 1 to 1,000; anything else is `misconfigured`. @default 20
   */
  readonly sendBatchSize?: number
  /**
   * Builds the transport of one RPC URL (tests use it for fault injection and request counting).
   * Give it a timeout (viem's `http()` has one): a settlement send it never answers holds back
   * the later transactions of its signer; it counts as unanswered after 30 s and is sent again
   * while its settle's budget lasts. @default JSON-RPC over our HTTP/1.1 client on keep-alive connections (TCP or TLS), bounded by `rpcTimeoutMs`, retried once when it is the only URL (errors as viem `http()` reports them) */
  readonly transport?: (url: string) => Transport
  /**
   * Most settlements one signer may have in flight (verify, send and confirmation)
   * on a network. When every signer of the network is at the bound, settle throws
   * `FacilitatorError('signer_busy')` (HTTP 503 with Retry-After) before anything
   * is claimed or sent, so the payer can simply retry. @default unbounded
   */
  readonly maxInFlightSettlesPerSigner?: number
  /** Protocol versions served. @default [1, 2] */
  readonly versions?: readonly (1 | 2)[]
  /**
   * Wei below which a signer counts as not ready in `readiness()` (`GET /readyz`): it soon
   * cannot pay for settlements. @default 1_000_000_000_000_000n (0.001 ETH)
   */
  readonly minSignerBalance?: bigint
  /** A pino-compatible logger for what the adapter alone sees: signers left out for lack of gas money. @default silent */
  readonly logger?: Pick<Logger, 'warn'>
}
