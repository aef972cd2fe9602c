import type { TransactionPartialSigner } from '@solana/kit'
import type { SvmRpcTransport } from '../rpc/solana-rpc.js'
import type { MintExtensionName } from '../rules/mint-extensions.js'
import type { ExactSvmLimits } from '../rules/transaction-rules.js'

/** One Solana network served by {@link exactSvm}. */
export interface ExactSvmNetworkConfig {
  /** A v1 name (`solana`, `solana-devnet`, `solana-testnet`) or a CAIP-2 id (`solana:<genesis hash>`). */
  network: string
  /** RPC URLs, tried in order when one fails. Never quoted in errors. */
  rpcUrls?: readonly string[]
  /** Shorthand for a single RPC URL. */
  rpcUrl?: string
  /** HTTP headers sent to the RPC (API keys). */
  rpcHeaders?: Record<string, string>
  /**
   * The fee payer listed as `extra.feePayer` for this network.
   * @default the first of `feePayers`
   */
  feePayer?: string
  /** Mints accepted besides the built-in USDC of this network when `restrictAssets` is on. */
  assets?: readonly string[]
  /**
   * Accept only payments in `assets` and the built-in USDC mint of this network.
   * Without it any mint is accepted, and anyone can create a mint and pay
   * themselves at the fee payer's expense (signature and priority fee per settle).
   * @default false
   */
  restrictAssets?: boolean
  /**
   * Token-2022 mint extensions accepted on this network although they can short payTo,
   * take the tokens back or block a transfer. Without them such mints are refused, each
   * with its own code (`invalid_exact_svm_mint_transfer_fee`, ...):
   * - `'transferFee'`: the payment then moves the amount plus the fee, and what must equal
   *   the required amount is what reaches payTo (under the fee schedule of the current epoch);
   * - `'permanentDelegate'`, `'pausable'` (a paused mint is still refused),
   *   `'defaultAccountStateFrozen'`, `'transferHook'` (a hook that needs extra accounts
   *   still fails: a payment carries none).
   * Non-transferable mints and extension types this version does not know are always refused.
   * @default [] (every such mint is refused)
   */
  allowedMintExtensions?: readonly MintExtensionName[]
}

/** Configuration of {@link exactSvm}. */
export interface ExactSvmConfig {
  networks: readonly ExactSvmNetworkConfig[]
  /**
   * Signers that co-sign payments as fee payer (a kit `KeyPairSigner` or any
   * `TransactionPartialSigner`). All are listed under `signers['solana:*']`;
   * a payment may name any of them, as long as it equals `extra.feePayer`.
   */
  feePayers: readonly TransactionPartialSigner[]
  /** Caps on the compute budget a payment may ask of the fee payer. */
  limits?: ExactSvmLimits
  /**
   * Programs allowed besides ComputeBudget and the token programs.
   * @default [Memo, Lighthouse]
   */
  allowedPrograms?: readonly string[]
  /** How long settle waits for confirmation before answering `settlement_pending`. @default 40_000 */
  confirmTimeoutMs?: number
  /** Pause between two signature-status polling rounds; one round asks about every settlement confirming on the network. @default 400 */
  pollIntervalMs?: number
  /**
   * While settle waits for confirmation, how often the signed bytes are sent again as long as the
   * chain shows no status and the blockhash is valid (leaders drop transactions under load). 0
   * sends them only when the first send got no answer. @default 2_000
   */
  rebroadcastIntervalMs?: number
  /** Budget of one RPC round trip. @default 10_000 */
  rpcTimeoutMs?: number
  /**
   * Most requests on the wire to a network's RPC at once, with the default transport. A
   * request that finds one free leaves at once (while another is on the wire, a verify's
   * waits for the end of its event-loop turn, with the other verifies of that turn); those
   * made while every one is taken (a burst of verifies) wait, and leave together as one
   * JSON-RPC batch when one comes back, so a burst opens this many connections at most.
   * A node that refuses the merged batch gets each request alone again. An integer from
   * 1 to 1,000; anything else is `misconfigured`. Ignored with `rpc`. @default 8
   */
  maxRpcRequestsInFlight?: number
  /** Protocol versions served. @default [1, 2] */
  versions?: readonly (1 | 2)[]
  /**
   * Lamports below which a fee payer counts as not ready in `readiness()` (`GET /readyz`): it
   * soon cannot pay for settlements. @default 10_000_000 (0.01 SOL)
   */
  minFeePayerLamports?: bigint
  /**
   * Most settlements one fee payer may have in flight (verify, send and
   * confirmation). A payment names its fee payer, so when that fee payer is at
   * the bound, settle throws `FacilitatorError('signer_busy')` (HTTP 503 with
   * Retry-After) before anything is claimed or sent; the payer can simply retry.
   * @default unbounded
   */
  maxInFlightSettlesPerSigner?: number
  /** Builds the RPC transport of a network (tests, fault injection, custom clients). @default createHttpRpcTransport */
  rpc?: (network: { caip2: string; urls: readonly string[]; headers?: Record<string, string> }) => SvmRpcTransport
}

/** The RPC URLs of a network entry, from `rpcUrls` or the `rpcUrl` shorthand. */
export function rpcUrlsOf(entry: ExactSvmNetworkConfig): readonly string[] {
  return entry.rpcUrls ?? (entry.rpcUrl ? [entry.rpcUrl] : [])
}
