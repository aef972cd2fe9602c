import { FacilitatorError, toFacilitatorError } from '../errors/facilitator-error.js'
import { REJECTION } from '../errors/reasons.js'
import type { PaymentRequest, SettleResponse, SupportedResponse, VerifyResponse } from '../schemas/messages.js'
import { settleFailure } from '../core/settle-answers.js'
import { journaledTransactions } from '../settlement/sender-slots.js'
import { settleOnce } from '../settlement/settle-once.js'
import { settledWithoutTransaction } from '../settlement/settlement-record.js'
import type { SettlementOptions } from '../settlement/settlement-options.js'
import { createMemoryStore, type MemoryStore } from '../stores/memory-store.js'
import { requireStoreRole } from '../stores/store-roles.js'
import type { SettlementStore } from '../stores/store.js'
import type { AdapterStore, PaymentContext, ReadinessCheck, SchemeAdapter } from '../core/adapter.js'
import { boundedStoreCall } from '../settlement/bounded-store-call.js'
import { dispatch } from '../core/context.js'
import { timeBudget, withDeadline } from '../core/deadline.js'
import type { FacilitatorHooks, SettleOrigin } from '../core/hooks.js'
import { createRegistry, type Registry } from '../core/registry.js'
import { traced } from '../core/tracing.js'
import { loggingHooks, type Logger } from './logging-hooks.js'
import { startReconciler } from './reconciler.js'
import { readiness } from './readiness.js'
import { callerRefusal, type SettleCaller } from './settle-caller.js'
import { labelSpan, parseOrRefuse } from './read-request.js'
import { firstRejection, notify } from './run-hooks.js'

/** Time budgets of one call. */
export interface Timeouts {
  /** Budget of one verify, RPC included. @default 10_000 */
  verifyMs?: number
  /** Budget of one settle, confirmation included; past it a sent payment answers `settlement_pending`. @default 60_000 */
  settleMs?: number
}

/** Options shared by the standalone `verify()` and `settle()`. */
export interface PaymentOptions {
  hooks?: readonly FacilitatorHooks[]
  timeouts?: Timeouts
  /** Receives errors of after-hooks, which never change an answer. */
  onError?: (error: unknown, where: string) => void
  /** Tracks after-hook promises so callers can await them (`drain()`). */
  pending?: Set<Promise<unknown>>
  /**
   * The settle store, when verify runs beside settle: an `upto` authorization settled for a usage
   * of zero left nothing on chain, and only the store knows it is spent.
   */
  store?: SettlementStore
}

export interface SettleOptions extends PaymentOptions {
  /** Where claims and outcomes live; share one store between instances to settle each payment once. */
  store: SettlementStore
  settlement?: SettlementOptions
  /** Who asks (see `SettleCaller`). @default trusted: a call in the same process */
  caller?: SettleCaller
}

const DEFAULT_VERIFY_MS = 10_000
const DEFAULT_SETTLE_MS = 60_000
/** Bound of verify's one store read (Permit2, upto): a slow store skips the check rather than the answer. */
const STORE_CHECK_MS = 1_000

/**
 * The payment kinds and signers a registry serves.
 *
 * @example
 * // partial
 * const { kinds, signers } = supported(createRegistry([exactEvm(config)]))
 */
export function supported(registry: Registry, extensions: readonly string[] = []): SupportedResponse {
  return registry.supported(extensions)
}

/**
 * Checks a payment against its requirements. `body` is the untrusted
 * `{x402Version, paymentPayload, paymentRequirements}` object.
 *
 * A payment that fails a check resolves `{ isValid: false, invalidReason }`;
 * a malformed body throws `FacilitatorError('invalid_request')` naming the
 * field; an unreachable chain throws a `rpc_*` or `timeout` FacilitatorError.
 */
export function verify(registry: Registry, body: unknown, options: PaymentOptions = {}): Promise<VerifyResponse> {
  return traced('x402.verify', {}, async (span) => {
    const result = await verifyUntraced(registry, body, options)
    span.setAttribute('x402.outcome', result.isValid ? 'valid' : (result.invalidReason ?? 'invalid'))
    return result
  })
}

