#!/usr/bin/env node
import diagnostics from 'node:diagnostics_channel'
import type { Server } from 'node:http'
import { RPC_RESPONSE_CHANNEL, type RpcResponseEvent } from '../transport/keep-alive-post.js'
import { createFacilitator, type Facilitator } from '../core/facilitator.js'
import { watchSignerBalances } from '../core/signer-balance-watch.js'
import type { SchemeAdapter } from '../core/adapter.js'
import type { Logger } from '../core/logging-hooks.js'
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
import { helpText, readCliConfig, type CliConfig } from './cli-config.js'

/** A module the command loads only when the configuration needs it, with what to install. */
async function load<T>(importing: () => Promise<T>, why: string, install: string): Promise<T> {
  try {
    return await importing()
  } catch (error) {
    const code = (error as { code?: string }).code
    const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
    throw new StartupError(missing ? `${why} needs packages that are not installed: npm install ${install}` : `${why}: a module failed to load`)
  }
}

/** A refusal to start: printed as one line, without a stack trace. */
class StartupError extends Error {}

async function buildSchemes(config: CliConfig, logger: Logger): Promise<SchemeAdapter[]> {
  const schemes: SchemeAdapter[] = []
  const evmNetworks = config.networks.filter((network) => network.family === 'eip155')
  if (evmNetworks.length > 0) {
    const evm = await load(() => import('../evm/index.js'), 'an EVM network', 'viem')
    // exact serves EIP-3009 and Permit2; with upto, evmSchemes builds both on one configuration (signers and their nonces shared).
    const evmConfig = {
      networks: evmNetworks.map((network) => ({
        network: network.name,
        rpcUrls: network.rpcUrls,
        restrictAssets: config.restrictAssets,
        assets: network.assets.map((entry) => {
          const [address, name, version] = entry.split(':') as [`0x${string}`, string, string]
          return { address, name, version }
        }),
      })),
      signers: config.evmPrivateKeys.map((key) => evm.privateKeySigner(key)),
      maxInFlightSettlesPerSigner: config.maxInFlightSettlesPerSigner,
      logger,
    }
    schemes.push(...(config.schemes.includes('upto') ? evm.evmSchemes(evmConfig) : [evm.exactEvm(evmConfig)]))
  }
  const solanaNetworks = config.networks.filter((network) => network.family === 'solana')
  if (solanaNetworks.length > 0) {
    const svm = await load(() => import('../svm/index.js'), 'a Solana network', '@solana/kit @solana-program/token @solana-program/compute-budget @solana-program/system')
    const kit = await load(() => import('@solana/kit'), 'a Solana network', '@solana/kit')
    const feePayers = []
    for (const [index, key] of config.solanaFeePayerKeys.entries()) {
      try {
        feePayers.push(await kit.createKeyPairSignerFromBytes(key))
      } catch {
        throw new StartupError(`SOLANA_FEE_PAYER_KEYS (key ${index + 1}) is not a valid Ed25519 keypair (its public half does not match its secret)`)
      }
    }
    schemes.push(
      svm.exactSvm({
        networks: solanaNetworks.map((network) => ({ network: network.name, rpcUrls: network.rpcUrls, restrictAssets: config.restrictAssets, assets: network.assets })),
        feePayers,
        maxInFlightSettlesPerSigner: config.maxInFlightSettlesPerSigner,
      }),
    )
  }
  logger.info({ event: 'configured', networks: config.networks.map((network) => network.name), schemes: config.schemes, restrictAssets: config.restrictAssets }, 'facilitator configured')
  return schemes
}

