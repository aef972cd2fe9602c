import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Blockhash, isAddress, type TransactionPartialSigner } from '@solana/kit'
import * as z from 'zod'
import type { AdapterNetwork, BroadcastRecord, Parsed, PaymentContext, ReadinessCheck, SchemeAdapter, SettleJournal, SettleReservation, Verdict } from '../core/adapter.js'
import { withDeadline } from '../core/deadline.js'
import { secretsOfUrl, withRedactedErrors } from '../core/redact.js'
import { FacilitatorError } from '../errors/facilitator-error.js'
import { REJECTION } from '../errors/reasons.js'
import { createAssetTable } from '../networks/assets.js'
import { describeNetwork } from '../networks/networks.js'
import type { SettleResponse, VerifyResponse } from '../schemas/messages.js'
import { settleFailure, settlementPending } from '../settlement/settle-answers.js'
import { createAssociatedTokenCache } from './associated-token-cache.js'
import { checkRpcUrls } from '../networks/rpc-urls.js'
import { encodeBase58 } from './base58.js'
import { transactionFee } from './transaction-fee.js'
import { createEd25519Verifier, type FeePayerSigning, feePayerSigning } from './ed25519.js'
import { ALLOWABLE_MINT_EXTENSIONS, judgeToken2022Mint, type MintExtensionName, readToken2022Mint } from './mint-extensions.js'
import { SVM_REASON, type SvmReason } from './reasons.js'
import { type SignaturePoller, type SignatureRound, createSignaturePoller, signatureStatusesSchema } from './signature-poller.js'
import { createHttpRpcTransport, type RpcCall, type RpcOutcome, resultOf, type SvmRpcTransport } from './solana-rpc.js'
import {
  checkDecodedPaymentTransaction,
  type CheckedPayment,
  DEFAULT_ALLOWED_PROGRAMS,
  DEFAULT_LIMITS,
  decodeWireTransaction,
  type ExactSvmLimits,
  TOKEN_2022_PROGRAM_ADDRESS,
} from './transaction-rules.js'
import { bytesOfBase64, readFeePayer, readWireTransaction, type WireTransaction } from './wire-transaction.js'

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

const payloadSchema = z.looseObject({
  transaction: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64'),
})
const extraSchema = z.looseObject({
  feePayer: z.string().optional(),
  memo: z.string().optional(),
})

const encodedAccountSchema = z.looseObject({
  data: z.tuple([z.string(), z.literal('base64')]),
  owner: z.string(),
})
const multipleAccountsSchema = z.looseObject({ value: z.array(encodedAccountSchema.nullable()) })
const simulationSchema = z.looseObject({
  // `accounts` is read on its own (see sourceBalanceOf): an odd shape there loses the spend figure, not the verdict.
  value: z.looseObject({ err: z.unknown().nullish(), logs: z.array(z.string()).nullish(), accounts: z.unknown() }),
})
const simulatedAccountsSchema = z.array(encodedAccountSchema.nullable())

/** The Clock sysvar, read beside a Token-2022 mint when transfer fees are allowed: the epoch picks the fee schedule. */
const CLOCK_SYSVAR = 'SysvarC1ock11111111111111111111111111111111'
const SYSVAR_OWNER = 'Sysvar1111111111111111111111111111111111111'
/** Clock layout: slot, epoch start timestamp, epoch (u64 LE at 16), leader schedule epoch, unix timestamp. */
const CLOCK_EPOCH_OFFSET = 16

/** Signer, RPC and advertised fee payer of one served network. */
interface NetworkRuntime {
  readonly info: AdapterNetwork
  readonly rpc: SvmRpcTransport
  /** Shared by every settlement confirming on this network. */
  readonly poller: SignaturePoller
  /** The mints accepted on this network; `undefined` accepts any (no `restrictAssets`). */
  readonly allowedMints: ReadonlySet<string> | undefined
  /** Token-2022 mint extensions the operator accepts on this network. */
  readonly allowedMintExtensions: ReadonlySet<MintExtensionName>
}

/** The payload as `parse` read it (`P`): its transaction, decoded once for the whole request. */
interface ExactSvmPayload {
  readonly transaction: WireTransaction
}

/** A payment that passed the static rules, signed by its fee payer: what a valid verify hands settle (`V`). */
interface SignedPayment {
  readonly payment: CheckedPayment
  /** Base64 of the fully signed transaction: what settle sends. */
  readonly wire: string
  /** Base64 of the transaction with the fee payer's slot empty: what verify simulates. */
  readonly payerSignedWire: string
  /** The fee payer's signature in base58: the transaction id. */
  readonly signature: string
  /** What the transaction costs the fee payer once processed, in lamports (see `transactionFee`). */
  readonly fee: bigint
}

/** A settlement slot on the payment's fee payer (`R`), handed to the verify and the settle of one settle call. */
interface FeePayerReservation extends SettleReservation {
  /** The fee payer whose slot is held; `undefined` when the payment names none of ours (its verify refuses it). */
  readonly feePayer: string | undefined
  /**
   * Set once a verify under this reservation reported a spend, or found the balance read it shared
   * failed: a later verify (the core's retry after a refused hold) reads the balance afresh.
   */
  readsAfresh: boolean
}

