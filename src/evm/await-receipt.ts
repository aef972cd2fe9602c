import { setTimeout as sleep } from 'node:timers/promises'
import type { Hex } from 'viem'
import type { NetworkRuntime } from './network-runtime.js'
import type { ReceiptOutcome, ReceiptWait } from './receipt-poller.js'
import { resend } from './send-transaction.js'

/**
 * Waits for the receipt of a sent transaction (see `ReceiptPoller.wait`) and,
 * every `rebroadcastIntervalMs` while it is not mined, asks the node whether
 * it still knows the transaction; when it does not, the same signed bytes go
 * again. Nodes lose transactions (a restart, an evicting pool, a load balancer
 * whose other backend never saw it), and a lost nonce holds back every later
 * transaction of the key. The same bytes can only ever be this one
 * transaction, so offering them again is always safe. A lookup without an
 * answer counts as "known": nothing is sent on a guess.
 *
 * @example
 * const outcome = await awaitReceipt(runtime, hash, raw, { timeoutMs: 30_000, maxIntervalMs: 1_000, signal }, 3_000)
 */
export async function awaitReceipt(
  runtime: NetworkRuntime,
  hash: Hex,
  raw: Hex | undefined,
  wait: ReceiptWait,
  rebroadcastIntervalMs: number,
): Promise<ReceiptOutcome> {
  const waiting = runtime.receipts.wait(hash, wait)
  if (!raw || !(rebroadcastIntervalMs > 0)) return waiting
  const done = new AbortController()
  const keeping = keep(runtime, hash, raw, AbortSignal.any([wait.signal, done.signal]), rebroadcastIntervalMs)
  try {
    return await waiting
  } finally {
    // Not awaited: a lookup on the way ends by itself and must not hold the answer.
    done.abort()
    void keeping
  }
}

async function keep(runtime: NetworkRuntime, hash: Hex, raw: Hex, signal: AbortSignal, intervalMs: number): Promise<void> {
  for (;;) {
    try {
      await sleep(intervalMs, undefined, { signal })
    } catch {
      return // the receipt came, or the wait ended
    }
    const known = await runtime.client.request({ method: 'eth_getTransactionByHash', params: [hash] }).catch(() => true)
    if (signal.aborted) return
    // A refusal ("nonce too low": mined meanwhile, or the nonce went to another transaction) is for the receipt wait to settle.
    if (known === null) await resend(runtime, raw).catch(() => undefined)
  }
}
