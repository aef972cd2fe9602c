import { AsyncLocalStorage } from 'node:async_hooks'
import { format } from 'node:util'
import type { Logger } from '../core/logger.js'

/** The logger of the command: pino's, with `fatal` and `child` as the command uses them. */
export interface CliLogger extends Logger {
  fatal(fields: Record<string, unknown>, message?: string): void
  debug(fields: Record<string, unknown>, message?: string): void
}

/** The id of the request being served, for every log line it causes (see `createHandler({ requestId })`). */
export const requestContext = new AsyncLocalStorage<string>()

/** pino options of the command: JSON lines on stdout, the request id of the line's request. */
export function cliLoggerOptions(level: string) {
  return {
    level,
    base: { service: 'x402-facilitator' },
    mixin: () => {
      const requestId = requestContext.getStore()
      return requestId === undefined ? {} : { requestId }
    },
  }
}

/** Replaces each secret in `text` (longest first) with `[redacted]`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join('[redacted]')
  return out
}

/** The first line of what a dependency wrote, without secrets and bounded. */
function firstLine(text: string, secrets: readonly string[]): string {
  const line = text.split('\n').find((part) => part.trim() !== '') ?? ''
  return redactSecrets(line, secrets).slice(0, 500)
}

/**
 * Makes everything the process writes a JSON log line: what dependencies print through
 * `console` (ioredis's "Unhandled error event"), node's process warnings, and an uncaught
 * error (logged as fatal, then the process exits 1 as node would). Text is cut to its first
 * line and cleared of `secrets`. Answers a function that restores the console.
 */
export function captureProcessOutput(logger: CliLogger, secrets: readonly string[], exit: (code: number) => void = (code) => process.exit(code)): () => void {
  const original = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug, trace: console.trace }
  const as = (level: 'info' | 'warn' | 'error' | 'debug') => (...args: unknown[]) => logger[level]({ event: 'dependency_output' }, firstLine(format(...args), secrets))
  console.log = as('info')
  console.info = as('info')
  console.debug = as('debug')
  console.warn = as('warn')
  console.error = as('error')
  console.trace = as('error')
  // Node prints warnings to stderr from a listener of its own: replaced by a JSON line.
  const nodeWarningListeners = process.listeners('warning')
  for (const listener of nodeWarningListeners) process.off('warning', listener)
  const onWarning = (warning: Error & { code?: string }) => logger.warn({ event: 'process_warning', name: warning.name, ...(warning.code ? { code: warning.code } : {}) }, firstLine(warning.message, secrets))
  process.on('warning', onWarning)
  const onFatal = (error: unknown, origin: string) => {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    logger.fatal({ event: 'crashed', origin }, firstLine(text, secrets))
    exit(1)
  }
  process.on('uncaughtException', onFatal)
  return () => {
    Object.assign(console, original)
    process.off('warning', onWarning)
    for (const listener of nodeWarningListeners) process.on('warning', listener)
    process.off('uncaughtException', onFatal)
  }
}

/**
 * Logs a store's connection errors (a Redis or PostgreSQL going away, each reconnect
 * attempt) as JSON: the first at once, then at most one line per `everyMs` with how many
 * were left out. Only the error's code and first line, without secrets.
 */
export function connectionErrorLogger(logger: CliLogger, store: string, secrets: readonly string[], everyMs = 30_000, now: () => number = Date.now): (error: Error) => void {
  let lastAt = -Infinity
  let skipped = 0
  return (error) => {
    const time = now()
    if (time - lastAt < everyMs) {
      skipped++
      return
    }
    lastAt = time
    const code = (error as { code?: unknown }).code
    logger.warn(
      { event: 'store_connection_error', store, variable: 'STORE_URL', ...(typeof code === 'string' ? { code } : {}), ...(skipped > 0 ? { repeated: skipped } : {}) },
      firstLine(`the store's connection failed: ${error.message || (typeof code === 'string' ? code : 'no reason given')}`, secrets),
    )
    skipped = 0
  }
}
