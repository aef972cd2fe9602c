#!/usr/bin/env node
import diagnostics from 'node:diagnostics_channel'
import type { Server } from 'node:http'
import { RPC_RESPONSE_CHANNEL, type RpcResponseEvent } from '../transport/keep-alive-post.js'
import { createFacilitator, type Facilitator } from '../facilitator/facilitator.js'
import { watchSignerBalances } from '../facilitator/signer-balance-watch.js'
import type { SchemeAdapter } from '../core/adapter.js'
import type { Logger } from '../core/logger.js'
import { createCatalog } from '../catalog/catalog.js'
import { createHandler, type ExtraRoute } from '../http/handler.js'
import { healthRoutes } from '../http/health-routes.js'
import { createNodeServer } from '../http/node-server.js'
import { createPublicStats } from '../stats/public-stats.js'
import { createMemoryStore } from '../stores/memory-store.js'
import { createLedgerRecorder } from '../ledger/ledger-recorder.js'
import { ledgerRoute } from '../ledger/ledger-route.js'
import type { SettlementLedger } from '../ledger/settlement-ledger.js'
import type { Store } from '../stores/store.js'
import { realpathSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { secretsOfUrl } from '../core/redact.js'
import { withRequestId } from '../http/request-id.js'
import { createAssetTable } from '../networks/assets.js'
import { connectionCauseOfCode } from '../transport/connection-cause.js'
import { assetTableEntries } from './cli-assets.js'
import { helpText, readCliConfig, type CliConfig } from './cli-config.js'
import { captureProcessOutput, cliLoggerOptions, connectionErrorLogger, requestContext, type CliLogger } from './cli-logging.js'
import { checkPackages, neededPackages, packageProblems } from './cli-packages.js'
import { classifyStoreError, runStartupChecks, StartupRefusal } from './cli-startup-checks.js'

/** A module of this package that loads optional packages (checked present by `checkPackages` first). */
async function load<T>(importing: () => Promise<T>, why: string): Promise<T> {
  try {
    return await importing()
  } catch (error) {
    const code = (error as { code?: string }).code
    const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
    throw new StartupRefusal([missing ? `${why} needs a package that is not installed (run with LOG_LEVEL=debug for which)` : `${why}: a module failed to load`])
  }
}

async function buildSchemes(config: CliConfig, logger: Logger): Promise<SchemeAdapter[]> {
  const schemes: SchemeAdapter[] = []
  const evmNetworks = config.networks.filter((network) => network.family === 'eip155')
  if (evmNetworks.length > 0) {
    const evm = await load(() => import('../evm/index.js'), 'an EVM network')
    // exact serves EIP-3009 and Permit2; with upto, evmSchemes builds both on one configuration (signers and their nonces shared).
    const evmConfig = {
      networks: evmNetworks.map((network) => ({
        network: network.name,
        rpcUrls: network.rpcUrls,
        restrictAssets: config.restrictAssets,
        assets: network.assets.map((asset) => ({ address: asset.address as `0x${string}`, name: asset.eip712!.name, version: asset.eip712!.version })),
      })),
      signers: config.evmPrivateKeys.map((key) => evm.privateKeySigner(key)),
      maxInFlightSettlesPerSigner: config.maxInFlightSettlesPerSigner,
      logger,
    }
    schemes.push(...(config.schemes.includes('upto') ? evm.evmSchemes(evmConfig) : [evm.exactEvm(evmConfig)]))
  }
  const solanaNetworks = config.networks.filter((network) => network.family === 'solana')
  if (solanaNetworks.length > 0) {
    const svm = await load(() => import('../svm/index.js'), 'a Solana network')
    const kit = await load(() => import('@solana/kit'), 'a Solana network')
    const feePayers = []
    for (const [index, key] of config.solanaFeePayerKeys.entries()) {
      try {
        feePayers.push(await kit.createKeyPairSignerFromBytes(key))
      } catch {
        throw new StartupRefusal([`SOLANA_FEE_PAYER_KEYS (key ${index + 1}) is not a valid Ed25519 keypair (its public half does not match its secret)`])
      }
    }
    schemes.push(
      svm.exactSvm({
        networks: solanaNetworks.map((network) => ({ network: network.name, rpcUrls: network.rpcUrls, restrictAssets: config.restrictAssets, assets: network.assets.map((asset) => asset.address) })),
        feePayers,
        maxInFlightSettlesPerSigner: config.maxInFlightSettlesPerSigner,
      }),
    )
  }
  logger.info({ event: 'configured', networks: config.networks.map((network) => network.name), schemes: config.schemes, restrictAssets: config.restrictAssets }, 'facilitator configured')
  return schemes
}

/** The store, and its settlement ledger when the store keeps one (SQLite, PostgreSQL). Its connection errors are JSON log lines. */
async function buildStore(config: CliConfig, logger: CliLogger, secrets: readonly string[]): Promise<{ store: Store; ledger?: SettlementLedger }> {
  const url = config.storeUrl
  if (url === 'memory') return { store: createMemoryStore() }
  if (url.startsWith('sqlite:')) {
    const sqlite = await load(() => import('../stores/sqlite/index.js'), 'STORE_URL=sqlite:…')
    let store: ReturnType<typeof sqlite.createSqliteStore>
    try {
      store = sqlite.createSqliteStore({ path: url.slice('sqlite:'.length) })
    } catch (error) {
      const finding = classifyStoreError(error, secrets)
      throw new StartupRefusal([finding && 'fatal' in finding ? finding.fatal : 'STORE_URL names a SQLite file that cannot be opened'])
    }
    return { store, ledger: store.ledger }
  }
  if (url.startsWith('postgres')) {
    const postgres = await load(() => import('../stores/postgres/index.js'), 'STORE_URL=postgres://…')
    const store = postgres.createPostgresStore({ connectionString: url, onConnectionError: connectionErrorLogger(logger, 'postgres', secrets) })
    return { store, ledger: store.ledger }
  }
  const redis = await load(() => import('../stores/redis-store.js'), 'STORE_URL=redis://…')
  return { store: redis.createRedisStore({ url, onConnectionError: connectionErrorLogger(logger, 'redis', secrets) }) }
}

/** What the process must never write: URLs' credentials and keys, tokens, private keys. */
function secretsOf(config: CliConfig): string[] {
  const found = new Set<string>()
  for (const network of config.networks) for (const url of network.rpcUrls) for (const secret of secretsOfUrl(url)) found.add(secret)
  if (config.storeUrl !== 'memory' && !config.storeUrl.startsWith('sqlite:')) for (const secret of secretsOfUrl(config.storeUrl)) found.add(secret)
  for (const token of [...config.apiTokens.keys(), ...config.adminTokens.keys()]) found.add(token)
  for (const key of config.evmPrivateKeys) found.add(key).add(key.slice(2))
  return [...found].filter((secret) => secret.length >= 4).sort((a, b) => b.length - a.length)
}

/** The networks behind each RPC host, for log lines that name the host. */
function networksByHost(config: CliConfig): Map<string, string[]> {
  const hosts = new Map<string, string[]>()
  for (const network of config.networks) {
    for (const url of network.rpcUrls) {
      let host: string
      try {
        host = new URL(url).host
      } catch {
        continue
      }
      const list = hosts.get(host) ?? []
      if (!list.includes(network.caip2)) list.push(network.caip2)
      hosts.set(host, list)
    }
  }
  return hosts
}

/** Why an RPC exchange failed, in words. */
function rpcCause(event: RpcResponseEvent): string {
  if (event.outcome === 'timeout') return 'no answer in time'
  if (event.outcome === 'http_error') return `HTTP ${event.status ?? 'error'}`
  return event.code ? connectionCauseOfCode(event.code) : 'the connection failed'
}

/** This package's version, from its package.json beside the running file. */
export function packageVersion(): string {
  const candidates: string[] = []
  try {
    if (process.argv[1]) candidates.push(dirname(realpathSync(process.argv[1])))
  } catch {
    // The script's path cannot be resolved: no candidate from it.
  }
  for (const start of candidates) {
    let dir = start
    for (let depth = 0; depth < 5; depth++) {
      try {
        const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string }
        if (manifest.name === 'x402-facilitator' && typeof manifest.version === 'string') return manifest.version
      } catch {
        // No manifest here: one level up.
      }
      dir = dirname(dir)
    }
  }
  return 'unknown'
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      const address = server.address()
      resolve(typeof address === 'object' && address ? address.port : port)
    })
  })
}