async function verifyUntraced(registry: Registry, body: unknown, options: PaymentOptions): Promise<VerifyResponse> {
  const request = parseOrRefuse(body, 'verify', options)
  if ('request' in request) labelSpan(request.request)
  const started = performance.now()
  // Ended with the call (see timeBudget): nothing of a verify runs on after its answer.
  const budget = timeBudget(options.timeouts?.verifyMs ?? DEFAULT_VERIFY_MS)
  const signal = budget.signal
  let context: PaymentContext | undefined
  let result: VerifyResponse
  try {
    if ('rejection' in request) {
      result = invalid(request.rejection.reason, request.rejection.message)
    } else {
      const routed = dispatch(registry, request.request, signal)
      if ('rejection' in routed) {
        result = invalid(routed.rejection.reason, routed.rejection.message)
      } else {
        context = routed.context
        result = await runVerify(routed.match.adapter, context, options)
      }
    }
  } catch (error) {
    const fault = asFault(error, signal)
    if ('request' in request) notify(options, 'afterVerify', { operation: 'verify', request: request.request, context, result: invalid(fault.code, fault.message), durationMs: performance.now() - started, fault: { code: fault.code, message: fault.message, status: fault.status } })
    throw fault
  } finally {
    budget.end()
  }
  if ('request' in request) notify(options, 'afterVerify', { operation: 'verify', request: request.request, context, result, durationMs: performance.now() - started })
  return result
}

/**
 * Verifies and settles a payment at most once. A repeated settle of a settled
 * payment answers the recorded transaction; a transaction sent but not yet
 * confirmed within the budget answers `success:false` with
 * `errorReason: 'settlement_pending'` and keeps its id in `transaction`.
 */
export function settle(registry: Registry, body: unknown, options: SettleOptions): Promise<SettleResponse> {
  return traced('x402.settle', {}, async (span) => {
    const result = await settleUntraced(registry, body, options, false)
    span.setAttribute('x402.outcome', result.success ? 'success' : (result.errorReason ?? 'failed'))
    return result
  })
}

/**
 * `settle` of a request the before-settle hooks already admitted once: the reconciler finishing a
 * journaled settlement whose caller is gone (a rate limit must not stop a payment already sent).
 */
function settleAdmitted(registry: Registry, body: unknown, options: SettleOptions): Promise<SettleResponse> {
  return traced('x402.settle.reconcile', {}, () => settleUntraced(registry, body, options, true))
}

async function settleUntraced(registry: Registry, body: unknown, options: SettleOptions, admitted: boolean): Promise<SettleResponse> {
  const request = parseOrRefuse(body, 'settle', options)
  if ('request' in request) labelSpan(request.request)
  const started = performance.now()
  const budgetMs = options.timeouts?.settleMs ?? DEFAULT_SETTLE_MS
  // Ended with the call: an adapter's work the call stopped waiting for saw the signal abort already (withDeadline).
  const budget = timeBudget(budgetMs)
  const signal = budget.signal
  let context: PaymentContext | undefined
  let routedAdapter: SchemeAdapter | undefined
  let result: SettleResponse
  // Requests that never reach settleOnce are refused before anything is sent.
  const trace: { origin?: SettleOrigin } = { origin: 'refused' }
  const networkOf = (r: PaymentRequest) => r.paymentRequirements.network
  try {
    if ('rejection' in request) {
      result = { success: false, errorReason: request.rejection.reason, errorMessage: request.rejection.message, transaction: '', network: request.network }
    } else {
      const routed = dispatch(registry, request.request, signal, 'settle')
      if ('rejection' in routed) {
        const { reason, message } = routed.rejection
        result = { success: false, errorReason: reason, errorMessage: message, transaction: '', network: networkOf(request.request) }
        // A request an adapter serves but the core refused (accepted ≠ requirements) is still that adapter's answer.
        const { paymentPayload, paymentRequirements } = request.request
        routedAdapter = registry.find(paymentPayload.x402Version, paymentRequirements.scheme, paymentRequirements.network)?.adapter
      } else {
        const ctx = routed.context
        context = ctx
        const adapter = routed.match.adapter
        routedAdapter = adapter
        const rejection = admitted ? undefined : await firstRejection(options.hooks, 'beforeSettle', ctx)
        const parsed = rejection ? undefined : adapter.parse(ctx)
        // Held here, on the payload parsed once, for every scheme and every route that names its caller.
        const refusedCaller = parsed && 'payload' in parsed ? callerRefusal(adapter, ctx, parsed.payload, options.caller) : undefined
        if (rejection) {
          result = { success: false, errorReason: rejection.reason ?? REJECTION.rejectedByPolicy, errorMessage: rejection.message, transaction: '', network: ctx.wireNetwork }
        } else if (parsed && 'refusal' in parsed) {
          // No identity means the payload is malformed: parse's refusal says why.
          const { invalidReason, invalidMessage, payer } = parsed.refusal
          result = settleFailure(ctx, invalidReason ?? REJECTION.invalidPayload, invalidMessage, payer)
        } else if (refusedCaller) {
          result = refusedCaller
        } else {
          result = await settleOnce({ adapter, context: ctx, payload: parsed!.payload, key: parsed!.key, store: options.store, budgetMs, options: options.settlement ?? {}, trace })
        }
      }
    }
  } catch (error) {
    const fault = asFault(error, signal)
    if ('request' in request) notify(options, 'afterSettle', { operation: 'settle', request: request.request, context, result: { success: false, errorReason: fault.code, transaction: '', network: networkOf(request.request) }, durationMs: performance.now() - started, fault: { code: fault.code, message: fault.message, status: fault.status } })
    throw fault
  } finally {
    budget.end()
  }
  // The answer of a settle that sets its charge (upto) always says what was charged, also when the core answered it: nothing when
  // refused, the usage when it landed or may still land (pending).
  if (routedAdapter?.settleSetsAmount && result.amount === undefined) {
    const charged = result.success || result.errorReason === REJECTION.settlementPending
    result = { ...result, amount: context && charged ? String(context.amount) : '0' }
  }
  if ('request' in request) notify(options, 'afterSettle', { operation: 'settle', request: request.request, context, result, durationMs: performance.now() - started, origin: trace.origin })
  return result
}

