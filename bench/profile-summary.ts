/**
 * Where a served build's CPU went: reads the CPU profiles `npm run bench -- --against <ref> --profile`
 * wrote (one per build, row and round), adds up the rounds of each build and row, maps the built
 * code back to src/ through the build's source maps, and prints, per operation, the CPU by where
 * it was spent (our files, each dependency, Node, the garbage collector), the functions that
 * cost most, self and with what they call, and the RPC requests of those rounds by what they asked.
 * The sampler's time is wall time while the process is not idle: on a loaded machine a write that
 * hands the core to its reader shows as the write's own. Compare two builds of the same run.
 *
 *   node --import tsx bench/profile-summary.ts <profile folder> [row, e.g. EVM-verify-1] [--top N]
 *   node --import tsx bench/profile-summary.ts <profile folder> [row] --diff    # B − A, function by function
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AB_COUNTS } from './ab.js'

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: readonly number[]
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[]
  readonly samples: readonly number[]
  readonly timeDeltas: readonly number[]
}

const maps = new Map<string, SourceMap | null>()
function sourceMapOf(file: string): SourceMap | null {
  if (!maps.has(file)) {
    try {
      maps.set(file, new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))))
    } catch {
      maps.set(file, null)
    }
  }
  return maps.get(file)!
}

/** Where a frame's code comes from: `src/evm/verify.ts:120 name`, a package, or Node. */
export function placeOf(frame: CallFrame): { where: string; group: string } {
  const name = frame.functionName || '(anonymous)'
  if (!frame.url) return { where: name, group: name.startsWith('(') ? name : 'native' }
  if (frame.url.startsWith('node:')) return { where: `${frame.url} ${name}`, group: 'node' }
  const file = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)
  if (inPackage && !file.includes('/dist/')) return { where: `${inPackage[1]} ${name}`, group: inPackage[1]! }
  const map = sourceMapOf(file)
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number } | undefined
  if (entry?.originalSource) {
    // Relative to the build's root (the folder holding dist/): src/evm/verify.ts.
    const root = file.includes('/dist/') ? file.slice(0, file.lastIndexOf('/dist/')) : dirname(file)
    const source = relative(root, join(dirname(file), entry.originalSource))
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source)
    if (pkg) return { where: `${pkg[1]} ${name}`, group: `${pkg[1]} (bundled)` }
    return { where: `${source}:${(entry.originalLine ?? 0) + 1} ${name}`, group: source }
  }
  return { where: `${file}:${frame.lineNumber + 1} ${name}`, group: 'other' }
}

/** Self and inclusive CPU (ms) of each place, over the given profiles. */
export function costs(profiles: readonly CpuProfile[]) {
  const self = new Map<string, number>()
  const inclusive = new Map<string, number>()
  const groups = new Map<string, number>()
  let total = 0
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((node) => [node.id, node]))
    const parent = new Map<number, number>()
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
    const places = new Map(profile.nodes.map((node) => [node.id, placeOf(node.callFrame)]))
    // Samples under the profiler's own stop (bench/ab-server.mjs asking the inspector) are not the server's work.
    const underStop = (id: number) => {
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)!.callFrame.url.endsWith('ab-server.mjs')) return true
      return false
    }
    profile.samples.forEach((id, i) => {
      const ms = (profile.timeDeltas[i] ?? 0) / 1000
      const place = places.get(id)!
      if (place.where === '(idle)' || underStop(id)) return
      total += ms
      self.set(place.where, (self.get(place.where) ?? 0) + ms)
      groups.set(place.group, (groups.get(place.group) ?? 0) + ms)
      const seen = new Set<string>()
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const where = places.get(at)!.where
        if (seen.has(where) || byId.get(at)!.callFrame.functionName === '(root)') continue
        seen.add(where)
        inclusive.set(where, (inclusive.get(where) ?? 0) + ms)
      }
    })
  }
  return { self, inclusive, groups, total }
}

/** Operations of a group of profiles: from the RPC tallies written beside them, else today's AB_COUNTS. */
function operationsOf(folder: string, files: readonly string[]): number {
  return files.reduce((sum, file) => {
    const tally = join(folder, file.replace(/\.cpuprofile$/, '.rpc.json'))
    if (existsSync(tally)) return sum + (JSON.parse(readFileSync(tally, 'utf8')) as { operations: number }).operations
    return sum + (OPS[/-(verify|settle)-\d+-round\d+\.cpuprofile$/.exec(file)?.[0].slice(1).replace(/-round.*$/, '') ?? ''] ?? 1)
  }, 0)
}

const OPS: Record<string, number> = {
  'verify-1': AB_COUNTS.verifySequential,
  [`verify-${AB_COUNTS.verifyConcurrency}`]: AB_COUNTS.verifyConcurrent,
  'settle-1': AB_COUNTS.settleSequential,
  [`settle-${AB_COUNTS.settleConcurrency}`]: AB_COUNTS.settleConcurrent,
}

/** A place without its line and folder (both move between commits): `evm-schemes.ts verify`. */
const withoutLine = (where: string) => where.replace(/:\d+ /, ' ').replace(/^src\/(?:[\w.-]+\/)*/, '')