/** Says at start what is open to anyone, and which private routes no one can read. */
function warnOpenService(config: CliConfig, logger: Logger, served: { ledger: boolean; metricsPublic: boolean }): void {
  if (config.apiTokens.size === 0) {
    logger.warn({ event: 'settle_open', variable: 'API_TOKENS' }, 'POST /verify and /settle are open to anyone (API_TOKENS is not set): anyone who reaches this port can have the facilitator send settlements at its gas cost')
    if (['0.0.0.0', '::', ''].includes(config.host)) {
      logger.warn({ event: 'listening_open', host: config.host, variable: 'API_TOKENS' }, `listening on every interface (HOST=${config.host || '(all)'}) with no API_TOKENS: bind HOST=127.0.0.1 behind your own gateway, or set API_TOKENS`)
    }
  }
  if (config.adminTokens.size === 0) {
    const closed = [...(served.ledger ? ['/ledger'] : []), ...(served.metricsPublic ? [] : ['/metrics'])]
    if (closed.length > 0) logger.info({ event: 'admin_routes_closed', routes: closed, variable: 'ADMIN_TOKENS' }, `${closed.join(' and ')} answer 401 to everyone: set ADMIN_TOKENS to read them`)
  }
}

/**
 * Runs the facilitator from the environment until SIGTERM or SIGINT. Answers the
 * process exit code: 0 after a clean shutdown, 1 when it refused to start.
 */
