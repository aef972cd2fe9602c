import type { PaymentContext, Verdict } from '../../core/adapter.js'
import { withDeadline } from '../../core/deadline.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { VerifyResponse } from '../../schemas/messages.js'
import { CLOCK_SYSVAR, describeTransactionError, parseResult, simulationSchema, sourceBalanceOf } from '../rpc/answers.js'
import { signatureStatusesSchema } from '../rpc/signature-poller.js'
import type { RpcCall } from '../rpc/solana-rpc.js'
import { SVM_REASON } from '../reasons.js'
import { TOKEN_2022_PROGRAM_ADDRESS } from '../rules/transaction-rules.js'
import { accountProblem, mintProblem } from './account-checks.js'
import type { FeePayerReservation } from './fee-payer-slots.js'
import { invalid } from './invalid.js'
import type { ExactSvmPayload } from './parse.js'
import { payerSignatureRefusal, prepare, type SignedPayment } from './prepare.js'
import type { ExactSvmRuntime, NetworkRuntime } from './runtime.js'

/** A balance read under way for one source account, and when the verify that made it began. */
interface BalanceRead {
  readonly since: number
  readonly balance: Promise<bigint | undefined>
}

/** The adapter's verify: the static rules and signatures (`prepare`), then one round trip to the chain. */
export type ExactSvmVerify = (ctx: PaymentContext, payload: ExactSvmPayload, reservation?: FeePayerReservation) => Promise<Verdict<SignedPayment>>

/**
 * Builds verify. A valid verify costs one RPC round trip: signature status and simulation (plus,
 * for a Token-2022 payment, the mint account) in one JSON-RPC batch.
 */
export function createVerify(rt: ExactSvmRuntime): ExactSvmVerify {
  // The balance read under way for each source account. Settlements racing from one payer (a burst
  // of an agent's calls) share it instead of each making the node copy the account out of its
  // simulation: it answers with (or before) the sharer's own simulation, and the core counts what
  // landed since its moment against it (PayerSpend.since). Only a read still under way is shared,
  // so that moment is at most one round trip old.
  const balances = new Map<string, BalanceRead>()
  // Settles in flight per source account (from their verify to the end of the settle call). A settle
  // alone on its source holds only its own amount: the simulation that moved it proves the balance
  // covers it, so the node need not copy the account out. With another in flight, the balance is read.
  const settling = new Map<string, number>()
  const track = (reservation: FeePayerReservation, account: string): number => {
    if (reservation.settling) return (settling.get(account) ?? 1) - 1
    const others = settling.get(account) ?? 0
    settling.set(account, others + 1)
    let ended = false
    reservation.settling = {
      account,
      end() {
        if (ended) return
        ended = true
        const left = (settling.get(account) ?? 1) - 1
        if (left > 0) settling.set(account, left)
        else settling.delete(account)
      },
    }
    return others
  }

  async function verify(ctx: PaymentContext, payload: ExactSvmPayload, reservation?: FeePayerReservation): Promise<Verdict<SignedPayment>> {
    const startedAt = Date.now()
    const runtime = rt.networkOf(ctx)
    const prepared = await prepare(rt, ctx, runtime, payload.transaction)
    if (!prepared.ok) return { response: invalid(prepared.reason, prepared.message, prepared.payer) }
    const { signed } = prepared
    if (reservation) {
      // A settle's verify checks the payer's signature first: settle bursts are bound by CPU, not by one
      // verify's latency, and the check beside the batch measured more CPU a settle (docs/benchmarks.md).
      const refusal = payerSignatureRefusal(rt, signed.payment)
      if (refusal) return { response: invalid(refusal.reason, refusal.message, refusal.payer) }
      return judge(ctx, runtime, signed, reservation, startedAt)
    }
    // A /verify sends its RPC batch first and checks the payer's signature while it is on the wire: the
    // round trip no longer waits for the Ed25519 check. Anyone can sign a well-formed payment with a
    // fresh key at no cost, so checking first spared no RPC call. A bad signature answers its own
    // code whatever the chain said (or failed to say).
    const onChain = judge(ctx, runtime, signed, reservation, startedAt)
    // Handled now: a batch that fails before the check runs is no unhandled rejection.
    onChain.catch(() => undefined)
    const refusal = await afterTheSend(() => payerSignatureRefusal(rt, signed.payment))
    if (!refusal) return onChain
    // Nothing of the call runs on after its answer: the batch's answer (or failure) is awaited and dropped.
    await onChain.then(noop, noop)
    return { response: invalid(refusal.reason, refusal.message, refusal.payer) }
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
    let floor = false
    if (reservation) {
      const others = track(reservation, account)
      shared = reservation.readsAfresh ? undefined : balances.get(account)
      if (!shared && others === 0 && !reservation.readsAfresh) {
        floor = true
      } else if (!shared) {
        read = { since: startedAt, balance: new Promise<bigint | undefined>((resolve) => (reading = resolve)) }
        balances.set(account, read)
      }
    }
    try {
      return await checkOnChain(ctx, runtime, signed, { account, startedAt, shared, reading, floor, readsMint, readsEpoch, reservation })
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
      /** Alone on its source: the spend's balance is the amount the simulation moved (no account read). */
      floor: boolean
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
        // and turn its replay check into `already_processed` for a payer who paid. (The RPC itself sees our
        // signature in the replay check beside it, so it could assemble them: it is trusted with sendable
        // bytes, as on every settle.) The payer's signature is checked beside this batch (see verify); the
        // signature (transaction id) above comes from signing locally.
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
    if (read.floor) {
      // The core holds it against what else is held on the source (another process's settles, through the
      // store): anything besides it is refused, and verified again with the balance read (readsAfresh).
      reservation!.readsAfresh = true
      return { response: valid, payment: signed, spend: { account, amount: payment.amount, balance: payment.amount, since: read.startedAt, floor: true } }
    }
    const balanceAfter = sourceBalanceOf(simulation.data.value.accounts, payment)
    if (balanceAfter === undefined) return { response: valid, payment: signed }
    const balance = balanceAfter + payment.amount
    read.reading?.(balance)
    if (reservation) reservation.readsAfresh = true
    return { response: valid, payment: signed, spend: { account, amount: payment.amount, balance, since: read.startedAt } }
  }

  return verify
}

const noop = () => undefined

/**
 * Runs `check` once the RPC requests made so far have been written: they leave in a microtask (see
 * the transport's `together`), and an immediate runs after the microtasks of this turn.
 */
function afterTheSend<T>(check: () => T): Promise<T> {
  return new Promise((resolve, reject) =>
    setImmediate(() => {
      try {
        resolve(check())
      } catch (error) {
        reject(error)
      }
    }),
  )
}