type Prepared = { ok: true; signed: SignedPayment } | { ok: false; reason: SvmReason; message: string; payer?: string }

/** A balance read under way for one source account, and when the verify that made it began. */
interface BalanceRead {
  readonly since: number
  readonly balance: Promise<bigint | undefined>
}

/**
 * The x402 `exact` scheme on Solana: verifies a payer-signed SPL
 * `TransferChecked` transaction, co-signs it as fee payer and settles it. Every
 * rule that protects the fee payer is checked before anything is simulated or
 * sent (see `transaction-rules.ts`); the payer's signature is checked as
 * strictly as the runtime checks it (`ed25519.ts`), and Token-2022 mints whose
 * extensions can short payTo or block the transfer are refused unless allowed
 * (`mint-extensions.ts`). A valid verify costs one RPC round trip: signature
 * status and simulation (plus, for a Token-2022 payment, the mint account) in
 * one JSON-RPC batch.
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { exactSvm } from 'x402-facilitator/svm'
 * import { createKeyPairSignerFromBytes } from '@solana/kit'
 *
 * // The fee payer's 64-byte secret key, as solana-keygen writes it: [12,34,...]
 * const secretKeyBytes = Uint8Array.from(JSON.parse(process.env.SOLANA_FEE_PAYER_KEY!) as number[])
 * const feePayer = await createKeyPairSignerFromBytes(secretKeyBytes)
 * const facilitator = createFacilitator({
 *   schemes: [exactSvm({ networks: [{ network: 'solana-devnet', rpcUrl: 'https://api.devnet.solana.com' }], feePayers: [feePayer] })],
 * })
 */
