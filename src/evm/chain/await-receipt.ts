import { keccak256, type Hex } from 'viem'
import type { NetworkRuntime } from './network-runtime.js'
import type { ReceiptOutcome, ReceiptWait } from './receipt-poller.js'
import { knownToChain, resend } from './send-transaction.js'

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
export function awaitReceipt(
  runtime: NetworkRuntime,
  hash: Hex,
  raw: Hex | undefined,
  wait: ReceiptWait,
  rebroadcastIntervalMs: number,
): Promise<ReceiptOutcome> {
  const waiting = runtime.receipts.wait(hash, wait)
  if (!raw || !(rebroadcastIntervalMs > 0)) return waiting
  // A plain timer, cleared when the wait ends: aborting a signal per settle would build an AbortError (a stack) each time.
  let finished = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const look = async () => {
    const known = await knownToChain(runtime, hash, wait.signal)
    // A refusal ("nonce too low": mined meanwhile, or the nonce went to another transaction) is for the receipt wait to settle.
    // Bytes that are not this hash's are never sent: they would be another transaction.
    if (!finished && !known && keccak256(raw) === hash) await resend(runtime, raw).catch(() => undefined)
    if (!finished) timer = setTimeout(look, rebroadcastIntervalMs)
  }
  timer = setTimeout(look, rebroadcastIntervalMs)
  return waiting.finally(() => {
    finished = true
    clearTimeout(timer)
  })
}
