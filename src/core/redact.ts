import { FacilitatorError } from '../errors/facilitator-error.js'
import type { SchemeAdapter } from './adapter.js'

/**
 * The parts of an RPC URL that may be credentials: the URL itself (also as
 * printed without user info, which is how viem quotes it), the user and
 * password, the query string and its values, and long path segments
 * (`/v2/<api key>`).
 */
export function secretsOfUrl(url: string): string[] {
  const found = new Set<string>([url])
  try {
    const parsed = new URL(url)
    const bare = new URL(url)
    bare.username = ''
    bare.password = ''
    found.add(bare.href)
    for (const part of [parsed.username, parsed.password]) {
      if (!part) continue
      found.add(part)
      try {
        found.add(decodeURIComponent(part))
      } catch {
        // A malformed escape: the part as written is what a message would quote.
      }
    }
    if (parsed.search) found.add(parsed.search)
    for (const [, value] of parsed.searchParams) found.add(value).add(encodeURIComponent(value))
    for (const segment of parsed.pathname.split('/')) if (segment.length >= 16) found.add(segment)
  } catch {
    // Not a URL: the string itself is all we can hide.
  }
  // Very short pieces ("1", "on") would blank out ordinary words.
  return [...found].filter((secret) => secret.length >= 4).sort((a, b) => b.length - a.length)
}

/**
 * Makes an error safe to hand to a caller's logger: a FacilitatorError keeps
 * its code, status and (already safe) message, but its `cause` chain, which
 * may quote RPC URLs with API keys (viem does), is replaced by a plain Error
 * with the same text minus `secrets`. A foreign error that quotes a secret
 * becomes an `internal_error`; any other error is returned unchanged.
 *
 * @example
 * try { ... } catch (error) { throw redactError(error, secretsOfUrl(rpcUrl)) }
 */
export function redactError(error: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return error
  if (error instanceof FacilitatorError) {
    if (error.cause === undefined) return error
    return new FacilitatorError(error.code, error.message, {
      status: error.status,
      details: error.details,
      cause: new Error(redactText(describeChain(error.cause), secrets)),
    })
  }
  const text = describeChain(error)
  if (!secrets.some((secret) => text.includes(secret))) return error
  return new FacilitatorError('internal_error', 'internal error', { cause: new Error(redactText(text, secrets)) })
}

function redactText(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) out = out.split(secret).join('<redacted>')
  return out
}

/** Every message, detail and quoted URL down the cause chain, as one text. */
function describeChain(error: unknown): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (current instanceof Error) {
      parts.push(`${current.name}: ${current.message}`)
      const extra = current as Error & { details?: unknown; url?: unknown }
      if (typeof extra.details === 'string') parts.push(extra.details)
      if (typeof extra.url === 'string') parts.push(`URL: ${extra.url}`)
      current = current.cause
    } else {
      parts.push(String(current))
      break
    }
  }
  return parts.join(' | ')
}

/**
 * `adapter` with every error of its chain-facing calls (verify, settle,
 * resume) passed through {@link redactError}, so no cause chain leaves with an
 * RPC credential.
 *
 * @example
 * return withRedactedErrors(adapter, rpcUrls.flatMap(secretsOfUrl))
 */
export function withRedactedErrors(adapter: SchemeAdapter, secrets: readonly string[]): SchemeAdapter {
  const redacting = <T>(work: Promise<T>): Promise<T> => work.catch((error: unknown) => Promise.reject(redactError(error, secrets)))
  return {
    ...adapter,
    verify: (ctx, payload, reservation) => redacting(adapter.verify(ctx, payload, reservation)),
    settle: (ctx, payment, journal, reservation) => redacting(adapter.settle(ctx, payment, journal, reservation)),
    resume: (ctx, payload, record) => redacting(adapter.resume(ctx, payload, record)),
  }
}
