import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkSnippets, exampleSnippets, markdownSnippets, type Snippet, type SnippetProblem } from './snippets.js'

// Every TypeScript block of the docs and every `@example` of the public API is
// compiled as a newcomer's strict ESM project would compile it, against the
// built package's types (`x402-facilitator/evm` resolves through package.json
// `exports` to dist/evm/index.d.ts). Excerpts are marked `<!-- snippet: partial -->`
// before the fence, or `// partial` as an example's first line, and only parsed.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }

// The sources of the package's entry points, by subpath (tsup.config.ts builds them).
const ENTRIES: Record<string, string> = {
  '.': 'src/index.ts',
  './http': 'src/http/index.ts',
  './evm': 'src/evm/index.ts',
  './svm': 'src/svm/index.ts',
  './stores/redis': 'src/stores/redis-store.ts',
  './metrics': 'src/ops/metrics.ts',
  './stores/sqlite': 'src/stores/sqlite/index.ts',
  './stores/postgres': 'src/stores/postgres/index.ts',
}

const markdownFiles = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]

let scratch = ''
let snippets: Snippet[] = []
let problems: SnippetProblem[] = []

beforeAll(() => {
  // A project of its own under node_modules/.cache (so viem and the other peers resolve from
  // the repository's node_modules), with the package built into its node_modules. Building
  // here rather than into dist/ keeps clear of the package-shape test, which cleans dist/.
  const cache = join(root, 'node_modules/.cache')
  mkdirSync(cache, { recursive: true })
  scratch = mkdtempSync(join(cache, 'x402-snippets-'))
  const pkg = join(scratch, 'node_modules/x402-facilitator')
  mkdirSync(pkg, { recursive: true })
  copyFileSync(join(root, 'package.json'), join(pkg, 'package.json'))
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'newcomer', private: true, type: 'module' }))
  execFileSync(process.execPath, [join(root, 'node_modules/tsup/dist/cli-default.js'), '--dts-only', '--out-dir', join(pkg, 'dist')], { cwd: root, stdio: 'pipe' })

  snippets = [
    ...markdownFiles.flatMap((file) => markdownSnippets(join(root, file), root)),
    ...exampleSnippets(Object.values(ENTRIES).map((file) => join(root, file)), root),
    // Two wrong snippets that must be reported, to keep the check itself honest.
    { file: '(self-test)', line: 10, partial: false, code: "import { createFacilitator } from 'x402-facilitator'\ncreateFacilitator({ schemes: [], networks: { 'eip155:8453': {} } })" },
    { file: '(self-test partial)', line: 20, partial: true, code: 'const a = schemes\nconst = 1' },
  ]
  problems = checkSnippets(snippets, scratch, (path, text) => writeFileSync(path, text))
}, 240_000)

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true })
})

const problemsIn = (file: string) => problems.filter((problem) => problem.at.startsWith(file.endsWith('/') ? file : `${file}:`)).map((problem) => `${problem.at}: ${problem.message}`)

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
  })

  it('finds the blocks and the public examples', () => {
    const fromMarkdown = snippets.filter((snippet) => snippet.file.endsWith('.md'))
    const examples = snippets.filter((snippet) => snippet.file.startsWith('src/'))
    expect(fromMarkdown.length).toBeGreaterThan(5)
    expect(examples.length).toBeGreaterThan(10)
    expect(examples.some((snippet) => snippet.file === 'src/core/facilitator.ts')).toBe(true)
  })

  it.each(markdownFiles)('%s: every TypeScript block compiles', (file) => {
    expect(problemsIn(file)).toEqual([])
  })

  it('every @example of the public API compiles', () => {
    expect(problemsIn('src/')).toEqual([])
  })
})