/** Configuration of `createFacilitator`. */
export interface FacilitatorConfig<S extends SettlementStore = SettlementStore> {
  /** Scheme adapters, e.g. `[exactEvm({...}), exactSvm({...})]`. */
  schemes: readonly SchemeAdapter[]
  /**
   * Where settlements are remembered: claims, records, payer failures and holds. A settlement-only
   * store will do; statistics and the catalog take their own (`StatsStore`). @default createMemoryStore()
   */
  store?: S
  hooks?: readonly FacilitatorHooks[]
  timeouts?: Timeouts
  settlement?: SettlementOptions
  /**
   * Extension names listed in supported(), besides those the adapters honour (`eip2612GasSponsoring`
   * with the EVM adapters) and those the hooks serve (`bazaar` with the catalog's). @default []
   */
  extensions?: readonly string[]
  /** Receives errors of after-hooks. @default ignore */
  onError?: (error: unknown, where: string) => void
  /**
   * A pino-compatible logger (`info`/`warn`/`error(fields, message)`). Faults, pending and
   * failed settlements and refused payers are logged once each, with structured fields and
   * no secret; errors of after-hooks too. @default silent
   */
  logger?: Logger
}

/** A facilitator: supported, verify and settle bound to one configuration. */
export interface Facilitator<S extends SettlementStore = SettlementStore> {
  readonly registry: Registry
  /** The store given in the configuration (or the memory store made in its place). */
  readonly store: S
  supported(): Promise<SupportedResponse>
  verify(body: unknown): Promise<VerifyResponse>
  /**
   * Settles a payment at most once. `caller` names who asks when it is not this process (the HTTP
   * handler names an unauthenticated caller): payments only an authenticated caller may settle are
   * then refused with `settle_requires_authentication`. @default a trusted, in-process caller
   */
  settle(body: unknown, caller?: SettleCaller): Promise<SettleResponse>
  /** Resolves when every after-hook started so far has finished (for tests and shutdown). */
  drain(): Promise<void>
  /**
   * Whether the facilitator can serve payments now: the store answers a write and a
   * read, and each adapter's own checks pass (RPC and chain id, contracts, signer gas
   * money). Bounded by `timeoutMs` (default 5 s); a check past it is not ready.
   */
  readiness(timeoutMs?: number): Promise<{ ready: boolean; checks: ReadinessCheck[] }>
  /**
   * Shuts down: waits for the after-hooks, then releases the adapters' RPC
   * connections and timers and closes the store. Verifies and settles asked after it
   * are refused with 503 `server_busy`. Settles still in flight are not waited for: stop taking requests and
   * let them finish (or answer pending) first.
   */
  close(): Promise<void>
}

/**
 * Creates a facilitator over the given scheme adapters. Nothing is shared
 * between two facilitators unless you pass them the same store.
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { exactEvm, privateKeySigner } from 'x402-facilitator/evm'
 *
 * const facilitator = createFacilitator({
 *   schemes: [exactEvm({
 *     networks: [{ network: 'eip155:8453', rpcUrls: ['https://mainnet.base.org'] }],
 *     signers: [privateKeySigner(process.env.FACILITATOR_KEY as `0x${string}`)],
 *   })],
 * })
 * // The body is the {x402Version, paymentPayload, paymentRequirements} a resource server sends.
 * export async function POST(request: Request): Promise<Response> {
 *   return Response.json(await facilitator.verify(await request.json()))
 * }
 */
