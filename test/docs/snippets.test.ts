import { execFileSync, spawn } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'tsup'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import tsupConfig from '../../tsup.config.js'
import { startAnvil, type AnvilNode } from '../support/anvil.js'
import { deployTestToken, multicall3RuntimeCode } from '../support/evm-contracts.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'
import { inPool, runSnippet, type SnippetRun } from './run-snippets.js'
import { checkSnippets, exampleSnippets, markdownSnippets, type Snippet, type SnippetProblem } from './snippets.js'
import { PUBLIC_ENTRIES } from '../package/public-names.js'

// Every TypeScript block of the docs and every `@example` of the public API is compiled against
// the built package's types (`x402-facilitator/evm` resolves through package.json `exports` to
// dist/evm/index.d.cts), and every complete block of the docs is run, as a newcomer would: in a
// project `npm init -y` made (CommonJS on npm 11), with the built package in its node_modules,
// by `npx tsx snippet.ts`, with harmless environment values, on loopback only (see
// snippet-preload.cjs). A block that starts servers must start them and answer HTTP; any other
// must exit 0. Excerpts are marked `<!-- snippet: partial -->` before the fence (or `// partial`
// as an example's first line) and only parsed; a complete block that needs what the test does
// not reach is marked `<!-- snippet: not run: <why> -->`, compiled and not run. `@example`s
// compile as ES modules (they are read in editors, not run).
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }

// The sources of the package's entry points, by subpath (tsup.config.ts builds them): the ones the public surface pins.
const ENTRIES: Record<string, string> = Object.fromEntries(Object.entries(PUBLIC_ENTRIES).map(([subpath, { source }]) => [subpath, source]))

const markdownFiles = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]

/** anvil's first development key: what the snippets' facilitator keys are set to (and the local-development snippet names). */
const ANVIL_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'
const SHOP_ADDRESS = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const ADMIN_TOKEN = 'snippet-admin-token'
/** Per snippet: to exit, or to start its servers and answer (tsx compiles it first; the machine may be busy). */
const RUN_TIMEOUT_MS = 60_000

let scratch = ''
let projectType = ''
let snippets: Snippet[] = []
let problems: SnippetProblem[] = []
let anvil: AnvilNode | undefined
let redis: RedisServer | undefined
/** What beforeAll started, for afterAll to stop even when beforeAll failed midway. */
const started: { services?: Promise<unknown>; typeBuild?: ReturnType<typeof spawn> } = {}
let env: Record<string, string> = {}
const runs = new Map<Snippet, SnippetRun>()
let paywallWithoutShop: SnippetRun | undefined
let outbound: SnippetRun | undefined