/** The store, and its settlement ledger when the store keeps one (SQLite, PostgreSQL). */
async function buildStore(config: CliConfig): Promise<{ store: Store; ledger?: SettlementLedger }> {
  const url = config.storeUrl
  if (url === 'memory') return { store: createMemoryStore() }
  if (url.startsWith('sqlite:')) {
    const sqlite = await load(() => import('../stores/sqlite/index.js'), 'STORE_URL=sqlite:…', 'better-sqlite3')
    const store = sqlite.createSqliteStore({ path: url.slice('sqlite:'.length) })
    return { store, ledger: store.ledger }
  }
  if (url.startsWith('postgres')) {
    const postgres = await load(() => import('../stores/postgres/index.js'), 'STORE_URL=postgres://…', 'pg')
    const store = postgres.createPostgresStore({ connectionString: url })
    return { store, ledger: store.ledger }
  }
  const redis = await load(() => import('../stores/redis-store.js'), 'STORE_URL=redis://…', 'ioredis')
  return { store: redis.createRedisStore({ url }) }
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
  const read = readCliConfig(env)
  if (!read.ok) {
    for (const problem of read.problems) process.stderr.write(`x402-facilitator: ${problem}\n`)
    process.stderr.write('x402-facilitator: not started; run with --help for every variable\n')
    return 1
  }
  const config = read.config
  let facilitator: Facilitator | undefined
  try {
    const { pino } = await load(() => import('pino'), 'logging', 'pino')
    const logger = pino({ level: config.logLevel, base: { service: 'x402-facilitator' } })
    const { createMetrics } = await load(() => import('../ops/metrics.js'), 'metrics', 'prom-client')
    const metrics = createMetrics({ processMetrics: true })
    // An RPC exchange that failed or timed out: the transports fail over to the next URL (host only, never the path or a key).
    const onRpc = (message: unknown) => {
      const event = message as RpcResponseEvent
      if (event.outcome !== 'ok') logger.warn({ event: 'rpc_failed', host: event.host, outcome: event.outcome, status: event.status, durationMs: Math.round(event.durationMs) }, 'an RPC request failed')
    }
    diagnostics.subscribe(RPC_RESPONSE_CHANNEL, onRpc)
    const { store, ledger } = await buildStore(config)
    const stats = createPublicStats({ store })
    const catalog = createCatalog({ store })
    const hooks = [stats.hooks, catalog.hooks, metrics.hooks, ...(ledger ? [createLedgerRecorder({ ledger })] : [])]
    facilitator = createFacilitator({ schemes: await buildSchemes(config, logger), store, hooks, logger })
    const publicRoutes: ExtraRoute[] = [stats.route(), ...catalog.routes()]
    const tokens = config.apiTokens
    const adminTokens = config.adminTokens
    const bearer = (request: Request) => /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1]
    // A service open to anyone keeps /metrics open as before; with any token set it is an operator's route.
    const metricsPublic = tokens.size === 0 && adminTokens.size === 0
    const handler = createHandler(facilitator, {
      routes: [...healthRoutes(facilitator), metrics.route('/metrics', { public: metricsPublic }), ...(ledger ? [ledgerRoute(ledger)] : []), ...(config.statsPort === undefined ? publicRoutes : [])],
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
      onError: (fault) => logger.error({ event: 'http_fault', code: fault.code, status: fault.status, reason: fault.message }, 'request failed'),
    })
    const servers: Server[] = [createNodeServer(handler)]
    const port = await listen(servers[0]!, config.port, config.host)
    let statsPort: number | undefined
    if (config.statsPort !== undefined) {
      const statsServer = createNodeServer(stats.handler({ routes: catalog.routes() }))
      servers.push(statsServer)
      statsPort = await listen(statsServer, config.statsPort, config.host)
    }
    warnOpenService(config, logger, { ledger: ledger !== undefined, metricsPublic })
    logger.info({ event: 'listening', host: config.host, port, statsPort }, `facilitator listening on ${config.host}:${port}`)
    // Signers' gas money, read off the payment path: a gauge, and a warning when one runs low.
    const watch = watchSignerBalances(facilitator, {
      intervalMs: config.balanceIntervalMs,
      onBalance: (signer) => metrics.setSignerBalance(signer.network, signer.address, signer.balance),
      onLow: (signer) =>
        logger.warn({ event: 'signer_low_balance', network: signer.network, signer: signer.address, balance: signer.balance.toString(), minimum: signer.minimum.toString() }, 'a signer is running out of gas money'),
      onRecovered: (signer) => logger.info({ event: 'signer_balance_recovered', network: signer.network, signer: signer.address }, 'a signer has gas money again'),
    })

    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'))
      process.once('SIGINT', () => resolve('SIGINT'))
    })
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
    return 0
  } catch (error) {
    const message = error instanceof StartupError || (error instanceof Error && error.name === 'FacilitatorError') ? error.message : 'an unexpected error stopped the start (set LOG_LEVEL=debug for details)'
    if (env.LOG_LEVEL === 'debug' && !(error instanceof StartupError)) process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.stderr.write(`x402-facilitator: ${message}\n`)
    await facilitator?.close().catch(() => undefined)
    return 1
  }
}

// Run when executed as the package's bin (not when imported by a test).
if (process.argv[1] && /(?:^|[\\/])(?:cli\.(?:c?js|ts)|x402-facilitator)$/.test(process.argv[1])) {
  void main(process.argv.slice(2), process.env).then((code) => {
    process.exitCode = code
  })
}
