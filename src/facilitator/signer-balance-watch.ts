import type { ReadinessCheck } from '../core/adapter.js'
import type { Facilitator } from './facilitator.js'

/** One signer's gas money as a watch reads it (amounts in the chain's smallest unit). */
export interface SignerBalance {
  readonly network: string
  readonly address: string
  readonly balance: bigint
  readonly minimum: bigint
}

/** Options of {@link watchSignerBalances}. */
export interface SignerBalanceWatchOptions {
  /** How often the balances are read. @default 60_000 */
  intervalMs?: number
  /** Every reading of every signer (e.g. a metrics gauge). */
  onBalance?: (signer: SignerBalance) => void
  /** A signer fell below its threshold (once per fall, not at every reading while low). */
  onLow?: (signer: SignerBalance) => void
  /** A signer that was low is back above its threshold. */
  onRecovered?: (signer: SignerBalance) => void
  /** Budget of one reading. @default 10_000 */
  timeoutMs?: number
}

/** A running watch. */
export interface SignerBalanceWatch {
  /** Reads now (the interval goes on). */
  check(): Promise<SignerBalance[]>
  stop(): void
}

/**
 * Reads the signers' gas money on an interval, off the payment path, through
 * the adapters' readiness checks (their `minSignerBalance`, in wei or lamports,
 * are the thresholds), and calls `onLow` when one falls below its threshold.
 * The timer does not keep the process alive.
 *
 * @example
 * // partial
 * const watch = watchSignerBalances(facilitator, { onLow: (s) => logger.warn(s, 'signer needs gas money') })
 * // on shutdown: watch.stop()
 */
export function watchSignerBalances(facilitator: Pick<Facilitator, 'readiness'>, options: SignerBalanceWatchOptions = {}): SignerBalanceWatch {
  const low = new Set<string>()
  const check = async (): Promise<SignerBalance[]> => {
    let checks: ReadinessCheck[]
    try {
      ;({ checks } = await facilitator.readiness(options.timeoutMs ?? 10_000))
    } catch {
      return []
    }
    const readings: SignerBalance[] = []
    for (const check of checks) {
      if (!check.signer) continue
      const signer: SignerBalance = { network: check.signer.network, address: check.signer.address, balance: BigInt(check.signer.balance), minimum: BigInt(check.signer.minimum) }
      readings.push(signer)
      options.onBalance?.(signer)
      const key = `${signer.network} ${signer.address}`
      if (signer.balance < signer.minimum) {
        if (!low.has(key)) {
          low.add(key)
          options.onLow?.(signer)
        }
      } else if (low.delete(key)) {
        options.onRecovered?.(signer)
      }
    }
    return readings
  }
  void check()
  const timer = setInterval(() => void check(), options.intervalMs ?? 60_000)
  timer.unref()
  return { check, stop: () => clearInterval(timer) }
}
