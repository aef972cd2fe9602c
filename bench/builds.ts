/**
 * Built packages of this project for the benchmark: the working tree's dist/ (rebuilt with tsup
 * when src/ is newer), and another commit's, built beside it from `git archive` in a cache
 * folder keyed by the commit's sha (a second run reuses it). The other commit's build reuses this
 * checkout's node_modules through a symlink: what it runs on is its own code over today's
 * dependencies.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { progress } from './measure.js'

const ROOT = process.cwd()

/** Where other commits are built: `X402_BENCH_CACHE`, else `.cache/x402-bench` in the checkout (git-ignored). */
export const BUILD_CACHE = resolve(process.env.X402_BENCH_CACHE ?? join(ROOT, '.cache', 'x402-bench'))

/** The entries the A/B comparison loads from a build: the public API both commits must have. */
export const REQUIRED_ENTRIES = ['index.js', 'http/index.js', 'evm/index.js', 'svm/index.js'] as const

/** One built package: its dist/ folder and how the tables name it. */
export interface Build {
  /** The folder holding index.js, http/index.js, evm/index.js and svm/index.js. */
  readonly dist: string
  /** The commit (the working tree's HEAD for the working tree). */
  readonly sha: string
  /** `0ab9a2c`, or `working tree (bc3e4b2)` (with `+ changes` when it differs from HEAD). */
  readonly label: string
}

function newestMtime(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}

function git(args: readonly string[], cwd = ROOT): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
}

/** Runs tsup in `dir`; a failure ends in an Error carrying tsup's last lines, not its stack. */
function tsup(dir: string, args: readonly string[], what: string): void {
  try {
    execFileSync('npx', ['tsup', ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' })
  } catch (error) {
    const output = `${(error as { stdout?: string }).stdout ?? ''}${(error as { stderr?: string }).stderr ?? ''}`
    const tail = output.trim().split('\n').slice(-6).join('\n')
    throw new Error(`tsup could not build ${what}:\n${tail}`)
  }
}

/** The working tree's dist/, rebuilt with tsup (types included, as `npm run build`) when it is missing or older than src/. */
export function ensureBuilt(): string {
  const built = join(ROOT, 'dist', 'index.js')
  if (existsSync(built) && statSync(built).mtimeMs >= newestMtime(join(ROOT, 'src'))) return 'dist/ up to date'
  progress('dist/ is missing or older than src/: running npx tsup')
  tsup(ROOT, [], 'the working tree')
  return 'dist/ rebuilt with tsup'
}

/** The working tree as a build: its dist/ (rebuilt when stale). */
export function workingTreeBuild(): Build {
  ensureBuilt()
  const sha = git(['rev-parse', 'HEAD'])
  const changed = git(['status', '--porcelain', '--untracked-files=no', '--', 'src', 'package.json', 'tsup.config.ts']) !== ''
  return { dist: join(ROOT, 'dist'), sha, label: `working tree (${sha.slice(0, 7)}${changed ? ' + changes' : ''})` }
}

/**
 * Another commit's built package: `git archive` of the commit into BUILD_CACHE/<sha>, this
 * checkout's node_modules linked in, `npx tsup --no-dts` there. Reused while its marker file is
 * there. Throws one clear Error for an unknown ref, a failed build, or a commit too old to have
 * the entries the comparison loads.
 */
export function buildOf(ref: string): Build {
  let sha: string
  try {
    sha = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])
  } catch {
    throw new Error(`--against ${ref}: no such commit in this repository`)
  }
  const dir = join(BUILD_CACHE, sha)
  const dist = join(dir, 'dist')
  const marker = join(dir, '.x402-bench-built')
  const label = ref.startsWith(sha.slice(0, 7)) ? sha.slice(0, 7) : `${ref} (${sha.slice(0, 7)})`
  if (existsSync(marker) && readFileSync(marker, 'utf8').trim() === sha) {
    progress(`${label}: reusing the build in ${dir}`)
    return { dist, sha, label }
  }
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  progress(`${label}: building it in ${dir} (git archive, npx tsup --no-dts)`)
  const archive = join(BUILD_CACHE, `${sha}.tar`)
  git(['archive', '--format=tar', '-o', archive, sha])
  try {
    execFileSync('tar', ['-xf', archive, '-C', dir], { stdio: 'ignore' })
  } finally {
    rmSync(archive, { force: true })
  }
  if (!existsSync(join(dir, 'tsup.config.ts'))) throw new Error(`--against ${ref}: commit ${sha.slice(0, 7)} is too old (it has no tsup.config.ts, so no built package to load)`)
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'), 'dir')
  tsup(dir, ['--no-dts'], `${label}`)
  const missing = REQUIRED_ENTRIES.filter((entry) => !existsSync(join(dist, entry)))
  if (missing.length > 0) {
    throw new Error(`--against ${ref}: commit ${sha.slice(0, 7)} is too old for the comparison (its build has no ${missing.map((m) => `dist/${m}`).join(', ')}; it needs x402-facilitator, /http, /evm and /svm)`)
  }
  writeFileSync(marker, `${sha}\n`)
  return { dist, sha, label }
}
