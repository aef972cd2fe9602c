/**
 * `npm run demo`: two x402 payments, as a person would watch them, on local
 * chains only (anvil from npm, LiteSVM behind a loopback JSON-RPC).
 *
 * Our facilitator runs as the node:http example; a resource server built with
 * the official @x402/express middleware uses it over HTTP; the official
 * @x402/fetch client pays once with an EIP-3009 token on EVM and once with an
 * SPL token on Solana. Every step prints its result and its time. Exits 0 only
 * when both payments landed on chain; stops everything it started on success,
 * on error, on Ctrl-C and after a global timeout.
 *
 * The statistics host serves the page for people at `/`; its address is
 * printed. `npm run demo -- --keep` leaves the chains and servers up after the
 * payments, so a person can open the page, until Ctrl-C (then it exits 0).
 * The facilitator keeps its settlement records, statistics, catalog and ledger in a
 * SQLite file: in a temporary data directory removed at exit, or in the one named by
 * `npm run demo -- --data-dir <dir>` (or DEMO_DATA_DIR), which is kept, so that a
 * second run adds to the first one's statistics and ledger.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { x402Client } from '@x402/core/client'
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server'
import { ExactEvmScheme as ExactEvmClientScheme } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server'
import { paymentMiddleware } from '@x402/express'
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch'
import { ExactSvmScheme as ExactSvmClientScheme } from '@x402/svm/exact/client'
import { ExactSvmScheme as ExactSvmServerScheme } from '@x402/svm/exact/server'
import express from 'express'
import { formatUnits, getAddress } from 'viem'
import {
  createAssetTable,
  createFacilitator,
  settleResponseSchema,
  SOLANA_DEVNET,
  supportedResponseSchema,
  type SettleEvent,
  type SettleResponse,
  type VerifyEvent,
} from 'x402-facilitator'
import { CATALOG_LISTING_PATH, catalogListingSchema, createCatalog } from 'x402-facilitator/catalog'
import { LEDGER_PATH, ledgerPageSchema } from 'x402-facilitator/ledger'
import { createPublicStats, PUBLIC_STATS_PATH, publicStatsSchema } from 'x402-facilitator/stats'
import { exactEvm } from 'x402-facilitator/evm'
import { createNodeListener } from 'x402-facilitator/http'
import { exactSvm } from 'x402-facilitator/svm'
import { openDataDirectory } from '../examples/node-http/data-directory.js'
import { startNodeHttpServer } from '../examples/node-http/server.js'
import { listen } from '../test/support/listen.js'
import { startEvmFixture } from '../test/support/evm-fixture.js'
import { createPaymentScenario, startSolanaTestRpc, tokenBalance } from '../test/support/svm-fixtures.js'

/** The whole demo must finish within this, or it cleans up and fails. DEMO_TIMEOUT_MS overrides it (to try the timeout). */
const GLOBAL_TIMEOUT_MS = Number(process.env.DEMO_TIMEOUT_MS) || 120_000
/** `--keep`: after the payments, keep everything up for a person to look at, until Ctrl-C. */
const KEEP = process.argv.slice(2).includes('--keep')
/** What one request for the weather costs: 0.01 of a 6-decimal token. */
const PRICE = 10_000n
const DECIMALS = 6
const EVM_NETWORK = 'eip155:84532'

/** `--data-dir <dir>` (or `--data-dir=<dir>`, or DEMO_DATA_DIR): a data directory to keep; else a temporary one. */
function namedDataDir(): string | undefined {
  const args = process.argv.slice(2)
  const at = args.findIndex((arg) => arg === '--data-dir' || arg.startsWith('--data-dir='))
  if (at >= 0) return args[at]!.includes('=') ? args[at]!.slice('--data-dir='.length) : args[at + 1]
  return process.env.DEMO_DATA_DIR || undefined
}

// ---- output ---------------------------------------------------------------

const WIDTH = 72
let stepNumber = 0