/** Per operation, what B spent more (or less) than A on each function (self) and each origin, largest first. */
function printDiff(label: string, a: ReturnType<typeof costs>, b: ReturnType<typeof costs>, opsA: number, opsB: number, top: number): void {
  const byPlace = (c: ReturnType<typeof costs>, ops: number, map: Map<string, number>) => {
    const out = new Map<string, number>()
    for (const [where, ms] of map) out.set(withoutLine(where), (out.get(withoutLine(where)) ?? 0) + (ms / ops) * 1000)
    return out
  }
  const section = (title: string, pa: Map<string, number>, pb: Map<string, number>) => {
    const keys = [...new Set([...pa.keys(), ...pb.keys()])]
    const rows = keys.map((k) => ({ k, a: pa.get(k) ?? 0, b: pb.get(k) ?? 0 })).sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a))
    console.log(` ${title}:`)
    for (const r of rows.slice(0, top)) console.log(`  ${(r.b - r.a >= 0 ? '+' : '') + (r.b - r.a).toFixed(0).padStart(5)} µs  (${r.a.toFixed(0).padStart(4)} → ${r.b.toFixed(0).padStart(4)})  ${r.k}`)
  }
  console.log(`\n${label}: B − A per operation, ${((a.total / opsA) * 1000).toFixed(0)} → ${((b.total / opsB) * 1000).toFixed(0)} µs in all`)
  section('by origin', byPlace(a, opsA, a.groups), byPlace(b, opsB, b.groups))
  section('self, by function', byPlace(a, opsA, a.self), byPlace(b, opsB, b.self))
  section('with callees, by function', byPlace(a, opsA, a.inclusive), byPlace(b, opsB, b.inclusive))
}

function main(): void {
  const args = process.argv.slice(2)
  const topAt = args.indexOf('--top')
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 15
  const diffAt = args.indexOf('--diff')
  const diff = diffAt >= 0 && args.splice(diffAt, 1).length > 0
  const [folder, only] = args
  if (!folder) throw new Error('usage: bench/profile-summary.ts <profile folder> [row, e.g. EVM-verify-1] [--top N] [--diff]')
  // Files are <A|B>-<sha>-<chain>-<row>-round<n>.cpuprofile.
  const files = readdirSync(folder).filter((f) => f.endsWith('.cpuprofile') && (!only || f.includes(`-${only}-round`)))
  const grouped = new Map<string, string[]>()
  for (const file of files) {
    const key = file.replace(/-round\d+\.cpuprofile$/, '')
    grouped.set(key, [...(grouped.get(key) ?? []), file])
  }
  if (diff) {
    // Pairs of A-<sha>-<row> and B-<sha>-<row> groups.
    const rowOf = (key: string) => key.replace(/^[AB]-[0-9a-f]+-/, '')
    for (const row of [...new Set([...grouped.keys()].map(rowOf))].sort()) {
      const [aKey, bKey] = ['A', 'B'].map((side) => [...grouped.keys()].find((key) => key.startsWith(`${side}-`) && rowOf(key) === row))
      if (!aKey || !bKey) continue
      const load = (key: string) => costs(grouped.get(key)!.map((file) => JSON.parse(readFileSync(join(folder, file), 'utf8')) as CpuProfile))
      const opsOf = (key: string) => operationsOf(folder, grouped.get(key)!)
      printDiff(`${row} (${aKey.split('-').slice(0, 2).join(' ')} → ${bKey.split('-').slice(0, 2).join(' ')})`, load(aKey), load(bKey), opsOf(aKey), opsOf(bKey), top)
    }
    return
  }
  for (const [key, group] of [...grouped].sort(([x], [y]) => x.localeCompare(y))) {
    const ops = operationsOf(folder, group)
    const { self, inclusive, groups, total } = costs(group.map((file) => JSON.parse(readFileSync(join(folder, file), 'utf8')) as CpuProfile))
    const perOp = (ms: number) => `${((ms / ops) * 1000).toFixed(0).padStart(5)} µs`
    const list = (map: Map<string, number>, n: number) =>
      [...map].sort(([, x], [, y]) => y - x).slice(0, n).map(([where, ms]) => `  ${perOp(ms)}  ${((ms / total) * 100).toFixed(1).padStart(5)} %  ${where}`)
    console.log(`\n${key}: ${group.length} rounds, ${ops} operations, ${perOp(total).trim()} of CPU per operation (samples, idle left out)`)
    console.log(' by origin:', ...list(groups, 12).map((line) => `\n${line}`))
    // The RPC requests of the same rounds, as the proxy in front of the chain saw them.
    const tallies = group.map((file) => join(folder, file.replace(/\.cpuprofile$/, '.rpc.json'))).filter((file) => existsSync(file))
    if (tallies.length > 0) {
      const sum = new Map<string, number>()
      let operations = 0
      for (const file of tallies) {
        const rpc = JSON.parse(readFileSync(file, 'utf8')) as { operations: number; tally: Record<string, number> }
        operations += rpc.operations
        for (const [shape, count] of Object.entries(rpc.tally)) sum.set(shape, (sum.get(shape) ?? 0) + count)
      }
      const requests = [...sum.values()].reduce((x, y) => x + y, 0)
      console.log(` RPC requests: ${(requests / operations).toFixed(2)} per operation`, ...[...sum].sort(([, x], [, y]) => y - x).map(([shape, count]) => `\n  ${(count / operations).toFixed(2).padStart(6)}  ${shape}`))
    }
    console.log(' self:', ...list(self, top).map((line) => `\n${line}`))
    console.log(' with callees:', ...list(inclusive, top).map((line) => `\n${line}`))
  }
}

// Run as a script (not when imported for placeOf and costs).
if (process.argv[1]?.endsWith('profile-summary.ts')) main()
