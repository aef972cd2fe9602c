import type { ReadinessCheck } from '../core/adapter.js'
import type { Facilitator } from '../facilitator/facilitator.js'
import { withDeadline } from '../core/deadline.js'
import type { SettlementStore } from '../stores/store.js'
import type { CliNetwork } from './cli-config.js'
import { networkVariableSuffix } from './cli-config.js'
import type { CliLogger } from './cli-logging.js'
import { redactSecrets } from './cli-logging.js'

/** A fault that a restart will not fix: the start ends with these lines, each naming its variable. */
export class StartupRefusal extends Error {
  constructor(readonly lines: readonly string[]) {
    super(lines.join('; '))
  }
}

/** What one start-up check found: nothing, a fatal mistake in the configuration, or an outage that may pass. */
type Finding = { fatal: string } | { outage: { check: string; variable: string; detail: string } } | undefined

/**
 * Checks, once at start, what the configuration points at: the store (reachable, its schema
 * created or migrated, a write and a read) and each network's RPC (reachable, the chain the
 * network expects). A mistake that a restart will not fix (an RPC of another chain, a
 * database that does not exist, refused credentials, a schema the user may not write) throws
 * `StartupRefusal` naming the variable; an outage (connection refused, no answer) is logged as
 * a warning, `startup_check_failed`, and the start goes on with `/readyz` red until it clears.
 */
export async function runStartupChecks(options: {
  facilitator: Pick<Facilitator, 'readiness'>
  store: SettlementStore
  networks: readonly CliNetwork[]
  logger: CliLogger
  secrets: readonly string[]
  timeoutMs?: number
}): Promise<void> {
  const { facilitator, store, networks, logger, secrets } = options
  const timeoutMs = options.timeoutMs ?? 5_000
  const [storeFinding, readiness] = await Promise.all([checkStore(store, timeoutMs, secrets), facilitator.readiness(timeoutMs).catch(() => ({ ready: false, checks: [] as ReadinessCheck[] }))])
  const findings: Finding[] = [storeFinding]
  for (const network of networks) {
    const variable = `RPC_URL_${networkVariableSuffix(network.name)}`
    for (const check of readiness.checks) {
      if (check.ok || check.signer) continue // gas money: the balance watch logs signer_low_balance
      if (check.name === `rpc ${network.caip2}`) {
        // The adapters' own words for a chain mismatch: "the RPC serves chain 84532, not 8453", "… another chain (genesis hash differs)".
        if (check.detail?.startsWith('the RPC serves')) findings.push({ fatal: `${variable} points at the wrong chain for ${network.name}: ${check.detail}` })
        else findings.push({ outage: { check: check.name, variable, detail: check.detail ?? 'failed' } })
      } else if (check.name.endsWith(` ${network.caip2}`)) {
        findings.push({ outage: { check: check.name, variable, detail: check.detail ?? 'failed' } })
      }
    }
  }
  const fatal = findings.flatMap((finding) => (finding && 'fatal' in finding ? [finding.fatal] : []))
  if (fatal.length > 0) throw new StartupRefusal(fatal)
  for (const finding of findings) {
    if (!finding || !('outage' in finding)) continue
    const { check, variable, detail } = finding.outage
    logger.warn({ event: 'startup_check_failed', check, variable, detail }, `${check} failed at start (${detail}): starting anyway; /readyz answers 503 until it passes`)
  }
}

/** The store: its schema made ready (PostgreSQL), then a write, a read and a delete. */
async function checkStore(store: SettlementStore, timeoutMs: number, secrets: readonly string[]): Promise<Finding> {
  const signal = AbortSignal.timeout(timeoutMs)
  const key = `startup-check:${process.pid}:${Math.random().toString(36).slice(2)}`
  try {
    const ready = (store as { ready?: () => Promise<void> }).ready
    if (ready) await withDeadline(ready.call(store), signal)
    await withDeadline(store.set(key, '1', { ttlMs: 60_000 }), signal)
    const read = await withDeadline(store.get(key), signal)
    await withDeadline(store.delete(key), signal)
    if (read !== '1') return { outage: { check: 'store', variable: 'STORE_URL', detail: 'a value written was not read back' } }
    return undefined
  } catch (error) {
    if (signal.aborted) return { outage: { check: 'store', variable: 'STORE_URL', detail: `no answer within ${timeoutMs} ms` } }
    return classifyStoreError(error, secrets)
  }
}

/** A store's error: a mistake in STORE_URL, or an outage. */
export function classifyStoreError(error: unknown, secrets: readonly string[]): Finding {
  const { code, message } = error as { code?: unknown; message?: unknown }
  const text = typeof message === 'string' ? message : ''
  // PostgreSQL's SQLSTATE codes.
  if (code === '3D000') return { fatal: 'STORE_URL names a PostgreSQL database that does not exist: create it (createdb) or fix the name' }
  if (code === '28P01' || code === '28000') return { fatal: 'STORE_URL: PostgreSQL refused the user or its password' }
  if (code === '42501') return { fatal: "STORE_URL: the PostgreSQL user may not create or write the store's schema (grant it CREATE on the database)" }
  // Redis's refusals.
  if (/^(WRONGPASS|NOAUTH|NOPERM)/.test(text)) return { fatal: `STORE_URL: Redis refused the connection's credentials (${text.split(' ')[0]})` }
  // SQLite's.
  if (typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY|PERM|NOTADB|CORRUPT)/.test(code)) return { fatal: `STORE_URL names a SQLite file that cannot be opened or written (${code})` }
  if (code === 'EACCES' || code === 'EROFS' || code === 'ENOTDIR') return { fatal: `STORE_URL names a SQLite file in a directory that cannot be written (${code})` }
  // ioredis without a connection: its words say nothing of why (store_connection_error does).
  if (/Stream isn't writeable|Connection is closed|Reached the max retries/.test(text)) return { outage: { check: 'store', variable: 'STORE_URL', detail: 'not connected' } }
  const cause = typeof code === 'string' ? code : redactSecrets(text.split('\n')[0] ?? '', secrets).slice(0, 200) || 'the store failed a write or a read'
  return { outage: { check: 'store', variable: 'STORE_URL', detail: cause } }
}
