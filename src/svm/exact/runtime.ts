import { isAddress } from '@solana/kit'
import type { AdapterNetwork, PaymentContext } from '../../core/adapter.js'
import { secretsOfUrl } from '../../core/redact.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { createAssetTable } from '../../networks/assets.js'
import { describeNetwork } from '../../networks/networks.js'
import { checkRpcUrls } from '../../networks/rpc-urls.js'
import { createEd25519Verifier, type Ed25519Verifier, type FeePayerSigning, feePayerSigning } from '../crypto/ed25519.js'
import { createSignaturePoller, type SignaturePoller } from '../rpc/signature-poller.js'
import { createHttpRpcTransport, type SvmRpcTransport } from '../rpc/solana-rpc.js'
import { type AssociatedTokenAccountOf, createAssociatedTokenCache } from '../rules/associated-token-cache.js'
import { ALLOWABLE_MINT_EXTENSIONS, type MintExtensionName } from '../rules/mint-extensions.js'
import { DEFAULT_ALLOWED_PROGRAMS, DEFAULT_LIMITS } from '../rules/transaction-rules.js'
import { type ExactSvmConfig, rpcUrlsOf } from './config.js'

/** Signer, RPC and advertised fee payer of one served network. */
export interface NetworkRuntime {
  readonly info: AdapterNetwork
  readonly rpc: SvmRpcTransport
  /** Shared by every settlement confirming on this network. */
  readonly poller: SignaturePoller
  /** The mints accepted on this network; `undefined` accepts any (no `restrictAssets`). */
  readonly allowedMints: ReadonlySet<string> | undefined
  /** Token-2022 mint extensions the operator accepts on this network. */
  readonly allowedMintExtensions: ReadonlySet<MintExtensionName>
}

/** What {@link createExactSvmRuntime} builds once from the configuration, for every step of every request. */
export interface ExactSvmRuntime {
  /** Served networks by CAIP-2 id. */
  readonly networks: ReadonlyMap<string, NetworkRuntime>
  /** How each fee payer signs, by address. */
  readonly signers: ReadonlyMap<string, FeePayerSigning>
  readonly feePayers: ReadonlySet<string>
  readonly verifySignature: Ed25519Verifier
  readonly allowedPrograms: ReadonlySet<string>
  readonly limits: { readonly maxComputeUnitLimit: number; readonly maxComputeUnitPrice: bigint; readonly maxPriorityFeeLamports: bigint }
  readonly associatedTokenAccount: AssociatedTokenAccountOf
  readonly confirmTimeoutMs: number
  readonly pollIntervalMs: number
  readonly rebroadcastIntervalMs: number
  /** Most settlements one fee payer may have in flight. */
  readonly maxInFlight: number
  readonly minFeePayerLamports: bigint
  /** Parts of RPC URLs and headers that may be API keys: no error leaves with one. */
  readonly secrets: readonly string[]
  /** The served network of a payment; throws `misconfigured` for another. */
  networkOf(ctx: PaymentContext): NetworkRuntime
}

