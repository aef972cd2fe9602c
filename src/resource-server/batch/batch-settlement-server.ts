/**
 * `createBatchSettlementServer()`: the resource-server side of `batch-settlement`, which a paywall
 * uses for its `batch-settlement` offers: channel state in a store, requests on a channel
 * serialized across instances, refunds, and the claim policy running by itself.
 */
import type { LocalAccount } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { MIN_WITHDRAW_DELAY } from '../../evm/batch/constants.js'
import type { Facilitator } from '../../facilitator/facilitator.js'
import type { SupportedResponse } from '../../schemas/messages.js'
import type { KeyValueStore } from '../../stores/store.js'
import type { PaymentOffer } from '../payment-required.js'
import { serveBatchRequest, type PaywallBatchCall } from './batch-request.js'
import { batchOfferTerms, type BatchOfferTerms } from './offer-terms.js'
import type { BatchRuntime } from './batch-runtime.js'
import { createChannelStateStore, type ChannelStateStore } from './channel-state-store.js'
import { CLAIM_POLICY_LEASE_MS, runClaimPolicy, type ClaimPolicyOptions, type ClaimRound } from './claim-policy.js'

export interface BatchSettlementServerOptions {
  /** Verifies vouchers and deposits, settles deposits, claims, sweeps and refunds (usually the paywall's). */
  readonly facilitator: Pick<Facilitator, 'verify' | 'settle'>
  /**
   * Where channel state lives: a `ChannelStateStore`, or any store of the library (memory, SQLite,
   * Redis, PostgreSQL) to keep it in. Instances sharing a store share channels. @default in memory
   */
  readonly store?: ChannelStateStore | KeyValueStore
  /**
   * The server's own receiver authorizer: it signs claims and refunds, and goes into every channel.
   * Without it the channels name the facilitator's (its supported() `extra.receiverAuthorizer`).
   */
  readonly receiverAuthorizer?: Pick<LocalAccount, 'address' | 'signTypedData'>
  /** Seconds a payer's timed withdrawal waits, written into the offers (900 to 2,592,000). @default 900 */
  readonly withdrawDelay?: number
  /** How long the facilitator's last channel read stays fresh enough to check an EOA voucher locally. @default 10_000 */
  readonly freshMs?: number
  /**
   * How long a channel's lease outlives a crashed request. Longer than the slowest paid work: a
   * request whose lease lapsed during its work is answered 402 `channel_busy`, uncharged. @default 30_000
   */
  readonly leaseMs?: number
  /**
   * When to claim: every `everySeconds` (default 300), as soon as `aboveAmount` is unclaimed, and at
   * once when a channel has a withdrawal pending. `false` runs no policy (call `claim()` yourself).
   */
  readonly claimPolicy?: ClaimPolicyOptions | false
  /** Faults of the policy running by itself (a facilitator that refused a claim, an unreachable store). */
  readonly onError?: (error: unknown) => void
  /** @internal The clock (tests). */
  readonly now?: () => number
}

export interface BatchSettlementServer {
  /** @internal The paywall's entry: one request on a batch-settlement offer. */
  serve<R>(call: PaywallBatchCall<R>): Promise<R>
  /** @internal Fills in `extra.receiverAuthorizer` and `extra.withdrawDelay` of an offer, or throws `misconfigured` naming what it lacks. */
  resolveOffer(offer: PaymentOffer, kinds: SupportedResponse['kinds'] | undefined): PaymentOffer
  /** @internal Whether resolving offers needs the facilitator's supported() (no key of the server's own). */
  readonly needsSupported: boolean
  /** Claims every unclaimed voucher now and sweeps (undefined when another instance is claiming). */
  claim(): Promise<ClaimRound | undefined>
  readonly store: ChannelStateStore
  /** Starts the claim policy's timer (done at creation unless `claimPolicy` is false). */
  start(): void
  /** Stops the timer and waits for a round in progress. */
  stop(): Promise<void>
}

