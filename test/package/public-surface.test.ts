import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import tsupConfig from '../../tsup.config.js'
import { PUBLIC_ENTRIES } from './public-names.js'

// The public API is what the entries export: an export added by accident (a helper re-exported
// through an index) fails here, and so does one lost. test/package/shape.test.ts checks the same
// names on the built package, through package.json `exports`, in ESM and CJS.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { import: { types: string; default: string }; require: { types: string; default: string } }>
}
const tsupEntries = (tsupConfig as { entry: Record<string, string> }).entry
const subpaths = Object.keys(PUBLIC_ENTRIES)

describe('public surface', () => {
  it.each(subpaths)('%s exports exactly its pinned runtime names', async (subpath) => {
    const entry = PUBLIC_ENTRIES[subpath]!
    const module = (await import(pathToFileURL(join(root, entry.source)).href)) as Record<string, unknown>
    expect(Object.keys(module).sort()).toEqual([...entry.names].sort())
  })

  it('has one package.json subpath per pinned entry, each built by tsup from that entry for import and require, with types', () => {
    expect(Object.keys(manifest.exports).filter((key) => key !== './package.json').sort()).toEqual([...subpaths].sort())
    for (const subpath of subpaths) {
      const target = manifest.exports[subpath]
      if (typeof target !== 'object') throw new Error(`${subpath}: no import/require conditions`)
      const built = Object.entries(tsupEntries).find(([, source]) => source === PUBLIC_ENTRIES[subpath]!.source)?.[0]
      expect(built, `${subpath}: no tsup entry builds ${PUBLIC_ENTRIES[subpath]!.source}`).toBeDefined()
      expect(target, subpath).toEqual({
        import: { types: `./dist/${built}.d.ts`, default: `./dist/${built}.js` },
        require: { types: `./dist/${built}.d.cts`, default: `./dist/${built}.cjs` },
      })
    }
  })

  it('exports each name from one entry only: one way to reach each thing', () => {
    const owner = new Map<string, string>()
    for (const [subpath, { names }] of Object.entries(PUBLIC_ENTRIES)) {
      for (const name of names) {
        expect(owner.get(name), `${name} is exported by ${owner.get(name)} and ${subpath}`).toBeUndefined()
        owner.set(name, subpath)
      }
    }
  })

  it('keeps the page, CSV and formatting helpers and the other ways to serve statistics private', () => {
    const everything = new Set(Object.values(PUBLIC_ENTRIES).flatMap((entry) => entry.names))
    const helpers = [
      'escapeHtml', 'safeHttpUrl', 'csvField', 'formatUsdCompact', 'formatLastCalled', 'formatTokenUnits', 'usdValue', 'publicCacheControl',
      'renderStatsPage', 'statsPageRoute', 'statsRoute', 'createStatsHandler', 'createPublicHandler', 'readPublicStats', 'createStatsRecorder',
      'createCatalogRecorder', 'createLatencyHistogram', 'latencyBucket', 'readJsonBody', 'answerOf',
    ]
    for (const name of helpers) expect(everything.has(name), name).toBe(false)
  })
})