export function exactSvm(config: ExactSvmConfig): SchemeAdapter {
  if (config.feePayers.length === 0) throw new FacilitatorError('misconfigured', 'exactSvm needs at least one fee payer')
  const signers = new Map<string, FeePayerSigning>()
  for (const signer of config.feePayers) signers.set(signer.address, feePayerSigning(signer))
  const verifySignature = createEd25519Verifier()
  const feePayerSet: ReadonlySet<string> = new Set(signers.keys())
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
  const confirmTimeoutMs = config.confirmTimeoutMs ?? 40_000
  const maxInFlight = config.maxInFlightSettlesPerSigner ?? Number.POSITIVE_INFINITY
  if (!(maxInFlight >= 1)) throw new FacilitatorError('misconfigured', 'exactSvm: maxInFlightSettlesPerSigner must be at least 1')
  const inFlight = new Map<string, number>()
  const pollIntervalMs = config.pollIntervalMs ?? 400
  const rebroadcastIntervalMs = config.rebroadcastIntervalMs ?? 2_000
  const associatedTokenAccount = createAssociatedTokenCache()
  const knownAssets = createAssetTable().list()

  // One transport per network, built once: connection reuse is most of the latency.
  const runtimes = new Map<string, NetworkRuntime>()
  for (const entry of config.networks) {
    const info = describeNetwork(entry.network)
    if (!info || info.family !== 'solana') throw new FacilitatorError('misconfigured', `${entry.network} is not a Solana network`)
    if (runtimes.has(info.caip2)) throw new FacilitatorError('misconfigured', `network ${entry.network} is configured twice`)
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
    runtimes.set(info.caip2, {
      info: { caip2: info.caip2, ...(info.v1Name ? { v1Name: info.v1Name } : {}), extra: { feePayer } },
      rpc,
      poller: createSignaturePoller({ rpc, intervalMs: pollIntervalMs }),
      allowedMints,
      allowedMintExtensions,
    })
  }

  // The balance read under way for each source account. Settlements racing from one payer (a burst
  // of an agent's calls) share it instead of each making the node copy the account out of its
  // simulation: it answers with (or before) the sharer's own simulation, and the core counts what
  // landed since its moment against it (PayerSpend.since). Only a read still under way is shared,
  // so that moment is at most one round trip old.
  const balances = new Map<string, BalanceRead>()

  const runtimeOf = (ctx: PaymentContext): NetworkRuntime => {
    const runtime = runtimes.get(ctx.network)
    if (!runtime) throw new FacilitatorError('misconfigured', `exactSvm does not serve ${ctx.network}`)
    return runtime
  }

  /**
   * Decodes the payload's base64 transaction once per request. A payload with no transaction to
   * decode is refused with what verify answered for it before (an unaccepted mint comes first).
   */
  function parse(ctx: PaymentContext): Parsed<ExactSvmPayload> {
    const payload = payloadSchema.safeParse(ctx.payload.payload)
    // The schema has checked the base64 alphabet already.
    const transaction = payload.success ? readWireTransaction(bytesOfBase64(payload.data.transaction)) : undefined
    if (transaction) {
      // The message is what every signature signs: one message, one payment, whatever signatures ride along.
      return { payload: { transaction }, key: `${ctx.network}:${createHash('sha256').update(transaction.messageBytes).digest('base64url')}` }
    }
    const refuse = (reason: string, message: string): Parsed<ExactSvmPayload> => ({ refusal: invalid(reason, message) })
    if (mintRefusedOn(ctx, runtimeOf(ctx))) return refuse(SVM_REASON.mintNotAllowed, `mint ${ctx.asset} is not accepted on ${ctx.network}`)
    if (!payload.success) return refuse(SVM_REASON.invalidPayload, 'paymentPayload.payload.transaction must be a base64 Solana transaction')
    if (!extraSchema.safeParse(ctx.requirements.extra ?? {}).success) {
      return refuse(SVM_REASON.invalidPayload, 'paymentRequirements.extra.feePayer and .memo must be strings')
    }
    return refuse(SVM_REASON.undecodable, 'the payload transaction is not a base64 Solana transaction')
  }

  /** Takes a slot on the fee payer the payment names (the first account of its message). */
  function reserveSettlement(ctx: PaymentContext): FeePayerReservation {
    // The core reserves only after parse decoded the transaction: its fee payer is read again in place.
    const transaction = (ctx.payload.payload as { transaction?: unknown } | undefined)?.transaction
    const feePayer = typeof transaction === 'string' ? readFeePayer(bytesOfBase64(transaction)) : undefined
    // A payload without one of our fee payers never reaches a send: verify rejects it.
    if (feePayer === undefined || !feePayerSet.has(feePayer)) return { feePayer: undefined, readsAfresh: false, release() {} }
    const count = inFlight.get(feePayer) ?? 0
    if (count >= maxInFlight) {
      throw new FacilitatorError('signer_busy', `fee payer ${feePayer} has ${maxInFlight} settlements in flight; retry shortly`)
    }
    inFlight.set(feePayer, count + 1)
    let held = true
    return {
      feePayer,
      readsAfresh: false,
      release() {
        if (!held) return
        held = false
        const left = (inFlight.get(feePayer) ?? 1) - 1
        if (left > 0) inFlight.set(feePayer, left)
        else inFlight.delete(feePayer)
      },
    }
  }

  /** Whether `restrictAssets` leaves out the required mint. */
  const mintRefusedOn = (ctx: PaymentContext, runtime: NetworkRuntime) => runtime.allowedMints !== undefined && !runtime.allowedMints.has(ctx.asset)

  /** Static rules, the payer's signature, then the fee payer's; nothing touches the chain. */
  async function prepare(ctx: PaymentContext, runtime: NetworkRuntime, transaction: WireTransaction): Promise<Prepared> {
    // A mint anyone can create would let them pay themselves at the fee payer's expense: refused before any work.
    if (mintRefusedOn(ctx, runtime)) {
      return { ok: false, reason: SVM_REASON.mintNotAllowed, message: `mint ${ctx.asset} is not accepted on ${ctx.network}` }
    }
    const extra = extraSchema.safeParse(ctx.requirements.extra ?? {})
    if (!extra.success) {
      return { ok: false, reason: SVM_REASON.invalidPayload, message: 'paymentRequirements.extra.feePayer and .memo must be strings' }
    }
    // The rules answer malformed bytes (account indices out of range, an oversized message) with a violation.
    const outcome = await checkDecodedPaymentTransaction({
      transaction,
      feePayers: feePayerSet,
      expectedFeePayer: extra.data.feePayer,
      allowedPrograms,
      limits,
      asset: ctx.asset,
      payTo: ctx.payTo,
      amount: ctx.amount,
      memo: extra.data.memo,
      associatedTokenAccount,
      transferFeeAllowed: runtime.allowedMintExtensions.has('transferFee'),
    })
    if (!outcome.ok) return outcome
    const payment = outcome.payment
    // The rules allow exactly two signers, the fee payer and the payer; the payer's signature is checked
    // here because the simulation runs without sigVerify (see checkOnChain).
    const payerSignature = payment.transaction.signatures[payment.payer]
    if (!payerSignature || !verifySignature(payment.payer, payment.transaction.messageBytes, payerSignature)) {
      return { ok: false, reason: SVM_REASON.signatureInvalid, message: 'the payer\'s signature of the transaction does not verify', payer: payment.payer }
    }
    const signer = signers.get(payment.feePayer)
    if (!signer) return { ok: false, reason: SVM_REASON.feePayerNotManaged, message: 'no signer for this fee payer' }
    return { ok: true, signed: await signAsFeePayer(signer, payment, transaction) }
  }

  async function verify(ctx: PaymentContext, payload: ExactSvmPayload, reservation?: FeePayerReservation): Promise<Verdict<SignedPayment>> {
    const startedAt = Date.now()
    const runtime = runtimeOf(ctx)
    const prepared = await prepare(ctx, runtime, payload.transaction)
    if (!prepared.ok) return { response: invalid(prepared.reason, prepared.message, prepared.payer) }
    return judge(ctx, runtime, prepared.signed, reservation, startedAt)
  }

  /**
   * The chain's judgement of a signed payment (see checkOnChain). A settle's verify (given a
   * reservation) also reads the balance spent from, or shares a read of it under way.
   */
  async function judge(ctx: PaymentContext, runtime: NetworkRuntime, signed: SignedPayment, reservation: FeePayerReservation | undefined, startedAt: number): Promise<Verdict<SignedPayment>> {
    const { payment } = signed
    // Token-2022 mints carry extensions that can short payTo or block the transfer later; spl-token mints have none.
    const readsMint = payment.tokenProgram === TOKEN_2022_PROGRAM_ADDRESS
    const readsEpoch = readsMint && runtime.allowedMintExtensions.has('transferFee')
    const account = `${ctx.network}:${payment.source}`
    let shared: BalanceRead | undefined
    let reading: ((balance: bigint | undefined) => void) | undefined
    let read: BalanceRead | undefined
    if (reservation) {
      shared = reservation.readsAfresh ? undefined : balances.get(account)
      if (!shared) {
        read = { since: startedAt, balance: new Promise<bigint | undefined>((resolve) => (reading = resolve)) }
        balances.set(account, read)
      }
    }
    try {
      return await checkOnChain(ctx, runtime, signed, { account, startedAt, shared, reading, readsMint, readsEpoch, reservation })
    } finally {
      // Done: later verifies read for themselves. A read that failed (or threw) leaves its sharers to read afresh.
      if (read && balances.get(account) === read) balances.delete(account)
      reading?.(undefined)
    }
  }

  /** Verify's one round trip (see verify), and what the payment spends from the source's balance. */
  async function checkOnChain(
    ctx: PaymentContext,
    runtime: NetworkRuntime,
    signed: SignedPayment,
    read: {
      account: string
      startedAt: number
      shared: BalanceRead | undefined
      reading: ((balance: bigint | undefined) => void) | undefined
      readsMint: boolean
      readsEpoch: boolean
      reservation: FeePayerReservation | undefined
    },
  ): Promise<Verdict<SignedPayment>> {
    const { payment, signature } = signed
    const payer = payment.payer
    const { account, shared, readsMint, readsEpoch, reservation } = read
    const refused = (response: VerifyResponse): Verdict<SignedPayment> => ({ response })

    // One round trip: the replay check, the simulation and (Token-2022) the mint travel in one batch. A simulation
    // that passes proves the accounts (mint, funded source, destination of the mint); a failing one reads them below.
    const calls: RpcCall[] = [
      { method: 'getSignatureStatuses', params: [[signature], { searchTransactionHistory: true }] },
      {
        method: 'simulateTransaction',
        // Simulate before signing: the RPC gets the payer-signed transaction without our signature, so
        // verify (open to anyone) never hands out sendable bytes that could land behind settle's back
        // and turn its replay check into `already_processed` for a payer who paid. The payer's signature
        // was checked in prepare; the signature (transaction id) above comes from signing locally.
        // A settle's verify also asks for the source's state after the transfer: plus the amount, it is
        // the balance spent from (the verdict's spend, for the core's holds). A plain /verify holds
        // nothing: it does not make the node copy the account out.
        params: [
          signed.payerSignedWire,
          {
            encoding: 'base64',
            sigVerify: false,
            replaceRecentBlockhash: false,
            commitment: 'confirmed',
            ...(read.reading ? { accounts: { encoding: 'base64', addresses: [payment.source] } } : {}),
          },
        ],
      },
    ]
    if (readsMint) {
      calls.push({ method: 'getMultipleAccounts', params: [readsEpoch ? [payment.mint, CLOCK_SYSVAR] : [payment.mint], { encoding: 'base64', commitment: 'confirmed' }] })
    }
    const [statusOutcome, simulationOutcome, mintOutcome] = await runtime.rpc.request(calls, ctx.signal)

    const status = parseResult(signatureStatusesSchema, statusOutcome, 'getSignatureStatuses').value[0]
    if (status) return refused(invalid(SVM_REASON.alreadyProcessed, `transaction ${signature} was already processed`, payer))
    if (readsMint) {
      const problem = mintProblem(ctx, runtime, payment, mintOutcome, readsEpoch)
      if (problem) return refused(problem)
    }

    if (!simulationOutcome) throw new FacilitatorError('rpc_error', 'the Solana RPC gave no answer to simulateTransaction')
    if (!simulationOutcome.ok) {
      // Nodes answer a signature that does not verify with a JSON-RPC error (-32003), not a simulation error.
      if (simulationOutcome.error.code === -32003) return refused(invalid(SVM_REASON.signatureInvalid, 'a signature of the transaction does not verify', payer))
      if (simulationOutcome.error.code === -32602 || simulationOutcome.error.code === -32002) {
        return refused(invalid(SVM_REASON.simulationFailed, `the simulation was refused: ${simulationOutcome.error.message}`, payer))
      }
      throw new FacilitatorError('rpc_error', `the Solana RPC failed simulateTransaction: ${simulationOutcome.error.message}`)
    }
    const simulation = simulationSchema.safeParse(simulationOutcome.result)
    if (!simulation.success) throw new FacilitatorError('rpc_error', 'the Solana RPC answered simulateTransaction in an unknown shape')
    const err = simulation.data.value.err
    if (err !== null && err !== undefined) {
      const text = describeTransactionError(err)
      if (text === 'BlockhashNotFound') return refused(invalid(SVM_REASON.blockhashExpired, 'the transaction blockhash is expired or unknown', payer))
      if (text === 'AlreadyProcessed') return refused(invalid(SVM_REASON.alreadyProcessed, `transaction ${signature} was already processed`, payer))
      if (text === 'SignatureFailure') return refused(invalid(SVM_REASON.signatureInvalid, 'a signature of the transaction does not verify', payer))
      // Name the account at fault when one is; the chain's error text otherwise.
      return refused((await accountProblem(ctx, runtime, payment)) ?? invalid(SVM_REASON.simulationFailed, `the simulation failed: ${text}`, payer))
    }
    const valid = { isValid: true as const, payer }
    if (shared) {
      // Bounded by this call's own budget: the read shared is another call's.
      const balance = await withDeadline(shared.balance, ctx.signal)
      // The read shared failed: this payment reads its own (one more simulation, only then).
      if (balance === undefined) {
        reservation!.readsAfresh = true
        return judge(ctx, runtime, signed, reservation, Date.now())
      }
      if (reservation) reservation.readsAfresh = true
      return { response: valid, payment: signed, spend: { account, amount: payment.amount, balance, since: shared.since } }
    }
    const balanceAfter = sourceBalanceOf(simulation.data.value.accounts, payment)
    if (balanceAfter === undefined) return { response: valid, payment: signed }
    const balance = balanceAfter + payment.amount
    read.reading?.(balance)
    if (reservation) reservation.readsAfresh = true
    return { response: valid, payment: signed, spend: { account, amount: payment.amount, balance, since: read.startedAt } }
  }
  /**
   * Judges a Token-2022 payment's mint (read in verify's batch): its extensions, and, where the operator
   * allows transfer fees, that what reaches payTo after the fee is the required amount.
   */
  function mintProblem(ctx: PaymentContext, runtime: NetworkRuntime, payment: CheckedPayment, outcome: RpcOutcome | undefined, readsEpoch: boolean): VerifyResponse | undefined {
    const payer = payment.payer
    const [mintAccount, clockAccount] = parseResult(multipleAccountsSchema, outcome, 'getMultipleAccounts').value
    if (!mintAccount || mintAccount.owner !== payment.tokenProgram) {
      return invalid(SVM_REASON.mintAccountInvalid, `mint ${payment.mint} does not exist under the transfer's token program`, payer)
    }
    const mint = readToken2022Mint(bytesOfBase64(mintAccount.data[0]))
    if (!mint) return invalid(SVM_REASON.mintUnparseable, `mint ${payment.mint} is not a Token-2022 mint this facilitator can read`, payer)
    let epoch: bigint | undefined
    if (readsEpoch) {
      const clock = clockAccount && clockAccount.owner === SYSVAR_OWNER ? bytesOfBase64(clockAccount.data[0]) : undefined
      if (!clock || clock.length < CLOCK_EPOCH_OFFSET + 8) throw new FacilitatorError('rpc_error', 'the Solana RPC answered the Clock sysvar in an unknown shape')
      epoch = Buffer.from(clock.buffer, clock.byteOffset, clock.byteLength).readBigUInt64LE(CLOCK_EPOCH_OFFSET)
    }
    const verdict = judgeToken2022Mint(mint, { amount: payment.amount, allowed: runtime.allowedMintExtensions, ...(epoch === undefined ? {} : { epoch }) })
    if (!verdict.ok) return invalid(verdict.reason, `mint ${payment.mint}: ${verdict.message}`, payer)
    if (verdict.received !== ctx.amount) {
      // Only reachable where transfer fees are allowed: elsewhere the rules require the exact amount and a fee refuses the mint.
      return mint.transferFee
        ? invalid(SVM_REASON.amountAfterFeeMismatch, `payTo would receive ${verdict.received} of the ${payment.amount} moved (the mint's transfer fee is withheld); the requirements ask for ${ctx.amount}`, payer)
        : invalid(SVM_REASON.amountMismatch, `the transfer moves ${payment.amount}, the requirements ask for exactly ${ctx.amount} (the mint charges no transfer fee)`, payer)
    }
    return undefined
  }

  /** Reads the transfer's accounts after a failed simulation: a missing or unfunded one is the likely cause. */
  async function accountProblem(ctx: PaymentContext, runtime: NetworkRuntime, payment: CheckedPayment): Promise<VerifyResponse | undefined> {
    const payer = payment.payer
    let accounts: z.infer<typeof multipleAccountsSchema>['value']
    try {
      const [accountsOutcome] = await runtime.rpc.request(
        [{ method: 'getMultipleAccounts', params: [[payment.mint, payment.source, payment.destination], { encoding: 'base64', commitment: 'confirmed' }] }],
        ctx.signal,
      )
      accounts = parseResult(multipleAccountsSchema, accountsOutcome, 'getMultipleAccounts').value
    } catch (error) {
      // The verdict is known already (the simulation failed): a failed read only loses the detail.
      if (error instanceof FacilitatorError) return undefined
      throw error
    }
    const [mintAccount, sourceAccount, destinationAccount] = accounts
    if (!mintAccount || mintAccount.owner !== payment.tokenProgram) {
      return invalid(SVM_REASON.mintAccountInvalid, `mint ${payment.mint} does not exist under the transfer's token program`, payer)
    }
    const source = decodeTokenAccount(sourceAccount, payment)
    if (!source) return invalid(SVM_REASON.sourceAccountMissing, `source token account ${payment.source} does not exist or does not hold this mint`, payer)
    const destination = decodeTokenAccount(destinationAccount, payment)
    if (!destination) {
      return invalid(SVM_REASON.destinationAccountMissing, `destination token account ${payment.destination} does not exist; the facilitator does not create accounts`, payer)
    }
    if (source.amount < payment.amount) {
      return invalid(SVM_REASON.insufficientFunds, `the source token account holds ${source.amount}, the payment needs ${payment.amount}`, payer)
    }
    return undefined
  }

  async function settle(ctx: PaymentContext, signed: SignedPayment, journal: SettleJournal): Promise<SettleResponse> {
    const runtime = runtimeOf(ctx)
    // The verify of this call (with the simulation) checked and signed it just before the claim.
    const { payment, wire, signature, fee } = signed
    await journal.broadcasting({ transaction: signature, raw: wire })
    const sentAt = performance.now()
    let offeredAt: number | undefined
    let sendOutcome: RpcOutcome | undefined
    try {
      ;[sendOutcome] = await runtime.rpc.request(
        // Preflight would simulate a second time; verify has just done it.
        [{ method: 'sendTransaction', params: [wire, { encoding: 'base64', skipPreflight: true, preflightCommitment: 'confirmed' }] }],
        ctx.signal,
      )
      offeredAt = sentAt
    } catch (error) {
      // A cut answer or a refused request proves nothing either way: confirm decides, and sends the
      // bytes again the first time the chain says it has never seen them.
      if (ctx.signal.aborted || !(error instanceof FacilitatorError)) throw error
    }
    // A signature that does not verify (or a message that does not sanitize) fails the same way on every node, for good.
    const refusal = finalRefusalOf(sendOutcome)
    if (refusal) return settleFailure(ctx, SVM_REASON.signatureInvalid, refusal, payment.payer, signature)
    // Any other refusal is not proof the bytes cannot land (another node may have them): only the chain's status or the blockhash's expiry below decides the outcome.
    return confirm(ctx, runtime, { signature, blockhash: payment.blockhash, payer: payment.payer, sentAt, wire, offeredAt, fee })
  }

  async function resume(ctx: PaymentContext, payload: ExactSvmPayload, record: BroadcastRecord): Promise<SettleResponse> {
    const runtime = runtimeOf(ctx)
    const transaction = (record.raw ? decodeWireTransaction(record.raw) : undefined) ?? payload.transaction
    return confirm(ctx, runtime, {
      signature: record.transaction,
      blockhash: transaction.blockhash,
      // The payer is the second signer (the first is the fee payer).
      payer: transaction.accounts[1],
      sentAt: performance.now(),
      fee: transactionFee(transaction),
      // Offered at once if the chain has not seen it (a crash between the record and the send).
      ...(record.raw ? { wire: record.raw } : {}),
    })
  }

  interface Confirmation {
    signature: string
    blockhash: Blockhash
    payer: string | undefined
    sentAt: number
    /** The signed bytes, offered again while the chain has not seen the transaction and its blockhash is valid. */
    wire?: string
    /** When a node last accepted the bytes; never: they are offered at the first look. */
    offeredAt?: number
    /** What the transaction costs the fee payer once processed, in lamports (see `transactionFee`). */
    fee?: bigint
  }

  /** Polls the signature status until confirmed, expired (blockhash no longer valid) or out of time. */
  async function confirm(ctx: PaymentContext, runtime: NetworkRuntime, c: Confirmation): Promise<SettleResponse> {
    // The wait ends at the request's budget or at confirmTimeoutMs, whichever comes first.
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(confirmTimeoutMs)])
    // Leaders drop transactions under load; the same bytes are the same transaction, so they go again
    // every rebroadcastIntervalMs until the status appears or the blockhash expires.
    let nextOffer = c.offeredAt === undefined ? 0 : rebroadcastIntervalMs > 0 ? c.offeredAt + rebroadcastIntervalMs : Number.POSITIVE_INFINITY
    let expiredOnce = false
    // The first look is immediate: a fast chain may already have the transaction.
    let delayMs = 0
    for (;;) {
      if (signal.aborted) return settlementPending(ctx, c.signature, c.payer)
      let round: SignatureRound | undefined
      try {
        round = await runtime.poller.check(c.signature, c.blockhash, delayMs, signal)
      } catch (error) {
        // The transaction is out: a flaky RPC while polling ends in `pending`, never in a lost id.
        if (!(error instanceof FacilitatorError)) throw error
        delayMs = pollIntervalMs
        continue
      }
      if (!round) return settlementPending(ctx, c.signature, c.payer)
      delayMs = pollIntervalMs
      const status = round.status
      if (status) {
        if (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized') {
          ctx.timings.confirmationMs = performance.now() - c.sentAt
          // Processed, landed or failed: the fee payer paid its fee either way.
          if (c.fee !== undefined) ctx.cost = (ctx.cost ?? 0n) + c.fee
          if (status.err !== null && status.err !== undefined) {
            return settleFailure(ctx, REJECTION.transactionFailed, `the transaction failed on chain: ${describeTransactionError(status.err)}`, c.payer, c.signature)
          }
          return { success: true, transaction: c.signature, network: ctx.wireNetwork, ...(c.payer ? { payer: c.payer } : {}) }
        }
        continue
      }
      if (round.blockhashValid === undefined) throw new FacilitatorError('rpc_error', 'the Solana RPC answered isBlockhashValid in an unknown shape')
      if (!round.blockhashValid) {
        // Look once more: the transaction may have landed between the two reads of the batch.
        if (expiredOnce) {
          return settleFailure(ctx, SVM_REASON.transactionExpired, 'the transaction blockhash expired before it landed; it can never land', c.payer, c.signature)
        }
        // The failure is final and recorded, so give a lagging node one full interval to report a transaction
        // that landed before the expiry (the poller may run a round early; this wait is exact). The budget bounds it.
        expiredOnce = true
        try {
          await sleep(pollIntervalMs, undefined, { signal })
        } catch {
          return settlementPending(ctx, c.signature, c.payer)
        }
        delayMs = 0
        continue
      }
      if (c.wire && performance.now() >= nextOffer) {
        try {
          // Bounded by the wait's own signal: a hanging send must not hold the answer past confirmTimeoutMs.
          const [outcome] = await runtime.rpc.request([{ method: 'sendTransaction', params: [c.wire, { encoding: 'base64', skipPreflight: true }] }], signal)
          const refusal = finalRefusalOf(outcome)
          if (refusal) return settleFailure(ctx, SVM_REASON.signatureInvalid, refusal, c.payer, c.signature)
          nextOffer = rebroadcastIntervalMs > 0 ? performance.now() + rebroadcastIntervalMs : Number.POSITIVE_INFINITY
        } catch (error) {
          // Still refused: keep polling and offering the bytes (not faster than the rebroadcast pace) until the bound.
          if (!(error instanceof FacilitatorError)) throw error
          nextOffer = performance.now() + (rebroadcastIntervalMs > 0 ? rebroadcastIntervalMs : pollIntervalMs)
        }
      }
    }
  }

  // RPC URLs and headers may carry API keys: no cause chain leaves with one.
  const secrets = config.networks.flatMap((entry) => [
    ...rpcUrlsOf(entry).flatMap(secretsOfUrl),
    ...Object.values(entry.rpcHeaders ?? {}).filter((value) => value.length >= 4),
  ])

  const minFeePayerLamports = config.minFeePayerLamports ?? 10_000_000n

  /** Per network: the RPC answers with the expected genesis hash; each fee payer holds enough lamports. */
  async function readiness(signal: AbortSignal): Promise<ReadinessCheck[]> {
    const checks = await Promise.all(
      [...runtimes.values()].map(async (runtime): Promise<ReadinessCheck[]> => {
        const network = runtime.info.caip2
        const payers = [...feePayerSet]
        try {
          const outcomes = await runtime.rpc.request(
            [{ method: 'getGenesisHash', params: [] }, ...payers.map((payer) => ({ method: 'getBalance', params: [payer, { commitment: 'confirmed' }] }))],
            signal,
          )
          const genesis = resultOf(outcomes[0], 'getGenesisHash')
          // A CAIP-2 Solana id is the first 32 characters of the genesis hash.
          const expected = network.slice('solana:'.length)
          const rpcCheck: ReadinessCheck =
            typeof genesis === 'string' && genesis.startsWith(expected)
              ? { name: `rpc ${network}`, ok: true }
              : { name: `rpc ${network}`, ok: false, detail: 'the RPC serves another chain (genesis hash differs)' }
          const payerChecks = payers.map((payer, index): ReadinessCheck => {
            const answer = resultOf(outcomes[index + 1], 'getBalance') as { value?: unknown } | undefined
            const lamports = typeof answer?.value === 'number' ? BigInt(answer.value) : undefined
            if (lamports === undefined) return { name: `fee payer ${payer} ${network}`, ok: false, detail: 'the balance could not be read' }
            const signer = { network, address: payer, balance: lamports.toString(), minimum: minFeePayerLamports.toString() }
            return lamports >= minFeePayerLamports
              ? { name: `fee payer ${payer} ${network}`, ok: true, detail: `${lamports} lamports`, signer }
              : { name: `fee payer ${payer} ${network}`, ok: false, detail: `${lamports} lamports, below ${minFeePayerLamports}`, signer }
          })
          return [rpcCheck, ...payerChecks]
        } catch (error) {
          return [{ name: `rpc ${network}`, ok: false, detail: error instanceof FacilitatorError ? error.code : 'the RPC did not answer' }]
        }
      }),
    )
    return checks.flat()
  }

  const adapter: SchemeAdapter<ExactSvmPayload, SignedPayment, FeePayerReservation> = {
    scheme: 'exact',
    family: 'solana',
    readiness,
    networks: [...runtimes.values()].map((runtime) => runtime.info),
    versions: config.versions ?? [1, 2],
    signers: () => [...feePayerSet],
    parse,
    reserveSettlement,
    verify,
    settle,
    resume,
  }
  return withRedactedErrors(adapter, secrets)
}