/**
 * The batch-settlement side of a paywall: pass it as `createPaywall({ batchSettlement })` and price
 * a route with a `batch-settlement` offer.
 *
 * @example
 * // partial
 * const batch = createBatchSettlementServer({ facilitator, store: createRedisStore({ url }), claimPolicy: { everySeconds: 120, aboveAmount: 5_000_000n } })
 * const paywall = createPaywall({ facilitator, batchSettlement: batch, offers: [{ scheme: 'batch-settlement', network: 'eip155:8453', amount: '1000', asset: usdc, payTo: shop, extra: { name: 'USD Coin', version: '2' } }] })
 */
export function createBatchSettlementServer(options: BatchSettlementServerOptions): BatchSettlementServer {
  const withdrawDelay = options.withdrawDelay ?? MIN_WITHDRAW_DELAY
  const freshMs = options.freshMs ?? 10_000
  const policy = options.claimPolicy === false ? undefined : (options.claimPolicy ?? {})
  if (policy) {
    const every = policy.everySeconds ?? 300
    const checkMs = policy.checkEveryMs ?? 5_000
    // A withdrawal started right after the facilitator's last read must still be claimed before it
    // finalizes, even when the instance that held the policy's lease crashed.
    if (every * 1000 + freshMs + checkMs + CLAIM_POLICY_LEASE_MS >= withdrawDelay * 1000) {
      throw new FacilitatorError('misconfigured', `createBatchSettlementServer: claimPolicy.everySeconds (${every}) plus freshMs, checkEveryMs and the policy's lease (${CLAIM_POLICY_LEASE_MS / 1000} s) must stay below the withdraw delay (${withdrawDelay} s), or a withdrawal could finalize before the claim`)
    }
  }
  const store = isChannelStore(options.store) ? options.store : createChannelStateStore(options.store)
  const runtime: BatchRuntime = {
    facilitator: options.facilitator,
    store,
    authorizer: options.receiverAuthorizer,
    freshMs,
    leaseMs: options.leaseMs ?? 30_000,
    instance: crypto.randomUUID().slice(0, 8),
    now: options.now ?? Date.now,
  }
  let timer: ReturnType<typeof setInterval> | undefined
  let round: Promise<unknown> | undefined
  const tick = () => {
    if (round || !policy) return
    round = runClaimPolicy(runtime, policy, false)
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        round = undefined
      })
  }
  // A paywall's offers are fixed: each one's terms are read once.
  const terms = new Map<PaymentOffer, BatchOfferTerms>()
  const termsOf = (offer: PaymentOffer) => {
    let read = terms.get(offer)
    if (!read) terms.set(offer, (read = batchOfferTerms(offer)))
    return read
  }
  const server: BatchSettlementServer = {
    serve: (call) => serveBatchRequest(runtime, { ...call, terms: termsOf(call.offer) }),
    needsSupported: options.receiverAuthorizer === undefined,
    resolveOffer(offer, kinds) {
      let authorizer: unknown = options.receiverAuthorizer?.address ?? offer.extra?.receiverAuthorizer
      if (authorizer === undefined) {
        const kind = kinds?.find((k) => k.x402Version === 2 && k.scheme === offer.scheme && k.network === offer.network)
        authorizer = kind?.extra?.receiverAuthorizer
      }
      const resolved = { ...offer, extra: { ...offer.extra, ...(authorizer === undefined ? {} : { receiverAuthorizer: authorizer }), withdrawDelay: offer.extra?.withdrawDelay ?? withdrawDelay } }
      termsOf(resolved) // throws misconfigured naming what is missing
      return resolved
    },
    claim: () => runClaimPolicy(runtime, policy ?? {}, true),
    store,
    start() {
      if (timer || !policy) return
      timer = setInterval(tick, policy.checkEveryMs ?? 5_000)
      timer.unref?.()
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = undefined
      await round
    },
  }
  server.start()
  return server
}

function isChannelStore(store: ChannelStateStore | KeyValueStore | undefined): store is ChannelStateStore {
  return store !== undefined && typeof (store as ChannelStateStore).acquire === 'function' && typeof (store as ChannelStateStore).list === 'function'
}