/** Checks the configuration and builds signers, transports and pollers (one transport per network: connection reuse is most of the latency). */
export function createExactSvmRuntime(config: ExactSvmConfig): ExactSvmRuntime {
  if (config.feePayers.length === 0) throw new FacilitatorError('misconfigured', 'exactSvm needs at least one fee payer')
  const signers = new Map<string, FeePayerSigning>()
  for (const signer of config.feePayers) signers.set(signer.address, feePayerSigning(signer))
  const verifySignature = createEd25519Verifier()
  const feePayers: ReadonlySet<string> = new Set(signers.keys())
  const firstFeePayer = config.feePayers[0]?.address ?? ''

  const allowedPrograms: ReadonlySet<string> = new Set(config.allowedPrograms ?? DEFAULT_ALLOWED_PROGRAMS)
  for (const program of allowedPrograms) {
    if (!isAddress(program)) throw new FacilitatorError('misconfigured', `allowed program ${program} is not a Solana address`)
  }
  const limits = {
    maxComputeUnitLimit: config.limits?.maxComputeUnitLimit ?? DEFAULT_LIMITS.maxComputeUnitLimit,
    maxComputeUnitPrice: BigInt(config.limits?.maxComputeUnitPrice ?? DEFAULT_LIMITS.maxComputeUnitPrice),
    maxPriorityFeeLamports: BigInt(config.limits?.maxPriorityFeeLamports ?? DEFAULT_LIMITS.maxPriorityFeeLamports),
  }
  const maxInFlight = config.maxInFlightSettlesPerSigner ?? Number.POSITIVE_INFINITY
  if (!(maxInFlight >= 1)) throw new FacilitatorError('misconfigured', 'exactSvm: maxInFlightSettlesPerSigner must be at least 1')
  const pollIntervalMs = config.pollIntervalMs ?? 400
  const knownAssets = createAssetTable().list()

  const networks = new Map<string, NetworkRuntime>()
  for (const entry of config.networks) {
    const info = describeNetwork(entry.network)
    if (!info || info.family !== 'solana') throw new FacilitatorError('misconfigured', `${entry.network} is not a Solana network`)
    if (networks.has(info.caip2)) throw new FacilitatorError('misconfigured', `network ${entry.network} is configured twice`)
    const urls = rpcUrlsOf(entry)
    // A transport of the caller's may take other URLs; ours needs http(s) ones.
    if (!config.rpc) {
      if (urls.length === 0) throw new FacilitatorError('misconfigured', `exactSvm: ${entry.network} has no rpcUrls (or rpcUrl)`)
      checkRpcUrls(urls, `exactSvm: rpcUrls of ${entry.network}`)
    }
    const feePayer = entry.feePayer ?? firstFeePayer
    if (!signers.has(feePayer)) throw new FacilitatorError('misconfigured', `fee payer ${feePayer} of ${entry.network} is not among feePayers`)
    for (const mint of entry.assets ?? []) {
      if (!isAddress(mint)) throw new FacilitatorError('misconfigured', `asset ${mint} of ${entry.network} is not a Solana mint address`)
    }
    const allowedMintExtensions = new Set<MintExtensionName>()
    for (const name of entry.allowedMintExtensions ?? []) {
      if (!(ALLOWABLE_MINT_EXTENSIONS as readonly string[]).includes(name)) {
        throw new FacilitatorError('misconfigured', `allowedMintExtensions of ${entry.network}: ${String(name)} is not one of ${ALLOWABLE_MINT_EXTENSIONS.join(', ')}`)
      }
      allowedMintExtensions.add(name)
    }
    const allowedMints = entry.restrictAssets
      ? new Set([...knownAssets.filter((asset) => asset.network === info.caip2).map((asset) => asset.address), ...(entry.assets ?? [])])
      : undefined
    const rpc = config.rpc
      ? config.rpc({ caip2: info.caip2, urls, headers: entry.rpcHeaders })
      : createHttpRpcTransport({ urls, headers: entry.rpcHeaders, timeoutMs: config.rpcTimeoutMs, maxInFlight: config.maxRpcRequestsInFlight })
    networks.set(info.caip2, {
      info: { caip2: info.caip2, ...(info.v1Name ? { v1Name: info.v1Name } : {}), extra: { feePayer } },
      rpc,
      poller: createSignaturePoller({ rpc, intervalMs: pollIntervalMs }),
      allowedMints,
      allowedMintExtensions,
    })
  }

  return {
    networks,
    signers,
    feePayers,
    verifySignature,
    allowedPrograms,
    limits,
    associatedTokenAccount: createAssociatedTokenCache(),
    confirmTimeoutMs: config.confirmTimeoutMs ?? 40_000,
    pollIntervalMs,
    rebroadcastIntervalMs: config.rebroadcastIntervalMs ?? 2_000,
    maxInFlight,
    minFeePayerLamports: config.minFeePayerLamports ?? 10_000_000n,
    secrets: config.networks.flatMap((entry) => [
      ...rpcUrlsOf(entry).flatMap(secretsOfUrl),
      ...Object.values(entry.rpcHeaders ?? {}).filter((value) => value.length >= 4),
    ]),
    networkOf(ctx) {
      const network = networks.get(ctx.network)
      if (!network) throw new FacilitatorError('misconfigured', `exactSvm does not serve ${ctx.network}`)
      return network
    },
  }
}