export function createFacilitator<S extends SettlementStore = MemoryStore>(config: FacilitatorConfig<S>): Facilitator<S> {
  if (config.store !== undefined) requireStoreRole(config.store, 'settlement', 'createFacilitator')
  const registry = createRegistry(config.schemes)
  // Without a store, S is its default (MemoryStore), which is what is made.
  const store = config.store ?? (createMemoryStore() as unknown as S)
  const pending = new Set<Promise<unknown>>()
  // Adapters that number their transactions find the ones a dead process journaled before reusing a number.
  const journalBoundMs = config.settlement?.storeTimeoutMs ?? 5_000
  const adapterStore: AdapterStore = {
    get: (key) => boundedStoreCall(() => store.get(key), journalBoundMs, 'reading an adapter cache entry'),
    set: (key, value, options) => boundedStoreCall(() => store.set(key, value, options?.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }), journalBoundMs, 'writing an adapter cache entry'),
    delete: (key) => boundedStoreCall(() => store.delete(key), journalBoundMs, 'deleting an adapter cache entry'),
  }
  for (const adapter of config.schemes) adapter.attach?.({ journaled: (sender, fromSequence) => journaledTransactions(store, sender, fromSequence, journalBoundMs), store: adapterStore })
  const logger = config.logger
  const hooks = logger ? [...(config.hooks ?? []), loggingHooks(logger)] : config.hooks
  const onError = logger
    ? (error: unknown, where: string) => {
        logger.error({ event: 'hook_failed', hook: where, error: error instanceof Error ? error.message : String(error) }, 'an after-hook failed')
        config.onError?.(error, where)
      }
    : config.onError
  const base = { hooks, timeouts: config.timeouts, onError, pending }
  let closed = false
  const reconciler =
    config.settlement?.reconcile === false
      ? undefined
      : startReconciler({
          store,
          settle: (body) => settleAdmitted(registry, body, { ...base, store, settlement: config.settlement }),
          options: config.settlement?.reconcile,
          boundMs: journalBoundMs,
          onError: (error) => onError?.(error, 'reconcile'),
        })
  const shuttingDown = () => Promise.reject(new FacilitatorError('server_busy', 'the facilitator is shutting down'))
  return {
    registry,
    store,
    supported: async () => supported(registry, [...(config.extensions ?? []), ...(config.hooks ?? []).flatMap((hook) => hook.extensions ?? [])]),
    verify: (body) => (closed ? shuttingDown() : verify(registry, body, { ...base, store })),
    settle: (body, caller) => (closed ? shuttingDown() : settle(registry, body, { ...base, store, settlement: config.settlement, caller })),
    async drain() {
      while (pending.size > 0) await Promise.allSettled([...pending])
    },
    readiness: (timeoutMs = 5_000) => readiness(store, config.schemes, timeoutMs, () => closed),
    async close() {
      closed = true
      await reconciler?.stop()
      while (pending.size > 0) await Promise.allSettled([...pending])
      await Promise.allSettled(config.schemes.map((adapter) => adapter.close?.()))
      await store.close?.()
    },
  }
}

async function runVerify(adapter: SchemeAdapter, context: PaymentContext, options: PaymentOptions): Promise<VerifyResponse> {
  const rejection = await firstRejection(options.hooks, 'beforeVerify', context)
  if (rejection) return invalid(rejection.reason ?? REJECTION.rejectedByPolicy, rejection.message)
  const parsed = adapter.parse(context)
  if ('refusal' in parsed) return parsed.refusal
  const { response } = await withDeadline(adapter.verify(context, parsed.payload), context.signal)
  if (response.isValid && options.store && adapter.spendableWithoutTransaction?.(context, parsed.payload) && (await settledWithoutTransaction(parsed.key, options.store, STORE_CHECK_MS))) {
    return { ...invalid(REJECTION.duplicateSettlement, 'this authorization was already settled, for a usage of zero: it cannot pay again'), ...(response.payer ? { payer: response.payer } : {}) }
  }
  return response
}



function invalid(invalidReason: string, invalidMessage: string): VerifyResponse {
  return { isValid: false, invalidReason, invalidMessage }
}

function asFault(error: unknown, signal: AbortSignal): FacilitatorError {
  if (signal.aborted && !(error instanceof FacilitatorError)) {
    return new FacilitatorError('timeout', 'the operation did not finish within its time budget', { cause: error })
  }
  return toFacilitatorError(error)
}
