/**
 * The benchmark suite: our facilitator against the official x402 facilitator
 * (@x402/core + @x402/evm + @x402/svm) on the same local chains with the same
 * payloads. Prints a table (ours, theirs, ours / theirs) and writes it to
 * bench/results/latest.json. Not part of `npm test`.
 *
 *   npm run bench              # every section (bench/results/latest.json)
 *   npm run bench -- evm http  # some sections (bench/results/latest-evm-http.json)
 *   npm run bench -- permit2   # EVM through Permit2: exact and upto (bench/results/latest-permit2.json)
 */
import { cpus } from 'node:os'
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { benchColdStart, COLD_START_COUNTS } from './cold-start.js'
import { benchEvm, EVM_COUNTS } from './evm.js'
import { benchEvmPermit2, PERMIT2_COUNTS } from './evm-permit2.js'
import { benchHttp, HTTP_COUNTS } from './http.js'
import { formatTable, progress, type Row } from './measure.js'
import { benchStats, STATS_COUNTS } from './stats.js'
import { benchStores, STORES_COUNTS } from './stores.js'
import { benchSvm, SVM_COUNTS } from './svm.js'
import { cryptoBackends } from '../src/evm/crypto-backends.js'

const SECTIONS = {
  evm: { run: benchEvm, counts: EVM_COUNTS },
  permit2: { run: benchEvmPermit2, counts: PERMIT2_COUNTS },
  svm: { run: benchSvm, counts: SVM_COUNTS },
  http: { run: benchHttp, counts: HTTP_COUNTS },
  stats: { run: benchStats, counts: STATS_COUNTS },
  stores: { run: benchStores, counts: STORES_COUNTS },
  'cold-start': { run: benchColdStart, counts: COLD_START_COUNTS },
} as const
type SectionName = keyof typeof SECTIONS

const requested = process.argv.slice(2).filter((arg): arg is SectionName => arg in SECTIONS)
const chosen: SectionName[] = requested.length > 0 ? requested : (Object.keys(SECTIONS) as SectionName[])

const cpuModel = (() => {
  try {
    return /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown'
  } catch {
    return cpus()[0]?.model ?? 'unknown'
  }
})()
const machine = { nproc: availableParallelism(), cpu: cpuModel, node: process.version, loadAverageAtStart: (await import('node:os')).loadavg().map((l) => Number(l.toFixed(2))) }
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
