import { type Span, SpanStatusCode, trace } from '@opentelemetry/api'

/**
 * The library's tracer. Through `@opentelemetry/api` it is a no-op (about 0.15 µs a
 * span) until the application registers an SDK; then verify and settle are spans,
 * with their store calls (and RPC calls, where the transports make them) as children.
 * Attributes name networks, schemes, methods, hosts and outcome codes: never an
 * address, a signature, a payload or a URL.
 */
export const tracer = trace.getTracer('x402-facilitator')

/**
 * Runs `work` inside an active span that ends with it; a throw marks the span as an
 * error with the fault's code (the message stays out: it is for the client).
 */
export function traced<T>(name: string, attributes: Record<string, string | number>, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span)
    } catch (error) {
      const code = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : 'error'
      span.setStatus({ code: SpanStatusCode.ERROR, message: code })
      span.setAttribute('x402.fault', code)
      throw error
    } finally {
      span.end()
    }
  })
}
