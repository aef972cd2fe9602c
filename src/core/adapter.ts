import type { SettleResponse, VerifyResponse } from '../schemas/messages.js'
import type { PaymentPayload } from '../schemas/payload.js'
import type { PaymentRequirements, ResourceInfo } from '../schemas/requirements.js'
import type { Caip2Network, NetworkFamily } from '../networks/networks.js'

/** One network an adapter serves. */
export interface AdapterNetwork {
  /** The CAIP-2 id, e.g. `eip155:8453`. */
  readonly caip2: Caip2Network
  /** The x402 v1 name, when v1 clients may use this network. */
  readonly v1Name?: string
  /** Scheme-specific data listed in supported() (Solana: `{ feePayer }`). */
  readonly extra?: Record<string, unknown>
}

/**
 * Everything an adapter needs to judge one payment, already checked by the
 * core: the version, scheme and network are served by this adapter, and the
 * payload's scheme/network (v1) or `accepted` (v2) match the requirements.
 */
export interface PaymentContext {
  readonly x402Version: 1 | 2
  readonly scheme: string
  /** The CAIP-2 id of the network. */
  readonly network: Caip2Network
  /** The network as the request wrote it (v1 name or CAIP-2 id), echoed in settle answers. */
  readonly wireNetwork: string
  /** The required amount in the smallest unit (v1 `maxAmountRequired`, v2 `amount`). */
  readonly amount: bigint
  readonly asset: string
  readonly payTo: string
  /** The requirements as received (unknown fields kept). */
  readonly requirements: PaymentRequirements
  /** The whole payment payload; `payload.payload` is the scheme-specific part to validate. */
  readonly payload: PaymentPayload
  /** The paid resource (v2 `paymentPayload.resource`, v1 `requirements.resource`). */
  readonly resource: ResourceInfo | undefined
  /** Aborts when the request's time budget is spent. */
  readonly signal: AbortSignal
  /** Durations an adapter wants statistics to see, e.g. `{ confirmationMs }`. */
  readonly timings: Record<string, number>
  /**
   * What the transactions this call sent (or finished) for the payment cost the facilitator, in the
   * chain's native smallest unit (wei, lamports). The adapter adds each transaction's fee once the
   * chain shows its outcome (landed or failed): EVM gas used × effective gas price (plus the L1 data
   * fee an OP-stack receipt states), Solana the signature and priority fees. `undefined` while no sent
   * transaction's outcome is known: nothing was sent, or it is still pending. The ledger and the
   * metrics read it in their after-settle hooks.
   */
  cost?: bigint
}

/** What settle must record before a transaction leaves the process. */
export interface BroadcastRecord {
  /** The transaction id (EVM hash, Solana signature). */
  readonly transaction: string
  /** The signed transaction, so a retry after a crash can re-send the same bytes. */
  readonly raw?: string
  /**
   * The sender's sequence number the transaction takes (EVM: `<chainId>:<signer>` and its nonce).
   * The facilitator indexes journaled transactions by it, so that after a restart the adapter finds
   * and re-sends them before it hands that number to another transaction (see `attach`).
   */
  readonly slot?: SenderSlot
}

/** A sender's sequence number: the account that sends and the number its transaction takes. */
export interface SenderSlot {
  readonly sender: string
  readonly sequence: number
}

/** What the facilitator gives an adapter when it is created with it (`attach`). */
export interface AdapterServices {
  /**
   * The transactions journaled for `sender` from `fromSequence` on, in sequence order without gaps,
   * whose outcome the store does not know yet (a process that died after the journal write). An
   * adapter that numbers its transactions asks this before it hands out numbers after a restart,
   * and re-sends what it finds, so those numbers are never given to other transactions.
   */
  journaled(sender: string, fromSequence: number): Promise<readonly (BroadcastRecord & { readonly slot: SenderSlot })[]>
  /**
   * The facilitator's settlement store, for what an adapter shares with the other instances on that
   * store (a cache of chain reads), under keys of the adapter's own prefix. Each call is bounded by
   * the settlement store timeout and throws `store_unavailable` when it fails. Optional: a facilitator
   * built before this field existed, or a test double, may leave it out.
   */
  readonly store?: AdapterStore
}

