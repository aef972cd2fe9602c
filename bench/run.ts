/**
 * The benchmark suite: our facilitator against the official x402 facilitator
 * (@x402/core + @x402/evm + @x402/svm) on the same local chains with the same
 * payloads. Prints a table (ours, theirs, ours / theirs) and writes it to
 * bench/results/latest.json. Not part of `npm test`.
 *
 *   npm run bench              # every section (bench/results/latest.json)
 *   npm run bench -- evm http  # some sections (bench/results/latest-evm-http.json)
 *   npm run bench -- permit2   # EVM through Permit2: exact and upto (bench/results/latest-permit2.json)
 *   npm run bench -- batch     # EVM batch-settlement: paywall + facilitator, ours and theirs (bench/results/latest-batch.json)
 *   npm run bench -- batch-verify  # batch-settlement facilitator alone: RPC calls per voucher verify, gas per payment
 *   npm run bench -- --against 0ab9a2c [evm|svm] [--rounds N] [--profile]
 *                              # this working tree against another commit, both built, over HTTP
 *                              # (bench/ab.ts; bench/results/against-<sha>.json and .md)
 *
 * A section that cannot run here (no redis-server, no PostgreSQL) is skipped with a line saying
 * why; a failure ends the run with one line (`[bench] failed: ...`) and exit code 1.
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { AB_COUNTS, benchAgainst, type AbChain } from './ab.js'
import { formatAbTable, ratioBand } from './ab-table.js'
import { BUILD_CACHE } from './builds.js'
import { benchColdStart, COLD_START_COUNTS } from './cold-start.js'
import { benchEvm, EVM_COUNTS } from './evm.js'
import { BATCH_COUNTS, benchEvmBatch } from './evm-batch.js'
import { BATCH_FACILITATOR_COUNTS, benchEvmBatchFacilitator } from './evm-batch-facilitator.js'
import { benchEvmPermit2, PERMIT2_COUNTS } from './evm-permit2.js'
import { benchHttp, HTTP_COUNTS } from './http.js'
import { formatTable, progress, type Row } from './measure.js'
import { benchStats, STATS_COUNTS } from './stats.js'
import { benchStores, STORES_COUNTS } from './stores.js'
import { benchSvm, SVM_COUNTS } from './svm.js'
import { cryptoBackends } from '../src/evm/crypto/crypto-backends.js'

const SECTIONS = {
  evm: { run: benchEvm, counts: EVM_COUNTS },
  permit2: { run: benchEvmPermit2, counts: PERMIT2_COUNTS },
  batch: { run: benchEvmBatch, counts: BATCH_COUNTS },
  'batch-verify': { run: benchEvmBatchFacilitator, counts: BATCH_FACILITATOR_COUNTS },
  svm: { run: benchSvm, counts: SVM_COUNTS },
  http: { run: benchHttp, counts: HTTP_COUNTS },
  stats: { run: benchStats, counts: STATS_COUNTS },
  stores: { run: benchStores, counts: STORES_COUNTS },
  'cold-start': { run: benchColdStart, counts: COLD_START_COUNTS },
} as const
type SectionName = keyof typeof SECTIONS

const machine = {
  nproc: availableParallelism(),
  cpu: (() => {
    try {
      return /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown'
    } catch {
      return cpus()[0]?.model ?? 'unknown'
    }
  })(),
  node: process.version,
  loadAverageAtStart: loadavg().map((l) => Number(l.toFixed(2))),
}

/** The command line: section names, `--against <ref>`, `--rounds <n>`, `--profile`. */
function parseArguments(argv: readonly string[]) {
  const sections: string[] = []
  let against: string | undefined
  let rounds = AB_COUNTS.rounds
  let profile = false
  let unknownToken = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const value = () => {
      const next = argv[++i]
      if (next === undefined || next.startsWith('--')) throw new Error(`${arg} needs a value`)
      return next
    }
    if (arg === '--against') against = value()
    else if (arg.startsWith('--against=')) against = arg.slice('--against='.length)
    else if (arg === '--rounds') rounds = Number(value())
    else if (arg === '--profile') profile = true
    else if (arg === '--unknown-token') unknownToken = true
    else if (arg.startsWith('--')) throw new Error(`unknown option ${arg} (known: --against <git ref>, --rounds <n>, --profile, --unknown-token)`)
    else sections.push(arg)
  }
  if (!Number.isInteger(rounds) || rounds < 3) throw new Error('--rounds takes a whole number of at least 3')
  if (against === undefined && (profile || unknownToken || argv.includes('--rounds'))) throw new Error('--rounds, --profile and --unknown-token go with --against <git ref>')
  return { sections, against, rounds, profile, unknownToken }
}

