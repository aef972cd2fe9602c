import type { CliConfig } from './cli-config.js'

/** An optional package the command loads, and what in the configuration needs it. */
export interface NeededPackage {
  readonly name: string
  readonly why: string
}

const SOLANA = ['@solana/kit', '@solana-program/token', '@solana-program/compute-budget', '@solana-program/system']

/**
 * Every optional peer package this configuration loads: the logger and the metrics client
 * always, the chain libraries of the networks served, and the driver of the store.
 *
 * @example
 * neededPackages(config).map((p) => p.name) // ['pino', 'prom-client', 'viem', 'better-sqlite3']
 */
export function neededPackages(config: Pick<CliConfig, 'networks' | 'storeUrl'>): NeededPackage[] {
  const needed: NeededPackage[] = [
    { name: 'pino', why: 'logging' },
    { name: 'prom-client', why: 'metrics' },
  ]
  if (config.networks.some((network) => network.family === 'eip155')) needed.push({ name: 'viem', why: 'EVM networks' })
  if (config.networks.some((network) => network.family === 'solana')) for (const name of SOLANA) needed.push({ name, why: 'Solana networks' })
  const url = config.storeUrl
  if (url.startsWith('sqlite:')) needed.push({ name: 'better-sqlite3', why: 'STORE_URL=sqlite:…, the default store' })
  else if (url.startsWith('postgres')) needed.push({ name: 'pg', why: 'STORE_URL=postgres://…' })
  else if (url.startsWith('redis')) needed.push({ name: 'ioredis', why: 'STORE_URL=redis://…' })
  return needed
}

/** What loading the needed packages found: those not installed, and those installed that failed to load. */
export interface PackageCheck {
  readonly missing: NeededPackage[]
  readonly broken: NeededPackage[]
}

/**
 * Loads every needed package at once (they are loaded anyway to serve), so that one start
 * names all the missing ones rather than one per restart.
 */
export async function checkPackages(needed: readonly NeededPackage[], load: (name: string) => Promise<unknown> = (name) => import(name)): Promise<PackageCheck> {
  const outcomes = await Promise.all(
    needed.map(async (pkg): Promise<{ status: 'ok' | 'missing' | 'broken'; lacks?: string }> => {
      try {
        await load(pkg.name)
        return { status: 'ok' }
      } catch (error) {
        const lacks = missingPackageOf(error)
        return lacks === pkg.name ? { status: 'missing' } : { status: 'broken', lacks }
      }
    }),
  )
  const missing = needed.filter((_, i) => outcomes[i]!.status === 'missing')
  const missingNames = new Set(missing.map((pkg) => pkg.name))
  // A package that failed only because another needed one is missing (@solana-program/token without @solana/kit) is fixed by installing that one.
  const broken = needed.filter((_, i) => outcomes[i]!.status === 'broken' && !missingNames.has(outcomes[i]!.lacks ?? ''))
  return { missing, broken }
}

/** The lines a refusal to start prints for missing or broken packages: all of them, then one command that fixes them. */
export function packageProblems({ missing, broken }: PackageCheck): string[] {
  const lines: string[] = []
  if (missing.length > 0) {
    const byWhy = new Map<string, string[]>()
    for (const pkg of missing) byWhy.set(pkg.why, [...(byWhy.get(pkg.why) ?? []), pkg.name])
    lines.push(`this configuration needs packages that are not installed: ${[...byWhy].map(([why, names]) => `${names.join(' ')} (${why})`).join(', ')}`)
    lines.push(`install them all with: npm install ${missing.map((pkg) => pkg.name).join(' ')}`)
  }
  for (const pkg of broken) lines.push(`${pkg.name} is installed but failed to load (for ${pkg.why}): reinstall it for this Node version, e.g. npm rebuild ${pkg.name}`)
  return lines
}

/** The package an import could not find (`Cannot find package 'pg' imported from …`), or `undefined` for another failure. */
function missingPackageOf(error: unknown): string | undefined {
  const { code, message } = error as { code?: string; message?: string }
  if ((code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') || typeof message !== 'string') return undefined
  return /Cannot find (?:package|module) ['"]([^'"]+)['"]/.exec(message)?.[1]
}