/** The RPC URLs of a network entry, from `rpcUrls` or the `rpcUrl` shorthand. */
function rpcUrlsOf(entry: ExactSvmNetworkConfig): readonly string[] {
  return entry.rpcUrls ?? (entry.rpcUrl ? [entry.rpcUrl] : [])
}

/** Signs as fee payer and writes the signature into the fee payer's slot (the first) of a copy of the wire bytes. */
async function signAsFeePayer(sign: FeePayerSigning, payment: CheckedPayment, wire: WireTransaction): Promise<SignedPayment> {
  const unsigned = {
    ...payment.transaction,
    lifetimeConstraint: { blockhash: payment.blockhash, lastValidBlockHeight: 0n },
  }
  const signature = (await sign(unsigned))[payment.feePayer]
  if (!signature || signature.length !== 64) throw new FacilitatorError('internal_error', 'the fee payer signer returned no signature of the fee payer')
  const slot = wire.signatureOffsets[0]!
  const bytes = Buffer.from(wire.bytes)
  bytes.set(signature, slot)
  const signed = bytes.toString('base64')
  bytes.fill(0, slot, slot + signature.length)
  return { payment, wire: signed, payerSignedWire: bytes.toString('base64'), signature: encodeBase58(signature), fee: transactionFee(wire) }
}