/** The blocks that are run: complete ones (neither partial nor marked not run). */
const runnable = (snippet: Snippet) => snippet.file.endsWith('.md') && !snippet.partial && snippet.notRun === undefined
const serversOf = (code: string) => code.match(/\.listen\(/g)?.length ?? 0
const PROBES = [{ path: '/' }, { path: '/supported' }, { path: '/public/stats' }, { path: '/ledger', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }]

beforeAll(async () => {
  const t0 = performance.now()
  const took = (from: number) => `${((performance.now() - from) / 1000).toFixed(1)} s`
  // The newcomer's project: `npm init -y` in an empty folder, then the package and its peers in
  // node_modules (the repository's own, linked; the package built from the sources).
  scratch = mkdtempSync(join(tmpdir(), 'x402-snippets-'))
  execFileSync('npm', ['init', '-y'], { cwd: scratch, stdio: 'pipe' })
  projectType = (JSON.parse(readFileSync(join(scratch, 'package.json'), 'utf8')) as { type?: string }).type ?? '(none: CommonJS)'
  const modules = join(scratch, 'node_modules')
  mkdirSync(modules)
  for (const name of readdirSync(join(root, 'node_modules'))) {
    if (name === '.cache' || name === 'x402-facilitator' || name.startsWith('.package-lock')) continue
    symlinkSync(realpathSync(join(root, 'node_modules', name)), join(modules, name))
  }
  const pkg = join(modules, 'x402-facilitator')
  mkdirSync(pkg)
  copyFileSync(join(root, 'package.json'), join(pkg, 'package.json'))
  // `@example`s compile as ES modules, in a folder of their own.
  mkdirSync(join(scratch, 'esm'))
  writeFileSync(join(scratch, 'esm/package.json'), JSON.stringify({ type: 'module' }))

  // The types take long to build (rollup of the declarations): they build in a child process while
  // the JavaScript (esbuild, seconds) is built here and the snippets run on it.
  const typesDir = join(scratch, 'types')
  const types = new Promise<void>((done, fail) => {
    const child = spawn(process.execPath, [join(root, 'node_modules/tsup/dist/cli-default.js'), '--dts-only', '--out-dir', typesDir], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] })
    started.typeBuild = child
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.once('exit', (code) => (code === 0 ? done() : fail(new Error(`the type build failed (${code}): ${stderr.slice(-2_000)}`))))
  })
  // Failures are awaited below; until then they are not unhandled.
  types.catch(() => undefined)
  const services = Promise.all([startAnvilAsDocumented().then((node) => (anvil = node)), startRedisServer().then((server) => (redis = server))])
  started.services = services.catch(() => undefined)
  await build({ ...tsupConfig, dts: false, sourcemap: false, clean: true, silent: true, config: false, outDir: join(pkg, 'dist') } as Parameters<typeof build>[0])
  await services
  if (!anvil || !redis) throw new Error('the services did not start')
  const tRuns = performance.now()

  snippets = [
    ...markdownFiles.flatMap((file) => markdownSnippets(join(root, file), root)),
    ...exampleSnippets(Object.values(ENTRIES).map((file) => join(root, file)), root),
    // Two wrong snippets that must be reported, to keep the check itself honest.
    { file: '(self-test)', line: 10, partial: false, code: "import { createFacilitator } from 'x402-facilitator'\ncreateFacilitator({ schemes: [], networks: { 'eip155:8453': {} } })" },
    { file: '(self-test partial)', line: 20, partial: true, code: 'const a = schemes\nconst = 1' },
    // A top-level await, which the `npm init -y` project (CommonJS) refuses.
    { file: '(self-test commonjs)', line: 30, partial: false, code: "import { createMemoryStore } from 'x402-facilitator'\nawait createMemoryStore().get('x')" },
  ]

  // Harmless values: anvil's development key, RPC URLs on a closed loopback port, a fresh Solana
  // key, a Redis of the test's own. Nothing of the test's environment leaks in.
  const closed = `http://127.0.0.1:${await closedPort()}`
  const solana = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' })
  const solanaKey = [...Buffer.from(solana.d!, 'base64url'), ...Buffer.from(solana.x!, 'base64url')]
  env = {
    PATH: process.env.PATH ?? '',
    HOME: scratch,
    TMPDIR: tmpdir(),
    FACILITATOR_KEY: ANVIL_KEY,
    EVM_FACILITATOR_KEY: ANVIL_KEY,
    RPC_URL: closed,
    BASE_RPC_URL: closed,
    BASE_SEPOLIA_RPC_URL: closed,
    SOLANA_RPC_URL: closed,
    SOLANA_FEE_PAYER_KEY: JSON.stringify(solanaKey),
    SHOP_ADDRESS,
    ADMIN_TOKEN,
    REDIS_URL: redis.url,
    // docs/local-development.md names anvil at 127.0.0.1:8545: the test's anvil answers there.
    X402_SNIPPET_PORT_MAP: `8545=${anvil.port}`,
  }
  const toRun = snippets.filter(runnable)
  const results = await inPool(toRun, 2, (snippet, index) =>
    runSnippet({ directory: join(scratch, 'runs', String(index)), code: snippet.code, env, servers: serversOf(snippet.code), timeoutMs: RUN_TIMEOUT_MS, probePaths: PROBES }),
  )
  toRun.forEach((snippet, index) => runs.set(snippet, results[index]!))
  // The runner's own check: a snippet that reaches for the internet is refused and caught doing it.
  outbound = await runSnippet({
    directory: join(scratch, 'runs', 'outbound'),
    code: "fetch('https://example.com/').then(() => console.log('reached'), () => console.log('refused'))\n",
    env,
    servers: 0,
    timeoutMs: RUN_TIMEOUT_MS,
    probePaths: [],
  })
  // The paywall block once more, its shop address unset, as a newcomer would first run it.
  const paywall = toRun.find((snippet) => snippet.code.includes('createPaywall('))
  if (paywall) {
    const { SHOP_ADDRESS: _unset, ...without } = env
    paywallWithoutShop = await runSnippet({ directory: join(scratch, 'runs', 'paywall-unset'), code: paywall.code, env: without, servers: 1, timeoutMs: RUN_TIMEOUT_MS, probePaths: PROBES })
  }

  const runsTook = took(tRuns)
  await types
  const tCheck = performance.now()
  cpSync(typesDir, join(pkg, 'dist'), { recursive: true })
  // Markdown blocks compile in the `npm init -y` project (CommonJS) and, as the README says they
  // may, as ES modules too; examples as ES modules.
  const asEsm = snippets.filter((snippet) => snippet.file.endsWith('.md')).map((snippet) => ({ ...snippet, esm: true }))
  problems = checkSnippets(
    [...snippets, ...asEsm],
    (snippet, index) => join(scratch, snippet.esm || snippet.file.startsWith('src/') ? 'esm' : '', `snippet-${String(index).padStart(3, '0')}.ts`),
    (path, text) => writeFileSync(path, text),
  )
  // X402_SNIPPETS_VERBOSE=1 prints what every run did.
  if (process.env.X402_SNIPPETS_VERBOSE) for (const [snippet, run] of runs) console.info(summary(snippet, run))
  console.info(`[measure] docs snippets: ${runs.size + 2} runs in ${runsTook} (beside the type build), type-check ${took(tCheck)}, all ${took(t0)}`)
}, 400_000)