async function runSections(requested: readonly string[]): Promise<void> {
  const unknown = requested.filter((name) => !(name in SECTIONS))
  if (unknown.length > 0) throw new Error(`unknown section ${unknown.join(', ')} (known: ${Object.keys(SECTIONS).join(', ')})`)
  const chosen = (requested.length > 0 ? requested : Object.keys(SECTIONS)) as SectionName[]
  const officialVersions = Object.fromEntries(
    ['@x402/core', '@x402/evm', '@x402/svm'].map((name) => [name, (JSON.parse(readFileSync(`node_modules/${name}/package.json`, 'utf8')) as { version: string }).version]),
  )

  const crypto = await cryptoBackends()
  progress(`sections: ${chosen.join(', ')}; machine: ${machine.nproc} cores, ${machine.cpu}, Node ${machine.node}; EVM signatures: ${crypto.signatures}, keccak: ${crypto.keccak}`)
  for (const name of chosen) progress(`iterations ${name}: ${JSON.stringify(SECTIONS[name].counts)}`)

  const started = performance.now()
  const rows: Row[] = []
  for (const name of chosen) {
    const sectionStarted = performance.now()
    rows.push(...(await SECTIONS[name].run()))
    progress(`${name} done in ${((performance.now() - sectionStarted) / 1000).toFixed(1)} s`)
  }
  const totalSeconds = (performance.now() - started) / 1000

  const table = formatTable(rows)
  console.log(`\nx402-facilitator benchmarks, ${new Date().toISOString().slice(0, 10)} — ${machine.nproc} cores, ${machine.cpu}, Node ${machine.node}`)
  console.log(`theirs = official x402 facilitator (${Object.entries(officialVersions).map(([n, v]) => `${n} ${v}`).join(', ')}) unless noted\n`)
  console.log(table)
  console.log(`\ntotal ${totalSeconds.toFixed(1)} s`)

  mkdirSync('bench/results', { recursive: true })
  const result = {
    date: new Date().toISOString(),
    machine,
    official: officialVersions,
    recoveryBackend: crypto.signatures,
    keccakBackend: crypto.keccak,
    iterations: Object.fromEntries(chosen.map((name) => [name, SECTIONS[name].counts])),
    totalSeconds,
    rows,
    table,
  }
  // A run of some sections keeps the full run's file: it writes one named after its sections.
  const file = requested.length > 0 ? `bench/results/latest-${chosen.join('-')}.json` : 'bench/results/latest.json'
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
  progress(`written to ${file}`)
}

/** `--against <ref>`: the A/B of bench/ab.ts on the chains named (evm, svm; both by default). */
async function runAgainst(against: string, sections: readonly string[], rounds: number, profile: boolean, unknownToken: boolean): Promise<void> {
  const chains = sections.length > 0 ? sections : ['evm', 'svm']
  const unknown = chains.filter((name) => name !== 'evm' && name !== 'svm')
  if (unknown.length > 0) throw new Error(`--against runs the evm and svm rows only (not ${unknown.join(', ')})`)
  const started = performance.now()
  const stamp = new Date().toISOString()
  const profileDir = profile ? join(BUILD_CACHE, 'profiles', stamp.replace(/[:.]/g, '-')) : undefined
  const result = await benchAgainst({ against, chains: chains as AbChain[], rounds, unknownToken, ...(profileDir ? { profileDir } : {}) })
  const totalSeconds = (performance.now() - started) / 1000
  const band = ratioBand(result.summary)
  const heading = `x402-facilitator A/B, ${stamp.slice(0, 16).replace('T', ' ')} UTC — ${machine.nproc} cores, ${machine.cpu}, Node ${machine.node}, load average ${machine.loadAverageAtStart.join(' ')} at start, ${totalSeconds.toFixed(0)} s`
  const table = formatAbTable(result.summary, { a: result.a.label, b: result.b.label })
  const notes = [
    `Each build served over HTTP from its dist/ (node:http, createHandler) in its own process; one load generator; one anvil and one LiteSVM RPC for both.`,
    unknownToken ? 'EVM: the test token is not listed in `assets` (--unknown-token): simulated at maxSettlementGas with the payee proof, as any token outside the known table.' : 'EVM: the test token is listed in `assets`, a known token as USDC is built in.',
    `${result.counts.rounds} rounds of each build per row, alternating (A B, B A, ...); no payer pays twice at once (Solana: one payer per payment; EVM: 256 payers taking turns).`,
    `B / A of single rounds ranged ${band.low.toFixed(2)}x to ${band.high.toFixed(2)}x${profileDir ? `; CPU profiles in ${profileDir} (the figures of a profiled run are slower)` : ''}.`,
  ]
  console.log(`\n${heading}\n\n${table}\n\n${notes.join('\n')}`)
  // A profiled run's figures are the profiler's too: they are not saved as the comparison's.
  if (profileDir) return progress(`profiles and RPC tallies in ${profileDir}: node --import tsx bench/profile-summary.ts ${profileDir}`)
  mkdirSync('bench/results', { recursive: true })
  const base = `bench/results/against-${result.a.sha.slice(0, 7)}${unknownToken ? '-unknown-token' : ''}`
  writeFileSync(`${base}.md`, `# ${heading}\n\n${table}\n\n${notes.join('\n')}\n`)
  writeFileSync(
    `${base}.json`,
    `${JSON.stringify({ date: stamp, machine, totalSeconds, a: result.a, b: result.b, counts: result.counts, summary: result.summary, rounds: result.rows, table }, null, 2)}\n`,
  )
  progress(`written to ${base}.json and ${base}.md`)
}

// One line for whatever ends the run, no stack: the cause is in the message.
const fail = (error: unknown) => {
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, '; ')
  process.stderr.write(`[bench] failed: ${message.length > 600 ? `${message.slice(0, 600)}…` : message}\n`)
  process.exit(1)
}
process.on('uncaughtException', fail)
process.on('unhandledRejection', fail)

try {
  const args = parseArguments(process.argv.slice(2))
  if (args.against !== undefined) await runAgainst(args.against, args.sections, args.rounds, args.profile, args.unknownToken)
  else await runSections(args.sections)
} catch (error) {
  fail(error)
}