/** Byte layout of an SPL token account (Token-2022 shares it and appends extensions). */
const TOKEN_ACCOUNT_SIZE = 165
const TOKEN_ACCOUNT_AMOUNT_OFFSET = 64

function decodeTokenAccount(
  account: z.infer<typeof encodedAccountSchema> | null | undefined,
  payment: CheckedPayment,
): { amount: bigint } | undefined {
  if (!account || account.owner !== payment.tokenProgram) return undefined
  // Only the mint and the amount matter: read them in place rather than decoding (and base58-encoding) every field.
  const data = Buffer.from(account.data[0], 'base64')
  if (data.length < TOKEN_ACCOUNT_SIZE) return undefined
  const mint = encodeBase58(data.subarray(0, 32))
  return mint === payment.mint ? { amount: data.readBigUInt64LE(TOKEN_ACCOUNT_AMOUNT_OFFSET) } : undefined
}

/**
 * The source's token balance after the simulated transfer, from the simulation's `accounts`
 * (`undefined` when the node left them out or answered an odd shape).
 */
function sourceBalanceOf(accounts: unknown, payment: CheckedPayment): bigint | undefined {
  const parsed = simulatedAccountsSchema.safeParse(accounts)
  return parsed.success ? decodeTokenAccount(parsed.data[0], payment)?.amount : undefined
}

