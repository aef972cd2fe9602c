import * as z from 'zod'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { resultOf, type RpcCall, type SvmRpcTransport } from './solana-rpc.js'

const signatureStatusSchema = z.looseObject({
  confirmationStatus: z.enum(['processed', 'confirmed', 'finalized']).nullish(),
  err: z.unknown().nullish(),
})
/** A `getSignatureStatuses` result; verify's replay check reads the same shape. */
export const signatureStatusesSchema = z.looseObject({ value: z.array(signatureStatusSchema.nullable()) })
const blockhashValidSchema = z.looseObject({ value: z.boolean() })

/** A signature's status as `getSignatureStatuses` answers it. */
export type SignatureStatus = z.infer<typeof signatureStatusSchema>

/** What one polling round learnt about a signature. */
export interface SignatureRound {
  /** The status, or `null` when the chain has not seen the transaction. */
  readonly status: SignatureStatus | null
  /** Whether the transaction's blockhash is still valid; `undefined` when the node answered in an unknown shape. */
  readonly blockhashValid: boolean | undefined
}

/** Batches the signature-status polls of every settlement in flight on one network. */
export interface SignaturePoller {
  /**
   * Resolves with the first round, at least `delayMs` from now, that asks the
   * chain about `signature`; `undefined` when `signal` aborts first. Rejects
   * with the round's fault when the RPC fails.
   */
  check(signature: string, blockhash: string, delayMs: number, signal: AbortSignal): Promise<SignatureRound | undefined>
}

/** The most signatures `getSignatureStatuses` takes in one call. */
const MAX_SIGNATURES_PER_CALL = 256

interface Waiter {
  readonly signature: string
  readonly blockhash: string
  readonly dueAt: number
  settle(outcome: { round: SignatureRound } | { error: unknown } | undefined): void
}

/**
 * One poller per network: every settlement waiting for confirmation joins the
 * next round, and a round is one JSON-RPC batch (`getSignatureStatuses` for all
 * of them plus `isBlockhashValid` per distinct blockhash), so a hundred
 * settlements in flight cost one request per interval instead of a hundred.
 * At most one round is in flight; rounds stop when nobody waits.
 *
 * @example
 * const poller = createSignaturePoller({ rpc, intervalMs: 400 })
 * const round = await poller.check(signature, blockhash, 0, AbortSignal.timeout(30_000))
 */
export function createSignaturePoller(options: { rpc: SvmRpcTransport; intervalMs: number }): SignaturePoller {
  const { rpc, intervalMs } = options
  const waiting = new Set<Waiter>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let immediate: ReturnType<typeof setImmediate> | undefined
  let inFlight = false

  function schedule(): void {
    if (inFlight || waiting.size === 0) return
    let next = Number.POSITIVE_INFINITY
    for (const waiter of waiting) next = Math.min(next, waiter.dueAt)
    const delay = next - performance.now()
    if (timer) clearTimeout(timer)
    timer = undefined
    if (delay <= 0) {
      // A check due now (a fresh broadcast) waits one turn of the event loop, so the checks of the same burst share the round.
      immediate ??= setImmediate(run)
      return
    }
    timer = setTimeout(run, delay)
  }

  function run(): void {
    timer = undefined
    immediate = undefined
    if (inFlight) return
    // Waiters due within half an interval join now: they converge on shared rounds.
    const horizon = performance.now() + intervalMs / 2
    const round = [...waiting].filter((waiter) => waiter.dueAt <= horizon)
    if (round.length === 0) return schedule()
    for (const waiter of round) waiting.delete(waiter)
    inFlight = true
    void poll(round).finally(() => {
      inFlight = false
      schedule()
    })
  }

  async function poll(round: readonly Waiter[]): Promise<void> {
    const signatures = [...new Set(round.map((waiter) => waiter.signature))]
    const blockhashes = [...new Set(round.map((waiter) => waiter.blockhash))]
    const calls: RpcCall[] = []
    for (let start = 0; start < signatures.length; start += MAX_SIGNATURES_PER_CALL) {
      calls.push({ method: 'getSignatureStatuses', params: [signatures.slice(start, start + MAX_SIGNATURES_PER_CALL), { searchTransactionHistory: true }] })
    }
    const statusCalls = calls.length
    for (const blockhash of blockhashes) calls.push({ method: 'isBlockhashValid', params: [blockhash, { commitment: 'processed' }] })
    try {
      // No caller's signal: the round serves many callers, each of which stops waiting on its own signal.
      const outcomes = await rpc.request(calls)
      const statuses = new Map<string, SignatureStatus | null>()
      for (let call = 0; call < statusCalls; call++) {
        const parsed = signatureStatusesSchema.safeParse(resultOf(outcomes[call], 'getSignatureStatuses'))
        if (!parsed.success) throw new FacilitatorError('rpc_error', 'the Solana RPC answered getSignatureStatuses in an unknown shape')
        const asked = signatures.slice(call * MAX_SIGNATURES_PER_CALL, (call + 1) * MAX_SIGNATURES_PER_CALL)
        asked.forEach((signature, index) => statuses.set(signature, parsed.data.value[index] ?? null))
      }
      const validity = new Map<string, boolean | undefined>()
      blockhashes.forEach((blockhash, index) => {
        const outcome = outcomes[statusCalls + index]
        const parsed = outcome?.ok ? blockhashValidSchema.safeParse(outcome.result) : undefined
        validity.set(blockhash, parsed?.success ? parsed.data.value : undefined)
      })
      for (const waiter of round) {
        waiter.settle({ round: { status: statuses.get(waiter.signature) ?? null, blockhashValid: validity.get(waiter.blockhash) } })
      }
    } catch (error) {
      for (const waiter of round) waiter.settle({ error })
    }
  }

  return {
    check(signature, blockhash, delayMs, signal) {
      return new Promise<SignatureRound | undefined>((resolve, reject) => {
        if (signal.aborted) return resolve(undefined)
        let done = false
        const waiter: Waiter = {
          signature,
          blockhash,
          dueAt: performance.now() + delayMs,
          settle(outcome) {
            if (done) return
            done = true
            signal.removeEventListener('abort', onAbort)
            waiting.delete(waiter)
            if (outcome === undefined) resolve(undefined)
            else if ('round' in outcome) resolve(outcome.round)
            else reject(outcome.error)
          },
        }
        const onAbort = () => waiter.settle(undefined)
        signal.addEventListener('abort', onAbort, { once: true })
        waiting.add(waiter)
        schedule()
      })
    },
  }
}
