/** Words for node's codes of a failed connection, for logs and fault messages. */
const CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS certificate not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS certificate not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate for another host',
}

/**
 * Why a connection failed, in words, from node's error code anywhere in the cause chain
 * (`connection refused`, `host not found`, …; another code as is), or `undefined`. Only
 * codes are read, never messages: those may quote an address with a key.
 *
 * @example
 * connectionCause(new HttpRequestError({ cause: econnrefused, url })) // 'connection refused'
 */
export function connectionCause(error: unknown): string | undefined {
  let current: unknown = error
  for (let depth = 0; current !== null && typeof current === 'object' && depth < 8; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,40}$/.test(code)) return CAUSES[code] ?? code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/** `connectionCause` of a bare code, as the rpc-response channel carries it. */
export function connectionCauseOfCode(code: string): string {
  return CAUSES[code] ?? code
}