/**
 * Why a node's answer to sendTransaction proves the bytes can never land: a signature that does not
 * verify (-32003) or a transaction that does not sanitize. `undefined` for anything else (accepted,
 * or a refusal that proves nothing: another node may have the bytes).
 */
function finalRefusalOf(outcome: RpcOutcome | undefined): string | undefined {
  if (!outcome || outcome.ok) return undefined
  const { code, message } = outcome.error
  if (code === -32003 || /signature verification fail|SignatureFailure|sanitiz/i.test(message)) {
    return `the node refused the transaction for good: ${message.slice(0, 200)}`
  }
  return undefined
}

function parseResult<T extends z.ZodType>(schema: T, outcome: RpcOutcome | undefined, method: string): z.infer<T> {
  const parsed = schema.safeParse(resultOf(outcome, method))
  if (!parsed.success) throw new FacilitatorError('rpc_error', `the Solana RPC answered ${method} in an unknown shape`)
  return parsed.data
}

/** A short text of a Solana TransactionError (`"BlockhashNotFound"`, `{"InstructionError":[2,{"Custom":1}]}`). */
function describeTransactionError(err: unknown): string {
  if (typeof err === 'string') return err
  try {
    return JSON.stringify(err, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)).slice(0, 300)
  } catch {
    return 'unknown error'
  }
}

function invalid(reason: string, message: string, payer?: string): VerifyResponse {
  return { isValid: false, invalidReason: reason, invalidMessage: message, ...(payer ? { payer } : {}) }
}