/** `0.01 USDC (10000)`: token units for people, raw units for checking. */
const amount = (raw: bigint, symbol = 'USDC') => {
  const [whole, fraction = ''] = formatUnits(raw, DECIMALS).split('.')
  return `${whole}.${fraction.padEnd(2, '0')} ${symbol} (${raw})`
}
const short = (value: string) => (value.length > 20 ? `${value.slice(0, 8)}…${value.slice(-6)}` : value)
const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`
const detail = (label: string, value: string) => console.log(`      ${label.padEnd(18)}${value}`)

/** Runs one numbered step, then prints its title with its duration. */
async function step<T>(title: string, run: () => Promise<T>): Promise<T> {
  if (stopping) throw new Error('stopping')
  const number = String(++stepNumber).padStart(2)
  const started = performance.now()
  const running = run()
  inFlight = running
  try {
    const result = await running
    const elapsed = performance.now() - started
    console.log(`  ${number}. ${title.padEnd(WIDTH - 14)}${ms(elapsed).padStart(10)}`)
    return result
  } catch (error) {
    console.log(`  ${number}. ${title.padEnd(WIDTH - 14)}${'FAILED'.padStart(10)}`)
    throw error
  }
}

// ---- cleanup --------------------------------------------------------------

const closers: { name: string; close: () => Promise<void> }[] = []
let stopping = false
/** The step running now: a chain being started must be stopped too, so stopping waits for it. */
let inFlight: Promise<unknown> | undefined

/** Remembers how to stop something the demo started; once stopping, stops it at once. */
function track(name: string, close: () => Promise<void>): void {
  closers.push({ name, close })
  if (stopping) void stopAll()
}

/** Stops everything started so far, newest first, each within a few seconds. */
async function stopAll(): Promise<void> {
  while (closers.length > 0) {
    const { name, close } = closers.pop()!
    const bound = new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref())
    await Promise.race([close().catch((error) => console.error(`  (could not stop ${name}: ${String(error)})`)), bound])
  }
}

async function finish(code: number): Promise<never> {
  if (!stopping) {
    stopping = true
    // Let a starting process finish starting (bounded), so that it is tracked and stopped rather than orphaned.
    if (inFlight) await Promise.race([inFlight.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 15_000).unref())])
  }
  await stopAll()
  process.exit(code)
}

/** Set once the demo is done and kept up: Ctrl-C is then the expected way out, not an interruption. */
let kept = false
process.once('SIGINT', () => {
  console.log(kept ? '\n  stopping the chains and servers' : '\n  interrupted: stopping the chains and servers')
  void finish(kept ? 0 : 130)
})
process.once('SIGTERM', () => void finish(143))
const watchdog = setTimeout(() => {
  console.error(`\n  the demo did not finish within ${GLOBAL_TIMEOUT_MS / 1000} s: stopping`)
  void finish(1)
}, GLOBAL_TIMEOUT_MS)

// ---- the demo ---------------------------------------------------------------

async function main(): Promise<string> {
  const demoStarted = performance.now()
  console.log('\nx402-facilitator demo: pay for an API with the official x402 packages, through our facilitator\n')

  console.log('Local chains')
  const world = await step('anvil (chain 84532) + Multicall3 + EIP-3009 token', async () => {
    const fixture = await startEvmFixture()
    track('anvil', () => fixture.stop())
    return fixture
  })
  detail('rpc', world.node.rpcUrl)
  detail('token', `${getAddress(world.token.address)}  "${world.token.name}" version ${world.token.version}, ${DECIMALS} decimals`)
  const evmPayer = await step('EVM payer funded', () => world.newPayer(1_000_000n))
  detail('payer', `${evmPayer.address}  ${amount(1_000_000n)}`)
  detail('payTo', world.payTo)

  const solana = await step('LiteSVM behind a loopback JSON-RPC', async () => {
    const rpc = await startSolanaTestRpc()
    track('litesvm rpc', () => rpc.close())
    return rpc
  })
  detail('rpc', solana.url)
  const sol = await step('SPL mint, payer, recipient account, fee payer', () => createPaymentScenario(solana.svm, { balance: 1_000_000n }))
  detail('mint', `${sol.mint}  ${DECIMALS} decimals`)
  detail('payer', `${sol.payer.address}  ${amount(sol.balance)}`)
  detail('payTo', sol.payTo)
  detail('fee payer', `${sol.feePayer.address}  (the facilitator's)`)

  console.log('\nServers')
  // The paid API listens first: the catalog pins its /weather to the payTo of each network, since an
  // unpinned URL keeps only the first payTo paid (docs/catalog.md) and this one has two.
  const app = express()
  const shop = await listen(app)
  track('paid API', () => shop.close())
  // The test tokens stand in for USDC: price them so statistics and catalog show dollars.
  const assets = createAssetTable([
    { network: EVM_NETWORK, address: world.token.address, symbol: 'USDC', decimals: DECIMALS, usdPrice: 1 },
    { network: SOLANA_DEVNET, address: sol.mint, symbol: 'USDC', decimals: DECIMALS, usdPrice: 1 },
  ])
  const named = namedDataDir()
  const data = await step(`SQLite store in ${named ? 'the data directory' : 'a temporary data directory'}`, async () => {
    const dir = named ?? mkdtempSync(join(tmpdir(), 'x402-demo-'))
    if (!named) track('temporary data directory', async () => rmSync(dir, { recursive: true, force: true }))
    const opened = openDataDirectory(dir)
    track('SQLite store', () => opened.close())
    return opened
  })
  detail('file', `${data.file}${named ? '  (kept)' : '  (removed at exit)'}`)
  const store = data.store
  // The ledger is private: only a request with the operator's token reads it.
  const operatorToken = randomBytes(16).toString('hex')
  const stats = createPublicStats({ store, assets, cacheSeconds: 0 })
  const catalog = createCatalog({ store, assets, ttlSeconds: 0, resources: [{ url: `${shop.url}/weather`, payTo: [world.payTo, sol.payTo] }] })
  const verifications: VerifyEvent[] = []
  const settlements: SettleEvent[] = []
  const facilitator = createFacilitator({
    store,
    schemes: [
      exactEvm(world.adapterConfig()),
      exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: solana.url }], feePayers: [sol.feePayer], confirmPollIntervalMs: 20 }),
    ],
    hooks: [
      stats.hooks,
      catalog.hooks,
      ...data.hooks,
      { afterVerify: (event) => void verifications.push(event), afterSettle: (event) => void settlements.push(event) },
    ],
  })
  const facilitatorServer = await step('our facilitator (examples/node-http)', async () => {
    const server = await startNodeHttpServer(facilitator, {
      routes: [stats.route(), ...catalog.routes(), ...data.routes],
      // Payment routes stay open (as before); the private ledger route wants the operator's token.
      authenticate: (request, route) => route !== 'private' || request.headers.get('authorization') === `Bearer ${operatorToken}`,
    })
    track('facilitator', () => server.close())
    return server
  })
  detail('url', facilitatorServer.url)
  // The statistics host of SPEC.md ({stats_url}): the JSON and, at /, the same numbers as a page for people.
  const statsHost = await step('statistics host: JSON and the page for people', async () => {
    const page = stats.page({ catalog, assets, title: 'x402-facilitator demo: statistics' })
    const server = await listen(createNodeListener(stats.handler({ routes: [...catalog.routes(), page] })))
    track('statistics host', () => server.close())
    return server
  })
  detail('page', `${statsHost.url}/`)
  const supported = await step('GET /supported', async () => supportedResponseSchema.parse(await (await fetch(`${facilitatorServer.url}/supported`)).json()))
  for (const kind of supported.kinds) detail(`kind v${kind.x402Version}`, `${kind.scheme} ${kind.network}${kind.extra?.feePayer ? `  feePayer ${short(String(kind.extra.feePayer))}` : ''}`)
  for (const [family, signers] of Object.entries(supported.signers)) detail(`signers ${family}`, signers.map(short).join(', '))

  await step('paid API: Express + official @x402/express (v2)', async () => {
    const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorServer.url }))
      .register(EVM_NETWORK, new ExactEvmServerScheme())
      .register(SOLANA_DEVNET, new ExactSvmServerScheme())
    app.use(
      paymentMiddleware(
        {
          'GET /weather': {
            accepts: [
              {
                scheme: 'exact',
                network: EVM_NETWORK,
                payTo: world.payTo,
                price: { amount: PRICE.toString(), asset: world.token.address, extra: { name: world.token.name, version: world.token.version } },
              },
              { scheme: 'exact', network: SOLANA_DEVNET, payTo: sol.payTo, price: { amount: PRICE.toString(), asset: sol.mint } },
            ],
            description: 'Weather, paid per request',
            mimeType: 'application/json',
          },
        },
        server,
      ),
    )
    app.get('/weather', (_req, res) => void res.json({ weather: 'sunny', temperatureC: 21 }))
  })
  detail('url', `${shop.url}/weather  (facilitator: ${facilitatorServer.url})`)

  console.log('\nThe 402 challenge')
  const challenge = await step('GET /weather without payment', async () => {
    const response = await fetch(`${shop.url}/weather`)
    if (response.status !== 402) throw new Error(`expected 402, got ${response.status}`)
    const header = response.headers.get('PAYMENT-REQUIRED')
    if (!header) throw new Error('the 402 has no PAYMENT-REQUIRED header')
    return JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as {
      x402Version: number
      accepts: { scheme: string; network: string; amount: string; asset: string; payTo: string; extra?: Record<string, unknown> }[]
    }
  })
  detail('status', `402 Payment Required, x402Version ${challenge.x402Version}`)
  for (const offer of challenge.accepts) {
    detail('accepts', `${offer.scheme} ${offer.network}  ${amount(BigInt(offer.amount))}  asset ${short(offer.asset)}  payTo ${short(offer.payTo)}`)
  }

  const evmBalance = (address: `0x${string}`) =>
    world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'balanceOf', args: [address] }) as Promise<bigint>

  const evmTx = await pay({
    title: 'EVM (anvil)',
    client: new x402Client().setSpendControls(false).register(EVM_NETWORK, new ExactEvmClientScheme(evmPayer)),
    balances: async () => ({ payer: await evmBalance(evmPayer.address), payTo: await evmBalance(world.payTo) }),
    confirm: async (transaction) => {
      const receipt = await world.node.publicClient.getTransactionReceipt({ hash: transaction as `0x${string}` })
      if (receipt.status !== 'success') throw new Error(`transaction ${transaction} reverted`)
      return `block ${receipt.blockNumber}, gas ${receipt.gasUsed}`
    },
  })
  const solTx = await pay({
    title: 'Solana (LiteSVM)',
    client: new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new ExactSvmClientScheme(sol.payer, { rpcUrl: solana.url })),
    balances: async () => ({ payer: tokenBalance(solana.svm, sol.payerAta), payTo: tokenBalance(solana.svm, sol.payToAta) }),
    confirm: async () => 'confirmed (signature status polled by the facilitator)',
  })

  /** One paid request: the official client answers the 402 by paying; our facilitator verifies and settles. */
  async function pay(input: {
    title: string
    client: x402Client
    balances: () => Promise<{ payer: bigint; payTo: bigint }>
    confirm: (transaction: string) => Promise<string>
  }): Promise<string> {
    console.log(`\nPayment on ${input.title}`)
    const before = await input.balances()
    const firstVerify = verifications.length
    const firstSettle = settlements.length
    const { response, settlement, body } = await step('@x402/fetch: GET /weather → 402 → pay → 200', async () => {
      const response = await wrapFetchWithPayment(fetch, input.client)(`${shop.url}/weather`)
      const body = await response.text()
      if (response.status !== 200) throw new Error(`the paid request answered ${response.status}: ${body}`)
      const header = response.headers.get('PAYMENT-RESPONSE')
      if (!header) throw new Error('the paid response has no PAYMENT-RESPONSE header')
      return { response, settlement: settleResponseSchema.parse(decodePaymentResponseHeader(header)), body }
    })
    const verify = verifications[firstVerify]
    const settle = settlements[firstSettle]
    if (verify) detail('verify', `isValid ${verify.result.isValid}, payer ${short(verify.result.payer ?? '?')}  (${ms(verify.durationMs)} in the facilitator)`)
    if (settle) detail('settle', `success ${settle.result.success}, network ${settle.result.network}  (${ms(settle.durationMs)} in the facilitator)`)
    detail('response', `${response.status} ${body}`)
    detail('PAYMENT-RESPONSE', `success ${settlement.success}, payer ${short(settlement.payer ?? '?')}`)
    detail('transaction', settlement.transaction)
    if (!settlement.success || !verify?.result.isValid || settle?.result.transaction !== settlement.transaction) {
      throw new Error(`the payment did not land: ${JSON.stringify(settlement)}`)
    }
    const onChain = await step('on chain', () => input.confirm(settlement.transaction))
    detail('status', onChain)
    const after = await input.balances()
    detail('payer', `${amount(before.payer)} → ${amount(after.payer)}`)
    detail('payTo', `${amount(before.payTo)} → ${amount(after.payTo)}`)
    if (before.payer - after.payer !== PRICE || after.payTo - before.payTo !== PRICE) {
      throw new Error(`the balances did not move by ${amount(PRICE)}`)
    }
    return (settlement satisfies SettleResponse).transaction
  }

  console.log('\nWhat the facilitator publishes')
  // After-hooks record in the background; let them land before reading.
  await facilitator.drain()
  const publicStats = await step(`GET ${PUBLIC_STATS_PATH}`, async () => publicStatsSchema.parse(await (await fetch(`${facilitatorServer.url}${PUBLIC_STATS_PATH}`)).json()))
  const all = publicStats.usage.allTime
  detail('verifications', `${all.verifications.total} (valid ${all.verifications.valid}, success rate ${all.verifications.successRate ?? '-'} %)`)
  detail('settlements', `${all.settlements.total} (succeeded ${all.settlements.succeeded}, success rate ${all.settlements.successRate ?? '-'} %)`)
  detail('volume', `$${all.volumeUsd} from ${all.payers} payers`)
  for (const entry of all.volume) detail('', `${entry.network}  ${entry.amount} ${entry.symbol ?? ''} in ${entry.settlements} settlement(s)`)
  const window = publicStats.performance.find((p) => p.window === 'all') ?? publicStats.performance.at(-1)
  for (const op of window?.operations ?? []) detail(`${op.operation} p50`, `${ms(op.p50Ms)}  (p95 ${ms(op.p95Ms)}, n=${op.count})  ${op.network}`)
  const confirmation = publicStats.solanaConfirmation.find((p) => p.window === 'all')
  for (const entry of confirmation?.networks ?? []) detail('sol confirm', `p50 ${ms(entry.p50Ms)}, n=${entry.count}  ${entry.network}`)

  const listing = await step(`GET ${CATALOG_LISTING_PATH}`, async () => catalogListingSchema.parse(await (await fetch(`${facilitatorServer.url}${CATALOG_LISTING_PATH}`)).json()))
  for (const resource of listing.resources) {
    detail('resource', `${resource.name}  ${resource.url}`)
    detail('', `${resource.paymentRequirements.network}  calls ${resource.trustScore.calls}, value ${resource.trustScore.valueProcessed}, last called ${resource.trustScore.lastCalled}`)
  }

  const page = await step('GET / on the statistics host: the page for people', async () => {
    const response = await fetch(`${statsHost.url}/`)
    const html = await response.text()
    if (response.status !== 200 || !response.headers.get('content-type')?.startsWith('text/html')) throw new Error(`the page answered ${response.status}`)
    return html
  })
  detail('page', `${statsHost.url}/  (${(page.length / 1024).toFixed(0)} KiB of HTML, no script)`)
  const ledgerUrl = `${facilitatorServer.url}${LEDGER_PATH}`
  const refused = await step(`GET ${LEDGER_PATH} without the operator's token`, async () => (await fetch(ledgerUrl)).status)
  detail('status', `${refused} (the ledger is private)`)
  const ledger = await step(`GET ${LEDGER_PATH} with it`, async () =>
    ledgerPageSchema.parse(await (await fetch(`${ledgerUrl}?limit=10`, { headers: { authorization: `Bearer ${operatorToken}` } })).json()),
  )
  for (const entry of ledger.entries) {
    detail('ledger', `${entry.recordedAt.slice(11, 23)}  ${entry.status}  ${entry.network}  ${amount(BigInt(entry.amount))}  ${short(entry.transaction ?? '-')}`)
  }

  const total = performance.now() - demoStarted
  console.log(`\nDone: 2 payments verified, settled and on chain in ${ms(total)}`)
  detail('EVM tx', evmTx)
  detail('Solana tx', solTx)
  detail('statistics page', `${statsHost.url}/`)
  return statsHost.url
}

main().then(
  (statsUrl) => {
    clearTimeout(watchdog)
    if (!KEEP) return void finish(0)
    kept = true
    console.log(`\nKept up (--keep): open ${statsUrl}/ in a browser. The chains, the facilitator and the paid API stay up; Ctrl-C stops them.`)
  },
  (error: unknown) => {
    // A step refused because Ctrl-C or the watchdog is already stopping everything: nothing to add.
    if (stopping) return
    console.error(`\n  demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    void finish(1)
  },
)
