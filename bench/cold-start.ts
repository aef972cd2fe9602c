/**
 * Cold start: the time to import each entry of the built package (dist/) in
 * a fresh Node process, against the official facilitator's entries. Builds
 * dist/ first (npx tsup) when it is missing or older than src/.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ensureBuilt } from './builds.js'
import { percentile, progress, row, type Row } from './measure.js'

export const COLD_START_COUNTS = { runs: 7 }

const ROOT = process.cwd()

/** Median milliseconds to import `specifier` in a fresh process (measured inside it, Node startup excluded). */
function importTime(specifier: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(specifier)}); process.stdout.write(String(performance.now() - t))`
  const samples: number[] = []
  for (let i = 0; i < COLD_START_COUNTS.runs; i++) {
    samples.push(Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' })))
  }
  return percentile(samples, 50)
}

export async function benchColdStart(): Promise<Row[]> {
  const state = ensureBuilt()
  progress(`cold start: ${COLD_START_COUNTS.runs} fresh processes per entry (${state})`)
  const dist = (path: string) => pathToFileURL(join(ROOT, 'dist', path)).href
  const pairs: [string, string, string | null][] = [
    ['core (x402-facilitator)', dist('index.js'), '@x402/core/facilitator'],
    ['http (x402-facilitator/http)', dist('http/index.js'), null],
    ['evm (x402-facilitator/evm)', dist('evm/index.js'), '@x402/evm/exact/facilitator'],
    ['svm (x402-facilitator/svm)', dist('svm/index.js'), '@x402/svm/exact/facilitator'],
    ['stores/redis (x402-facilitator/stores/redis)', dist('stores/redis.js'), null],
  ]
  return pairs.map(([name, ours, theirs]) =>
    row('Cold start', `import ${name}`, 'ms', 'lower', importTime(ours), theirs ? importTime(theirs) : null, theirs ? `theirs: import ${theirs}` : undefined),
  )
}
