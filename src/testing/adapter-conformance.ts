import type { PaymentContext, SchemeAdapter, SettleJournal, SettleReservation } from '../core/adapter.js'
import { dispatch } from '../core/context.js'
import { createRegistry } from '../core/registry.js'
import { createFacilitator, type Facilitator } from '../facilitator/facilitator.js'
import { parsePaymentRequest } from '../schemas/parse-request.js'
import { createMemoryStore } from '../stores/memory-store.js'
import type { Store } from '../stores/store.js'

/** What the conformance checks need to pay through an adapter. */
export interface ConformanceSetup<P = unknown, V = unknown, R extends SettleReservation = SettleReservation> {
  /** The adapter under test, served over a network where `payment()` can really settle. Read when each check runs (a getter may build it then). */
  readonly adapter: SchemeAdapter<P, V, R>
  /** A `{x402Version, paymentPayload, paymentRequirements}` body (or a promise of one) for a new, valid, unspent payment on each call. */
  payment(): unknown
  /** A body whose payment fails one check, and the `invalidReason` it must be refused with. Optional. */
  invalidPayment?(): { readonly body: unknown; readonly reason: string } | Promise<{ readonly body: unknown; readonly reason: string }>
  /** A fresh store for each check. @default createMemoryStore */
  store?(): Store
}

/** One contract check: `run` resolves when the adapter holds it and throws an `Error` saying what failed otherwise. */
export interface ConformanceCheck {
  readonly name: string
  run(): Promise<void>
}

/**
 * The contract every scheme adapter must hold, as checks a test runner of your choice can run:
 * parsing offline, verify's codes and verdict, at most one transaction per payment under a race,
 * a spent payment refused, the journal written before a send, and a settle resumed after a crash.
 * The built-in adapters pass the same checks (on anvil, LiteSVM and the test ledger).
 *
 * @example
 * // partial
 * import { adapterConformance } from 'x402-facilitator/testing'
 * for (const check of adapterConformance({ adapter, payment: () => signedPaymentBody() })) {
 *   it(check.name, () => check.run(), 60_000)
 * }
 */