/** The part of the settlement store an adapter may use (see `AdapterServices.store`). */
export interface AdapterStore {
  get(key: string): Promise<string | undefined>
  set(key: string, value: string, options?: { readonly ttlMs?: number }): Promise<boolean>
  delete(key: string): Promise<void>
}

/**
 * Given to an adapter's settle. `broadcasting` must be awaited before the
 * transaction is sent: once it returns, a crash or a timeout can no longer
 * lose the transaction id, and a retried settle resumes instead of resending.
 */
export interface SettleJournal {
  broadcasting(record: BroadcastRecord): Promise<void>
}

/**
 * What a verified payment takes from its payer's balance, as the chain reported it
 * to that verify. The core holds `amount` against `balance` (shared through the
 * store) before a settlement is sent, so that payments racing from one payer never
 * spend more than it holds: the chain would refuse the rest at the facilitator's cost.
 */
export interface PayerSpend {
  /** The balance spent from, as a stable id (EVM `<chainId>:<token>:<payer>`, Solana `<network>:<source token account>`). */
  readonly account: string
  /** What the settlement takes from it, in the token's smallest unit. */
  readonly amount: bigint
  /**
   * The balance the chain reported to the verify of this context, or a floor of it the verify proved
   * (the amount, moved by its simulation, when nothing else of the balance was in flight): a hold
   * against a floor is refused as soon as anything else is held, and the retry reads the balance.
   */
  readonly balance: bigint
  /**
   * When that balance was read (ms since the epoch), when it is older than this context's verify
   * (an adapter may reuse a read of the same account from a moment before): settlements that
   * landed since then count against it. @default the start of this context's verify
   */
  readonly since?: number
  /**
   * `balance` is that floor, no balance was read: a hold refused for what else is held on the
   * account is verified again at once, reading the balance, before the waits of a refused read.
   */
  readonly floor?: boolean
}

/** One line of a readiness report. */
export interface ReadinessCheck {
  /** What was checked, e.g. `rpc eip155:8453`, `signer 0xabc… eip155:8453`, `store`. */
  readonly name: string
  readonly ok: boolean
  /** What was seen, or why it failed (never a secret or an RPC URL). */
  readonly detail?: string
  /** For a signer's gas money: the balance read and the threshold, in the chain's smallest unit (decimal strings). */
  readonly signer?: { readonly network: string; readonly address: string; readonly balance: string; readonly minimum: string }
}

/** A settlement slot held on a signer; `release` frees it (idempotent). */
export interface SettleReservation {
  release(): void
}

/**
 * A payload read once for one request: the scheme-specific part in the adapter's own type, and its
 * replay domain. The core hands `payload` to every later step of the same request, so an adapter
 * never parses twice nor keeps anything per request.
 */
export type Parsed<P> =
  | {
      /** The scheme payload, as the adapter's later steps take it. */
      readonly payload: P
      /**
       * The payment's identity for at-most-once settlement: its on-chain replay domain, the same
       * for every scheme and protocol version that spends it (EVM: chain, token, payer and
       * EIP-3009 nonce; chain, owner and Permit2 nonce), unique across networks (start it with the
       * chain). Two payments with one key are one claim: the second is refused before anything is sent.
       */
      readonly key: string
    }
  /** The payload is too malformed to have an identity: this is verify's answer (`isValid: false`). */
  | { readonly refusal: VerifyResponse }

/**
 * What `verify` answers: the response, and for a payment that verified valid what `settle` takes
 * back (the payment as checked: its calldata or signed transaction, its estimate, its signer).
 */
export type Verdict<V> =
  | { readonly response: VerifyResponse; readonly payment?: undefined; readonly spend?: undefined }
  | {
      readonly response: VerifyResponse & { readonly isValid: true }
      readonly payment: V
      /** What settling `payment` takes from its payer's balance, as this verify read it; the core holds it. */
      readonly spend?: PayerSpend
    }

/**
 * A scheme on a set of networks: the plug-in unit of the facilitator. Built by
 * factories such as `exactEvm()` and passed in configuration.
 *
 * One request runs `parse` → (`reserveSettlement`) → `verify` → `settle`, each step handed what
 * the step before it returned: `P` the parsed payload, `V` the verified payment, `R` the signer
 * reservation. A settle is always preceded by a verify in the same call (the core verifies again
 * right before it claims, also after a restart or on another instance), so `settle` never sees a
 * payment it did not check itself.
 */
