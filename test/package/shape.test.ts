import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { PUBLIC_ENTRIES } from './public-names.js'

// The published artifact is what users get: these tests build it and load it
// the way Node does for an installed package (self-reference by name).
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { import: { default: string }; require: { default: string } }>
  dependencies: Record<string, string>
  sideEffects: boolean
}
const subpaths = Object.keys(manifest.exports).filter((key) => key !== './package.json')
const specifier = (subpath: string) => (subpath === '.' ? 'x402-facilitator' : `x402-facilitator/${subpath.slice(2)}`)

function node(code: string, type: 'module' | 'commonjs', flags: readonly string[] = []): string {
  return execFileSync(process.execPath, [...flags, `--input-type=${type}`, '-e', code], { cwd: root, encoding: 'utf8' })
}

beforeAll(() => {
  execFileSync(process.execPath, [join(root, 'node_modules/tsup/dist/cli-default.js')], { cwd: root, stdio: 'pipe' })
}, 180_000)

describe('package shape', () => {
  it.each(subpaths)('%s resolves from dist in ESM and CJS with its pinned exports', (subpath) => {
    const name = specifier(subpath)
    const esm = JSON.parse(node(`const m = await import('${name}'); console.log(JSON.stringify(Object.keys(m).sort()))`, 'module')) as string[]
    const cjs = JSON.parse(node(`console.log(JSON.stringify(Object.keys(require('${name}')).sort()))`, 'commonjs')) as string[]
    expect(cjs).toEqual(esm)
    // The names test/package/public-surface.test.ts pins on the sources.
    expect(esm).toEqual([...(PUBLIC_ENTRIES[subpath]?.names ?? [])].sort())
  })

  it('loads the optional crypto packages from node_modules at run time, in ESM and CJS', () => {
    // Bundled into dist, tiny-secp256k1 would lose its WebAssembly file and hash-wasm bring every hash along.
    const esm = node(`const m = await import('x402-facilitator/evm'); console.log(JSON.stringify(await m.cryptoBackends()))`, 'module')
    const cjs = node(`require('x402-facilitator/evm').cryptoBackends().then((b) => console.log(JSON.stringify(b)))`, 'commonjs')
    // secp256k1 (native) is a devDependency here, tried before tiny-secp256k1.
    expect(JSON.parse(esm)).toEqual({ signatures: 'secp256k1', keccak: 'hash-wasm' })
    expect(JSON.parse(cjs)).toEqual(JSON.parse(esm))
    // Without the native package, the WebAssembly one serves from node_modules (bundled, it lost its .wasm file).
    const withoutNative = ['--import', join(root, 'test/package/fixtures/without-native-secp256k1.mjs')]
    const esmWasm = node(`const m = await import('x402-facilitator/evm'); console.log(JSON.stringify(await m.cryptoBackends()))`, 'module', withoutNative)
    const cjsWasm = node(`require('x402-facilitator/evm').cryptoBackends().then((b) => console.log(JSON.stringify(b)))`, 'commonjs', withoutNative)
    expect(JSON.parse(esmWasm)).toEqual({ signatures: 'tiny-secp256k1', keccak: 'hash-wasm' })
    expect(JSON.parse(cjsWasm)).toEqual(JSON.parse(esmWasm))
    // Without WebAssembly (node --jitless) keccak falls back to viem's, and nothing rejects unhandled.
    const jitless = node(
      `const m = await import('x402-facilitator/evm'); m.privateKeySigner('0x${'11'.repeat(32)}'); console.log(JSON.stringify(await m.cryptoBackends()))`,
      'module',
      ['--jitless'],
    )
    expect(JSON.parse(jitless)).toEqual({ signatures: 'secp256k1', keccak: 'viem' })
    for (const file of readdirSync(join(root, 'dist'), { recursive: true, encoding: 'utf8' }).filter((name) => /\.c?js$/.test(name))) {
      const text = readFileSync(join(root, 'dist', file), 'utf8')
      expect(text, file).not.toMatch(/node_modules\/(hash-wasm|tiny-secp256k1|secp256k1)\//)
    }
  })

  it('exports the core API from the main entry', () => {
    const keys = JSON.parse(node(`const m = await import('x402-facilitator'); console.log(JSON.stringify(Object.keys(m)))`, 'module')) as string[]
    for (const name of ['createFacilitator', 'supported', 'verify', 'settle', 'createRegistry', 'FacilitatorError', 'createMemoryStore', 'verifyResponseSchema', 'settleResponseSchema', 'supportedResponseSchema', 'paymentRequestSchema', 'describeNetwork']) {
      expect(keys).toContain(name)
    }
  })

  it('keeps chain libraries out of the core bundle', () => {
    // Follow the core entry's static imports through the shared chunks.
    for (const entry of ['dist/index.js', 'dist/index.cjs', 'dist/http/index.js', 'dist/server/index.js', 'dist/stats/index.js', 'dist/catalog/index.js', 'dist/ledger/index.js']) {
      const seen = new Set<string>()
      const visit = (file: string) => {
        if (seen.has(file)) return
        seen.add(file)
        const text = readFileSync(file, 'utf8')
        expect(text, file).not.toMatch(/from ['"](viem|@solana|@solana-program|ioredis|better-sqlite3|pg)['"/]/)
        expect(text, file).not.toMatch(/require\(['"](viem|@solana|@solana-program|ioredis|better-sqlite3|pg)['"/]/)
        for (const match of text.matchAll(/(?:from |require\()['"](\.{1,2}\/[^'"]+)['"]/g)) visit(resolve(dirname(file), match[1] as string))
      }
      visit(join(root, entry))
      expect(seen.size).toBeGreaterThan(0)
    }
  })

  it('carries its own tree-shaken zod, whose schemas still compose with the installed one', () => {
    // From node_modules, any zod 4 entry loads all 64 of its locale modules: most of a cold start.
    const files = readdirSync(join(root, 'dist'), { recursive: true, encoding: 'utf8' }).filter((name) => /\.c?js$/.test(name))
    let bundled = false
    for (const file of files) {
      const text = readFileSync(join(root, 'dist', file), 'utf8')
      expect(text, file).not.toMatch(/(?:from |require\()['"]zod['"/]/)
      // Only English, the default locale, survives tree-shaking (`import * as z`, never `import { z }`).
      expect(text, file).not.toMatch(/zod\/v4\/locales\/(?!en\.js)/)
      bundled ||= text.includes('zod/v4/locales/en.js')
    }
    expect(bundled).toBe(true)
    // An embedder's own zod builds on our schemas and recognises our errors.
    const code = (load: string) =>
      `${load}
      const outer = z.object({ amount: ours.amountSchema, payload: ours.paymentPayloadV2Schema.optional() })
      const failed = outer.safeParse({ amount: 'x' })
      let caught = false
      try { ours.amountSchema.parse('-1') } catch (error) { caught = error instanceof z.ZodError }
      console.log(JSON.stringify([outer.safeParse({ amount: '10' }).success, failed.success, failed.error.issues[0].path, caught]))`
    const esm = node(code(`const z = await import('zod'); const ours = await import('x402-facilitator')`), 'module')
    const cjs = node(code(`const z = require('zod'); const ours = require('x402-facilitator')`), 'commonjs')
    expect(JSON.parse(esm)).toEqual([true, false, ['amount'], true])
    expect(JSON.parse(cjs)).toEqual(JSON.parse(esm))
  })

  it('loads the SQL drivers only from their own subpaths, as optional peers', () => {
    const peers = (manifest as unknown as { peerDependenciesMeta: Record<string, { optional?: boolean }> }).peerDependenciesMeta
    expect(peers['better-sqlite3']?.optional).toBe(true)
    expect(peers.pg?.optional).toBe(true)
    const esm = node(`const s = await import('x402-facilitator/stores/sqlite'); const p = await import('x402-facilitator/stores/postgres'); console.log(JSON.stringify([typeof s.createSqliteStore, typeof p.createPostgresStore]))`, 'module')
    expect(JSON.parse(esm)).toEqual(['function', 'function'])
  })

  it('writes no file when only imported and used without a store: the default store is in memory', () => {
    // A fresh working directory: anything the library wrote would show up in it.
    const cwd = mkdtempSync(join(tmpdir(), 'x402-no-files-'))
    try {
      const code = `
        const core = await import(${JSON.stringify(join(root, 'dist/index.js'))})
        await import(${JSON.stringify(join(root, 'dist/stores/sqlite.js'))})
        await import(${JSON.stringify(join(root, 'dist/stores/postgres.js'))})
        const facilitator = core.createFacilitator({ schemes: [] })
        await facilitator.settle({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: { scheme: 'exact', network: 'eip155:1', amount: '1', asset: '0x', payTo: '0x', maxTimeoutSeconds: 1 }, payload: {} }, paymentRequirements: { scheme: 'exact', network: 'eip155:1', amount: '1', asset: '0x', payTo: '0x', maxTimeoutSeconds: 1 } })
        console.log(typeof facilitator.store.size)`
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd, encoding: 'utf8' })
      expect(out.trim()).toBe('function')
      expect(readdirSync(cwd)).toEqual([])
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it('declares what bundlers and installers rely on', () => {
    expect(manifest.sideEffects).toBe(false)
    // The OpenTelemetry API is what a library depends on to be traced: a no-op until the application installs an SDK.
    expect(Object.keys(manifest.dependencies)).toEqual(['@opentelemetry/api', 'zod'])
    for (const subpath of subpaths) {
      const target = manifest.exports[subpath]
      expect(typeof target === 'object' && target.import.default.endsWith('.js') && target.require.default.endsWith('.cjs'), subpath).toBe(true)
    }
  })

  it('passes publint and are-the-types-wrong on the packed tarball (node16 and bundler resolution; node10 reads no exports map)', () => {
    const bin = (name: string) => join(root, 'node_modules/.bin', name)
    const publint = execFileSync(bin('publint'), ['--strict'], { cwd: root, encoding: 'utf8', stdio: 'pipe' })
    expect(publint).toContain('All good')
    // Exits non-zero on any problem; prints the table otherwise.
    const attw = execFileSync(bin('attw'), ['--pack', '.', '--profile', 'node16', '--format', 'table'], { cwd: root, encoding: 'utf8', stdio: 'pipe' })
    expect(attw).toContain('x402-facilitator')
  }, 180_000)

  it('ships its license and documentation', () => {
    const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json'], { cwd: root, encoding: 'utf8', stdio: 'pipe' })) as { files: { path: string }[] }[]
    const files = packed[0]!.files.map((file) => file.path)
    for (const file of ['LICENSE', 'README.md', 'CHANGELOG.md', 'docs/catalog.md', 'docs/statistics.md', 'dist/index.js', 'dist/cli.js']) expect(files).toContain(file)
  })
})
