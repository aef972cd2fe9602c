import { INVALID_SPAN_CONTEXT, ProxyTracerProvider, type Span, SpanStatusCode, trace } from '@opentelemetry/api'

const TRACER_NAME = 'x402-facilitator'

/**
 * Runs `work` inside an active span that ends with it; a throw marks the span as an
 * error with the fault's code (the message stays out: it is for the client). Until the
 * application registers an SDK, the work runs without a span (see tracingOn); once one
 * is registered, verify and settle are spans, with their store calls (and RPC calls,
 * where the transports make them) as children. Attributes name networks, schemes,
 * methods, hosts and outcome codes: never an address, a signature, a payload or a URL.
 */
export function traced<T>(name: string, attributes: Record<string, string | number>, work: (span: Span) => Promise<T>): Promise<T> {
  if (!tracingOn()) {
    try {
      return work(NO_SPAN)
    } catch (error) {
      return Promise.reject(error)
    }
  }
  // Asked for each span: a tracer kept from before `trace.disable()` would never reach an SDK registered after it.
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { attributes }, async (span) => {
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

// The API's own no-op provider: what an unregistered global provider delegates to.
const NO_PROVIDER = new ProxyTracerProvider().getDelegate()
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT)

/**
 * Whether an SDK is registered. Without one, a span through the API still copies the active
 * context and wraps the work in one more promise: about 1 µs and 1 KB a call, 10 to 15 calls a
 * settle, 13 KB of a Permit2 settle's 229 KB of garbage in a burst. Asked at every call, so an
 * SDK registered later is honoured at once. A provider of another copy of the API counts as on.
 */
function tracingOn(): boolean {
  const provider = trace.getTracerProvider()
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_PROVIDER
}