export interface SchemeAdapter<P = unknown, V = unknown, R extends SettleReservation = SettleReservation> {
  /** The scheme served, e.g. `exact`. */
  readonly scheme: string
  /** The network family; signers are listed under `<family>:*`. */
  readonly family: NetworkFamily
  readonly networks: readonly AdapterNetwork[]
  /** Protocol versions served. @default [1, 2] */
  readonly versions?: readonly (1 | 2)[]
  /** Addresses that sign or pay fees, listed in supported(). */
  signers(): readonly string[]
  /**
   * True when the settle request, not the payer's signature alone, decides what is charged
   * (`upto`: the payer signs a maximum, the settle request names the usage). Whoever may call
   * settle then sets the price, a payer included (it could settle its own payment for 0 before
   * the resource server does), so the facilitator settles such payments only for a caller that is
   * not named unauthenticated (see `SettleCaller`; the HTTP handler's `allowUnauthenticatedSettleAmount`). @default false
   */
  readonly settleSetsAmount?: boolean
  /**
   * True when settling this payload makes the facilitator sign for someone other than the payer
   * (a `batch-settlement` refund it signs as the channel's delegated receiver authorizer): only the
   * service that may ask for that signature should, so the facilitator refuses them to a caller named
   * unauthenticated (`settle_requires_authentication`), like `settleSetsAmount` schemes.
   * Synchronous and offline. Optional: false.
   */
  settleNeedsAuthentication?(ctx: PaymentContext, payload: P): boolean
  /** Names of the payload extensions this adapter honours (e.g. `eip2612GasSponsoring`), listed in supported(). Optional. */
  readonly extensions?: readonly string[]
  /** Reads `ctx.payload.payload` and names its replay domain. Synchronous and offline; never throws for a bad payload. */
  parse(ctx: PaymentContext): Parsed<P>
  /**
   * Whether a payment of this replay domain may be settled with no transaction (an `upto` usage of
   * zero), so that the chain cannot show it spent: verify then asks the store. Optional: false.
   */
  spendableWithoutTransaction?(ctx: PaymentContext, payload: P): boolean
  /**
   * Takes a settlement slot on a signer that can pay for this payment, before anything is
   * verified, claimed or sent. Throws `FacilitatorError('signer_busy')` when every such signer is
   * at its in-flight bound, so the payer can simply retry. The core hands the reservation to the
   * verify and the settle of the same call, and releases it at the end. Optional: adapters without
   * a bound omit it.
   */
  reserveSettlement?(ctx: PaymentContext, payload: P): R
  /**
   * Checks a payment; never throws for a bad payment, only for faults. `reservation` is given when
   * the verify is settle's own (the payment is about to be sent from that signer).
   */
  verify(ctx: PaymentContext, payload: P, reservation?: R): Promise<Verdict<V>>
  /** Broadcasts (after `journal.broadcasting`) and confirms the payment a verify of this call passed. */
  settle(ctx: PaymentContext, payment: V, journal: SettleJournal, reservation?: R): Promise<SettleResponse>
  /**
   * Finishes a settlement whose transaction was recorded but whose outcome is
   * unknown (a pending answer, or a process that died after broadcasting):
   * re-sends `raw` when the chain has never seen it, then waits with a bound.
   * Answers `transaction_dropped` when the transaction can never land (its
   * nonce went to another transaction): the core then verifies the payment
   * again and settles it anew.
   */
  resume(ctx: PaymentContext, payload: P, record: BroadcastRecord): Promise<SettleResponse>
  /**
   * Checks that what this adapter depends on answers as configured (the RPC with the
   * expected chain, contracts where configured, signers' gas money), one line per check,
   * for `GET /readyz`. Never throws: a failed check is `ok: false`. Optional.
   */
  readiness?(signal: AbortSignal): Promise<ReadinessCheck[]>
  /** Receives the facilitator's services when a facilitator is created with this adapter. Optional. */
  attach?(services: AdapterServices): void
  /** Releases connections and timers (`facilitator.close()` calls it). Optional. */
  close?(): Promise<void>
}