export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${helpText()}\n`)
    return 0
  }
  if (argv.includes('--version') || argv.includes('-v')) {
    process.stdout.write(`${packageVersion()}\n`)
    return 0
  }
  const refuse = (lines: readonly string[]) => {
    for (const line of lines) process.stderr.write(`x402-facilitator: ${line}\n`)
    return 1
  }
  const read = readCliConfig(env)
  if (!read.ok) return refuse([...read.problems, 'not started; run with --help for every variable'])
  const config = read.config
  // Every package this configuration loads, checked at once: one start names all the missing ones.
  const packages = packageProblems(await checkPackages(neededPackages(config)))
  if (packages.length > 0) return refuse(packages)

  // Listened for from here. Before the service listens nothing is in flight: a signal ends the start at once.
  let listening = false
  let logStop: ((signal: string) => void) | undefined
  const stopSignal = new Promise<string>((resolve) => {
    const onSignal = (signal: string) => {
      if (listening) return resolve(signal)
      logStop?.(signal)
      process.exit(0)
    }
    process.once('SIGTERM', () => onSignal('SIGTERM'))
    process.once('SIGINT', () => onSignal('SIGINT'))
  })
  const secrets = secretsOf(config)
  let facilitator: Facilitator | undefined
  let store: Store | undefined
  let restoreOutput: (() => void) | undefined
  try {
    const { pino } = await load(() => import('pino'), 'logging')
    const logger = pino(cliLoggerOptions(config.logLevel)) as unknown as CliLogger
    // From here every line the process writes is JSON: dependencies' console output and node's warnings included.
    restoreOutput = captureProcessOutput(logger, secrets)
    logStop = (signal) => logger.info({ event: 'stopped', signal }, 'stopped before it was listening')
    const { createMetrics } = await load(() => import('../ops/metrics.js'), 'metrics')
    const metrics = createMetrics({ processMetrics: true })
    // An RPC exchange that failed or timed out: the transports fail over to the next URL (host only, never the path or a key).
    const hosts = networksByHost(config)
    const onRpc = (message: unknown) => {
      const event = message as RpcResponseEvent
      if (event.outcome === 'ok') return
      const networks = hosts.get(event.host) ?? []
      const cause = rpcCause(event)
      logger.warn(
        {
          event: 'rpc_failed',
          ...(networks.length === 1 ? { network: networks[0] } : { networks }),
          host: event.host,
          outcome: event.outcome,
          cause,
          ...(event.status === undefined ? {} : { status: event.status }),
          ...(event.code === undefined ? {} : { code: event.code }),
          durationMs: Math.round(event.durationMs),
        },
        `an RPC request to ${networks.join(', ') || 'a network'} failed: ${cause}`,
      )
    }
    diagnostics.subscribe(RPC_RESPONSE_CHANNEL, onRpc)
    const built = await buildStore(config, logger, secrets)
    store = built.store
    const ledger = built.ledger
    // Tokens of ASSETS_<NETWORK> with decimals and a symbol (and a price) are written in token units (and USD).
    const assets = createAssetTable(assetTableEntries(config.networks))
    const stats = createPublicStats({ store, assets })
    const catalog = createCatalog({ store, assets })
    const hooks = [stats.hooks, catalog.hooks, metrics.hooks, ...(ledger ? [createLedgerRecorder({ ledger })] : [])]
    facilitator = createFacilitator({ schemes: await buildSchemes(config, logger), store, hooks, logger })
    // Once, before listening: a wrong chain or a missing database ends the start; an outage is a warning and a red /readyz.
    await runStartupChecks({ facilitator, store, networks: config.networks, logger, secrets })

    // The statistics host: the page for people at /, its JSON beside it.
    const page = stats.page({ catalog })
    const statsHostRoutes: ExtraRoute[] = [stats.route(), ...catalog.routes(), page]
    const tokens = config.apiTokens
    const adminTokens = config.adminTokens
    const bearer = (request: Request) => /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
    // A service open to anyone keeps /metrics open as before; with any token set it is an operator's route.
    const metricsPublic = tokens.size === 0 && adminTokens.size === 0
    const requestId = { run: <T>(id: string, work: () => T): T => requestContext.run(id, work) }
    const handler = createHandler(facilitator, {
      routes: [...healthRoutes(facilitator), metrics.route('/metrics', { public: metricsPublic }), ...(ledger ? [ledgerRoute(ledger)] : []), ...(config.statsPort === undefined ? statsHostRoutes : [])],
      ...(tokens.size > 0
        ? {
            authenticate: (request: Request) => {
              const token = bearer(request)
              const name = token === undefined ? undefined : tokens.get(token)
              return name === undefined ? false : { clientId: name }
            },
          }
        : {}),
      // Private routes (/ledger, a protected /metrics) take ADMIN_TOKENS only, never a payment client's token; none set: closed.
      authorizeAdmin: (request: Request) => {
        const token = bearer(request)
        return token !== undefined && adminTokens.has(token)
      },
      ...(config.rateLimitVerify > 0 || config.rateLimitSettle > 0
        ? {
            rateLimit: {
              store,
              ...(config.rateLimitVerify > 0 ? { verify: { limit: config.rateLimitVerify, windowMs: 60_000 } } : {}),
              ...(config.rateLimitSettle > 0 ? { settle: { limit: config.rateLimitSettle, windowMs: 60_000 } } : {}),
            },
          }
        : {}),
      ...(config.trustProxyHops > 0 ? { trustProxy: { hops: config.trustProxyHops } } : config.clientIpHeader ? { trustProxy: { header: config.clientIpHeader } } : {}),
      requestId,
      onError: (fault) => logger.error({ event: 'http_fault', code: fault.code, status: fault.status, reason: fault.message }, 'request failed'),
    })
    const servers: Server[] = [createNodeServer(handler)]
    const port = await listen(servers[0]!, config.port, config.host)
    let statsPort: number | undefined
    if (config.statsPort !== undefined) {
      const statsServer = createNodeServer(withRequestId(stats.handler({ routes: [...catalog.routes(), page] }), requestId))
      servers.push(statsServer)
      statsPort = await listen(statsServer, config.statsPort, config.host)
    }
    listening = true
    warnOpenService(config, logger, { ledger: ledger !== undefined, metricsPublic })
    logger.info({ event: 'listening', host: config.host, port, statsPort: statsPort ?? port }, `facilitator listening on ${config.host}:${port}`)
    // Signers' gas money, read off the payment path: a gauge, and a warning when one runs low.
    const watch = watchSignerBalances(facilitator, {
      intervalMs: config.balanceIntervalMs,
      onBalance: (signer) => metrics.setSignerBalance(signer.network, signer.address, signer.balance),
      onLow: (signer) =>
        logger.warn({ event: 'signer_low_balance', network: signer.network, signer: signer.address, balance: signer.balance.toString(), minimum: signer.minimum.toString() }, 'a signer is running out of gas money'),
      onRecovered: (signer) => logger.info({ event: 'signer_balance_recovered', network: signer.network, signer: signer.address }, 'a signer has gas money again'),
    })

    const signal = await stopSignal
    logger.info({ event: 'shutting_down', signal }, 'stopping: no new connections; in-flight requests may finish')
    // Stop accepting; requests in flight (a settle waits for its confirmation or answers pending within its budget) finish.
    const closing = Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))))
    // A keep-alive connection whose request finishes now goes idle: closed then, not at its idle timeout.
    const sweeping = setInterval(() => servers.forEach((server) => server.closeIdleConnections()), 50)
    for (const server of servers) server.closeIdleConnections()
    const timedOut = await Promise.race([closing.then(() => false), new Promise<boolean>((resolve) => setTimeout(() => resolve(true), config.shutdownTimeoutMs).unref())])
    clearInterval(sweeping)
    if (timedOut) {
      logger.warn({ event: 'shutdown_timeout', timeoutMs: config.shutdownTimeoutMs }, 'requests still in flight at the shutdown bound were cut')
      for (const server of servers) server.closeAllConnections()
    }
    watch.stop()
    diagnostics.unsubscribe(RPC_RESPONSE_CHANNEL, onRpc)
    await facilitator.close()
    metrics.close()
    logger.info({ event: 'stopped' }, 'stopped')
    restoreOutput()
    return 0
  } catch (error) {
    restoreOutput?.()
    const known = error instanceof StartupRefusal || (error instanceof Error && error.name === 'FacilitatorError')
    const lines = error instanceof StartupRefusal ? [...error.lines] : [known ? (error as Error).message : 'an unexpected error stopped the start (set LOG_LEVEL=debug for details)']
    if (env.LOG_LEVEL === 'debug' && !known) process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    refuse(lines)
    await (facilitator ? facilitator.close() : store?.close?.())?.catch(() => undefined)
    return 1
  }
}

// Run when executed as the package's bin (not when imported by a test).
if (process.argv[1] && /(?:^|[\\/])(?:cli\.(?:c?js|ts)|x402-facilitator)$/.test(process.argv[1])) {
  void main(process.argv.slice(2), process.env).then((code) => {
    process.exitCode = code
    // Everything is closed by now; a connection or timer a dependency left open must not keep the process alive.
    setTimeout(() => process.exit(code), 2_000).unref()
  })
}
