/** Tuning of at-most-once settlement. */
export interface SettlementOptions {
  /** How long a settled or failed payment is remembered. @default 7 days */
  recordTtlMs?: number
  /** How often a call waiting for another call's settlement looks again. @default 25 */
  pollIntervalMs?: number
  /**
   * How long a claim or a broadcast stays its caller's without a renewal. The caller renews it
   * (every third of it) while it lives, so a settle may take its whole budget; a caller that
   * died (a crash, `kill -9`) leaves it to expire, and a retry then takes over within this
   * time rather than after the settle budget. At most a third of the settle budget, so that a
   * retry can take over and finish within its own. @default 5_000
   */
  leaseMs?: number
  /**
   * Longest wait for one store call; the settle's remaining budget bounds it
   * too. A store that fails or does not answer in time makes a settle that
   * has sent nothing answer the fault `store_unavailable` (503), and one that
   * has sent its transaction answer with the transaction id. @default 5_000
   */
  storeTimeoutMs?: number
  /**
   * Budget of settlements that the chain refused or reverted after they passed verify, per
   * payer (its address, and the balance it pays from), shared through the store: past
   * `maxFailures` within `windowMs` (counted from the last failure), the payer's settles answer
   * `payer_suspended` before anything is sent, so a hostile payer spends its own time rather
   * than the facilitator's gas. A transaction that only expired is not counted (a dropped
   * transaction may be the network's doing). `false` turns the budget off.
   * @default { maxFailures: 3, windowMs: 3_600_000 }
   */
  payerFailures?: PayerFailureBudget | false
  /**
   * Finishing settlements whose caller is gone: a transaction journaled by a call that died
   * (a crash, `kill -9`) or answered `settlement_pending`, and never asked again, is resumed by
   * the facilitator itself (on any instance sharing the store), so it is confirmed, recorded,
   * and seen by the after-hooks (the ledger, statistics) like any other. `false` turns it off:
   * such a settlement is then finished only when its caller retries.
   * @default { intervalMs: 30_000, minAgeMs: 15_000 }
   */
  reconcile?: ReconcileOptions | false
}

/** See {@link SettlementOptions.reconcile}. */
export interface ReconcileOptions {
  /** How often the journal is looked through. @default 30_000 */
  intervalMs?: number
  /**
   * How old a journaled settlement must be before the facilitator finishes it (its caller has
   * had this long to retry; one whose caller still lives renews its lease and is left alone). @default 15_000
   */
  minAgeMs?: number
}

/** See {@link SettlementOptions.payerFailures}. */
export interface PayerFailureBudget {
  /** Failures after which the payer is refused. @default 3 */
  maxFailures?: number
  /** How long a failure is remembered (restarted by each new one). @default 3_600_000 */
  windowMs?: number
}
