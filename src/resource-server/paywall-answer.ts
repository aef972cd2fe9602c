/**
 * What the paywall answers, whatever the transport: its own answers (challenges, mistakes, faults)
 * are plain values, and an `AnswerKit` makes, reads and extends the transport's (a web `Response`,
 * or the node path's plain answer) so one paywall core serves both.
 */

/** A complete HTTP answer of the paywall's own (a challenge, a mistake, a fault): status, headers and a text body. */
export interface PlainAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** How one transport's answers are made from plain ones, read, and given the settlement header. */
export interface AnswerKit<R> {
  fromPlain(answer: PlainAnswer): R
  statusOf(answer: R): number
  /** The answer with these headers set (the settlement header). */
  withHeaders(answer: R, headers: Record<string, string>): R
  /** What is wrong with an answer of the paid work (answered 500, nothing charged), or undefined. */
  problemOf?(answer: R): string | undefined
}

/** A JSON answer that no cache keeps (the paywall's mistakes and faults). */
export function noStoreJson(status: number, value: unknown): PlainAnswer {
  return { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' }, body: JSON.stringify(value) }
}