afterAll(async () => {
  const typeBuild = started.typeBuild
  if (typeBuild && typeBuild.exitCode === null && typeBuild.signalCode === null) typeBuild.kill('SIGKILL')
  await started.services
  await Promise.allSettled([anvil?.stop(), redis?.stop()])
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

/**
 * anvil as docs/local-development.md describes it: chain 31337, Multicall3 at the address the
 * first deployment of the first development account gets, and an EIP-3009 "USD Coin" at the
 * second's (its nonce 0 goes to a transfer, so the token is deployed with nonce 1).
 */
async function startAnvilAsDocumented(): Promise<AnvilNode> {
  const node = await startAnvil()
  try {
    const deployer = node.accounts[0]!
    const hash = await node.walletClient().sendTransaction({ account: deployer, chain: node.chain, to: node.accounts[1]!.address, value: 1n })
    await node.publicClient.waitForTransactionReceipt({ hash })
    const token = await deployTestToken(node, { name: 'USD Coin', version: '2' })
    if (token.address.toLowerCase() !== '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512') throw new Error(`the test token landed at ${token.address}`)
    await node.testClient.setCode({ address: '0x5FbDB2315678afecb367f032d93F642f64180aa3', bytecode: multicall3RuntimeCode() })
    return node
  } catch (error) {
    await node.stop()
    throw error
  }
}

/** A loopback port nothing listens on (taken, then freed). */
function closedPort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer()
    server.once('error', fail)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => done(port))
    })
  })
}

const problemsIn = (file: string) => problems.filter((problem) => problem.at.startsWith(file.endsWith('/') ? file : `${file}:`)).map((problem) => `${problem.at}: ${problem.message}`)

/** What a run did, in a line per fact, for assertions that show everything when they fail. */
function summary(snippet: Snippet, run: SnippetRun): string {
  return [
    `${snippet.file}:${snippet.line} (${run.ms} ms, exit ${run.exitCode}${run.timedOut ? ', timed out' : ''})`,
    `listening: ${JSON.stringify(run.listening)}; blocked: ${JSON.stringify(run.blocked)}`,
    ...Object.entries(run.probes).map(([asked, probes]) => `:${asked} ${probes.map((p) => `${p.path} ${p.status}`).join(', ')}`),
    `stdout: ${run.stdout.slice(-1_500)}`,
    `stderr: ${run.stderr.slice(-3_000)}`,
  ].join('\n')
}

