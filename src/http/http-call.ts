/**
 * One HTTP call as the handler sees it, whichever server delivered it. The
 * web handler wraps a `Request`; the node listener wraps node's own request
 * objects directly, so node servers skip building web streams for every call.
 */
export interface HttpCall {
  readonly method: string
  /** The path of the URL (no query), or `undefined` when the URL is unusable. */
  readonly pathname: string | undefined
  /** The peer's address when the server knows it (the node listener: the socket's remote address). */
  readonly clientAddress?: string | undefined
  /** A header value (names are case-insensitive), or `null`. */
  header(name: string): string | null
  /** The body bytes; stops reading and throws `payload_too_large` past `maxBytes`. */
  bytes(maxBytes: number): Promise<Uint8Array>
  /**
   * A web `Request` for code that wants one (authentication hook, extra routes,
   * error hook). On node it carries method, URL and headers but no body: the
   * handler reads the body itself.
   */
  request(): Request
}

/** A JSON answer before it becomes a `Response` or is written to a node socket. */
export interface HttpAnswer {
  status: number
  headers: Record<string, string>
  body: string | null
}