export function adapterConformance<P, V, R extends SettleReservation>(setup: ConformanceSetup<P, V, R>): ConformanceCheck[] {
  const adapterOf = (): SchemeAdapter<P, V, R> => setup.adapter
  const newStore = () => setup.store?.() ?? createMemoryStore()
  const payment = async () => setup.payment()
  const facilitatorOver = (scheme: SchemeAdapter<P, V, R>, store: Store, leaseMs?: number): Facilitator =>
    createFacilitator({ schemes: [scheme as unknown as SchemeAdapter], store, ...(leaseMs === undefined ? {} : { settlement: { leaseMs } }) })

  const checks: ConformanceCheck[] = [
    {
      name: 'parse is offline and pure: one key per payment, a refusal with a code for a malformed payload',
      async run() {
        const adapter = adapterOf()
        const body = await payment()
        const first = adapter.parse(contextOf(adapter, body))
        const again = adapter.parse(contextOf(adapter, body))
        if (!('key' in first) || !('key' in again)) throw new Error(`a valid payment did not parse: ${JSON.stringify(first)}`)
        if (first.key !== again.key) throw new Error(`one payment parsed to two keys: ${first.key} and ${again.key}`)
        const other = adapter.parse(contextOf(adapter, await payment()))
        if ('key' in other && other.key === first.key) throw new Error(`two payments share the key ${first.key}`)
        for (const junk of [{}, { signature: '0x' }, { transaction: 'AAAA' }, { authorization: {} }]) {
          const parsed = adapter.parse(contextOf(adapter, withPayload(body, junk)))
          if (!('refusal' in parsed)) continue
          expectCode(parsed.refusal.invalidReason, `parse of payload ${JSON.stringify(junk)}`)
          if (parsed.refusal.isValid) throw new Error('a parse refusal answered isValid: true')
        }
      },
    },
    {
      name: 'a valid payment verifies valid, names its payer, and hands settle a verified value',
      async run() {
        const adapter = adapterOf()
        const body = await payment()
        const facilitator = facilitatorOver(adapter, newStore())
        const answer = await facilitator.verify(body)
        if (!answer.isValid) throw new Error(`a valid payment was refused: ${answer.invalidReason} ${answer.invalidMessage ?? ''}`)
        if (!answer.payer) throw new Error('a valid verify named no payer')
        const ctx = contextOf(adapter, body)
        const parsed = adapter.parse(ctx)
        if (!('key' in parsed)) throw new Error('a valid payment did not parse')
        const verdict = await adapter.verify(ctx, parsed.payload)
        if (!verdict.response.isValid || verdict.payment === undefined) throw new Error('a valid verdict carried no verified payment')
        if (verdict.spend && (verdict.spend.amount <= 0n || !verdict.spend.account || verdict.spend.balance < verdict.spend.amount)) {
          throw new Error(`the verdict's spend does not stand: ${verdict.spend.amount} from ${verdict.spend.balance}`)
        }
        await facilitator.close()
      },
    },
    {
      name: 'settles a payment once under a race: one transaction, every caller told it',
      async run() {
        const adapter = adapterOf()
        const body = await payment()
        const facilitator = facilitatorOver(adapter, newStore())
        const answers = await Promise.all(Array.from({ length: 5 }, () => facilitator.settle(body)))
        const failed = answers.find((answer) => !answer.success)
        if (failed) throw new Error(`a settle of a valid payment failed: ${failed.errorReason} ${failed.errorMessage ?? ''}`)
        const transactions = new Set(answers.map((answer) => answer.transaction))
        if (transactions.size !== 1 || transactions.has('')) throw new Error(`racing settles answered transactions ${JSON.stringify([...transactions])}`)
        const verifyAfter = await facilitator.verify(body)
        if (verifyAfter.isValid) throw new Error('a settled payment still verifies valid: it could buy the work again')
        expectCode(verifyAfter.invalidReason, 'verify of a spent payment')
        const retry = await facilitator.settle(body)
        if (!retry.success || retry.transaction !== answers[0]!.transaction) throw new Error(`a retry of a settled payment answered ${JSON.stringify(retry)}`)
        await facilitator.close()
      },
    },
    {
      name: 'journals the transaction before sending it, and a restart resumes it instead of sending again',
      async run() {
        const adapter = adapterOf()
        const body = await payment()
        const store = newStore()
        let journaled: string | undefined
        let background: Promise<unknown> | undefined
        // A process that dies right after its journal write: the real settle goes on, the caller never hears back.
        const dying: SchemeAdapter<P, V, R> = {
          ...adapter,
          parse: (ctx) => adapter.parse(ctx),
          verify: (ctx, payload, reservation) => adapter.verify(ctx, payload, reservation),
          resume: (ctx, payload, record) => adapter.resume(ctx, payload, record),
          settle(ctx: PaymentContext, verified: V, journal: SettleJournal, reservation?: R) {
            return new Promise((resolve, reject) => {
              const work = adapter.settle(ctx, verified, {
                async broadcasting(record) {
                  await journal.broadcasting(record)
                  journaled = record.transaction
                  reject(new Error('the process died after its journal write'))
                },
              }, reservation)
              // An adapter that never journals answers here (and fails the check below).
              work.then((answer) => journaled === undefined && resolve(answer), (error: unknown) => journaled === undefined && reject(error))
              background = work.catch(() => undefined)
            })
          },
        }
        const first = await facilitatorOver(dying, store).settle(body)
        if (!journaled) throw new Error(`settle never journaled a transaction before sending: ${JSON.stringify(first)}`)
        if (first.transaction !== journaled) throw new Error(`the answer after a crash lost the journaled transaction: ${JSON.stringify(first)}`)
        await background
        const restarted = facilitatorOver(adapter, store, 300)
        const resumed = await restarted.settle(body)
        if (!resumed.success) throw new Error(`the resumed settle failed: ${resumed.errorReason} ${resumed.errorMessage ?? ''}`)
        if (resumed.transaction !== journaled) throw new Error(`the restart sent ${resumed.transaction} besides the journaled ${journaled}`)
        await restarted.close()
      },
    },
  ]
  if (setup.invalidPayment) {
    const invalidPayment = setup.invalidPayment.bind(setup)
    checks.push({
      name: 'refuses an invalid payment with its code, and settles nothing for it',
      async run() {
        const adapter = adapterOf()
        const { body, reason } = await invalidPayment()
        const facilitator = facilitatorOver(adapter, newStore())
        const verified = await facilitator.verify(body)
        if (verified.isValid || verified.invalidReason !== reason) throw new Error(`verify answered ${JSON.stringify(verified)}, not ${reason}`)
        const settled = await facilitator.settle(body)
        if (settled.success || settled.errorReason !== reason || settled.transaction !== '') throw new Error(`settle answered ${JSON.stringify(settled)}, not ${reason} with no transaction`)
        await facilitator.close()
      },
    })
  }
  checks.push({
    name: 'a reservation (where the adapter takes one) is released once, however often release is called',
    async run() {
      const adapter = adapterOf()
      if (!adapter.reserveSettlement) return
      const ctx = contextOf(adapter, await payment())
      const parsed = adapter.parse(ctx)
      if (!('key' in parsed)) throw new Error('a valid payment did not parse')
      const reservation = adapter.reserveSettlement(ctx, parsed.payload)
      reservation.release()
      reservation.release()
      // With its slot back, the signer serves another reservation.
      adapter.reserveSettlement(ctx, parsed.payload).release()
    },
  })
  return checks
}

/** The context the core would hand the adapter for `body`. */
function contextOf<P, V, R extends SettleReservation>(adapter: SchemeAdapter<P, V, R>, body: unknown): PaymentContext {
  const parsed = parsePaymentRequest(body)
  if (!parsed.ok) throw new Error(`the setup's body is not a payment request: ${'message' in parsed ? parsed.message : parsed.reason}`)
  const routed = dispatch(createRegistry([adapter as unknown as SchemeAdapter]), parsed.request, AbortSignal.timeout(30_000))
  if ('rejection' in routed) throw new Error(`the adapter does not serve the setup's body: ${routed.rejection.message}`)
  return routed.context
}

function withPayload(body: unknown, payload: unknown): unknown {
  const request = body as { paymentPayload: Record<string, unknown> }
  return { ...request, paymentPayload: { ...request.paymentPayload, payload } }
}

function expectCode(code: string | undefined, where: string): void {
  if (!code || !/^[a-z0-9]+(_[a-z0-9]+)*$/.test(code)) throw new Error(`${where} answered no stable snake_case code: ${String(code)}`)
}