function runOf(file: string, marker: string): { snippet: Snippet; run: SnippetRun } {
  const snippet = [...runs.keys()].find((s) => s.file === file && s.code.includes(marker))
  if (!snippet) throw new Error(`no block of ${file} containing ${marker} was run`)
  return { snippet, run: runs.get(snippet)! }
}

const decodeHeader = (value: string | undefined) => JSON.parse(Buffer.from(value ?? '', 'base64').toString('utf8')) as { accepts: { payTo: string }[] }

describe('documentation snippets', () => {
  it('knows the source of every subpath the package exports', () => {
    expect(Object.keys(manifest.exports).filter((key) => key !== './package.json').sort()).toEqual(Object.keys(ENTRIES).sort())
  })

  it('reports a wrong snippet at its line, and a partial one only for its syntax', () => {
    const wrong = problemsIn('(self-test)')
    expect(wrong.length).toBeGreaterThan(0)
    expect(wrong.every((problem) => problem.startsWith('(self-test):11: '))).toBe(true)
    const partial = problemsIn('(self-test partial)')
    expect(partial.length).toBeGreaterThan(0)
    // `schemes` is not in scope, but a partial block is only parsed: the one problem is line 21's syntax.
    expect(partial.every((problem) => problem.startsWith('(self-test partial):21: (partial, syntax) '))).toBe(true)
    expect(problemsIn('(self-test commonjs)')).toEqual([expect.stringMatching(/^\(self-test commonjs\):31: TS1309: .*CommonJS.*top level/)])
  })

  it('runs a snippet on loopback only: a connection beyond it is refused and reported', () => {
    expect(outbound).toMatchObject({ exitCode: 0, blocked: ['example.com'], timedOut: false })
    expect(outbound!.stdout.trim()).toBe('refused')
  })

  it('finds the blocks and the public examples', () => {
    const fromMarkdown = snippets.filter((snippet) => snippet.file.endsWith('.md'))
    const examples = snippets.filter((snippet) => snippet.file.startsWith('src/'))
    expect(fromMarkdown.length).toBeGreaterThan(5)
    expect(examples.length).toBeGreaterThan(10)
    expect(examples.some((snippet) => snippet.file === 'src/facilitator/facilitator.ts')).toBe(true)
    // Most blocks run; those that do not say why.
    expect(runs.size).toBeGreaterThanOrEqual(10)
    for (const snippet of fromMarkdown.filter((s) => s.notRun !== undefined)) expect(snippet.notRun!.length, `${snippet.file}:${snippet.line}`).toBeGreaterThan(10)
  })

  it.each(markdownFiles)('%s: every TypeScript block compiles in a project npm init -y made, and as an ES module', (file) => {
    expect(projectType).toMatch(/commonjs|CommonJS/)
    expect(problemsIn(file)).toEqual([])
  })

  it('every @example of the public API compiles', () => {
    expect(problemsIn('src/')).toEqual([])
  })

  it.each(markdownFiles)('%s: every complete block runs as written, on loopback only', (file) => {
    for (const [snippet, run] of runs) {
      if (snippet.file !== file) continue
      const said = summary(snippet, run)
      expect(run.timedOut, said).toBe(false)
      expect(run.blocked, said).toEqual([])
      const servers = serversOf(snippet.code)
      if (servers === 0) {
        expect(run.exitCode, said).toBe(0)
        continue
      }
      // Still serving when asked: every server it started answers, none with a 5xx.
      expect(run.exitCode, said).toBeNull()
      expect(run.listening, said).toHaveLength(servers)
      for (const probes of Object.values(run.probes)) {
        expect(probes.every((probe) => probe.status > 0 && probe.status < 500), said).toBe(true)
        expect(probes.some((probe) => probe.status === 200 || probe.status === 402), said).toBe(true)
      }
    }
  })

  it('the quick start serves /supported with the Base Sepolia kinds', () => {
    const { snippet, run } = runOf('README.md', "network: 'base-sepolia', rpcUrls: [process.env.RPC_URL ?? 'https://sepolia.base.org'], restrictAssets: true }],\n      // A key")
    const supported = run.probes[4020]?.find((probe) => probe.path === '/supported')
    expect(supported?.status, summary(snippet, run)).toBe(200)
    expect(JSON.parse(supported!.body)).toMatchObject({ kinds: expect.arrayContaining([expect.objectContaining({ network: 'eip155:84532', scheme: 'exact' })]) })
  })

  it('the paywall block answers a 402 paying SHOP_ADDRESS, and refuses to start without it (no 402 with payTo "")', () => {
    const { snippet, run } = runOf('README.md', 'createPaywall(')
    const challenge = run.probes[4021]?.find((probe) => probe.path === '/')
    expect(challenge?.status, summary(snippet, run)).toBe(402)
    const accepts = decodeHeader(challenge!.headers['payment-required']).accepts
    expect(accepts.length).toBe(2)
    expect(accepts.every((offer) => offer.payTo === SHOP_ADDRESS)).toBe(true)

    const unset = paywallWithoutShop!
    expect(unset.listening, summary(snippet, unset)).toEqual([])
    expect(unset.exitCode, summary(snippet, unset)).not.toBe(0)
    expect(unset.exitCode).not.toBeNull()
    expect(unset.stderr).toContain('createPaywall: offers[0] (exact on eip155:84532) has no payTo ("")')
    expect(unset.stderr).toContain("code: 'misconfigured'")
  })

  it('the ledger block serves /ledger to the admin token, from its SQLite file', () => {
    const { snippet, run } = runOf('README.md', 'ledgerRoute(store.ledger)')
    const ledger = run.probes[4020]?.find((probe) => probe.path === '/ledger')
    expect(ledger?.status, summary(snippet, run)).toBe(200)
    expect(JSON.parse(ledger!.body)).toEqual({ entries: [] })
  })

  it('the statistics block serves the JSON and the page for people on the statistics host', () => {
    const { snippet, run } = runOf('README.md', 'stats.handler({ routes: [...catalog.routes(), stats.page({ catalog })] })).listen(4021)')
    const page = run.probes[4021]?.find((probe) => probe.path === '/')
    expect(page?.status, summary(snippet, run)).toBe(200)
    expect(page!.contentType).toMatch(/^text\/html/)
    expect(run.probes[4021]?.find((probe) => probe.path === '/public/stats')?.status).toBe(200)
    expect(run.probes[4020]?.find((probe) => probe.path === '/supported')?.status).toBe(200)
  })

  it('the EVM and Solana block lists both kinds, Solana with its fee payer', () => {
    const { snippet, run } = runOf('README.md', 'createKeyPairSignerFromBytes(feePayerKey)')
    expect(run.exitCode, summary(snippet, run)).toBe(0)
    const supported = JSON.parse(run.stdout) as { kinds: { network: string; extra?: { feePayer?: string } }[] }
    expect(supported.kinds.some((kind) => kind.network === 'eip155:8453')).toBe(true)
    expect(supported.kinds.some((kind) => kind.network.startsWith('solana:') && typeof kind.extra?.feePayer === 'string')).toBe(true)
  })

  it('the local-development block finds anvil ready as the page sets it up', () => {
    const { snippet, run } = runOf('docs/local-development.md', 'facilitator.readiness()')
    expect(run.exitCode, summary(snippet, run)).toBe(0)
    // The chain id, Multicall3 where the page deployed it, the signer's gas money: all as the page says.
    const report = JSON.parse(run.stdout) as { ready: boolean; checks: { name: string; ok: boolean }[] }
    expect(report.checks.map((check) => check.name).join(', ')).toMatch(/rpc eip155:31337, multicall3 eip155:31337, signer 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266/)
    expect(report.checks.every((check) => check.ok) && report.ready, summary(snippet, run)).toBe(true)
  })
})
