import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The layers of src/, lowest first (docs/architecture.md draws them). A folder imports only from
 * folders of lower layers; folders of one layer do not import each other unless listed in SIDEWAYS.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['errors'],
  ['schemas', 'networks'],
  ['transport'],
  // The adapter contract, registry, dispatch, hooks' types and the helpers adapters share.
  ['core'],
  // Ledger and settlement records as data (interfaces the stores implement) come before the stores.
  ['stores'],
  ['settlement'],
  ['evm', 'svm'],
  ['facilitator'],
  ['http'],
  ['stats', 'catalog', 'ledger', 'ops'],
  ['resource-server'],
  ['cli', 'testing'],
]
/** Allowed imports within a layer: `from -> to`. */
const SIDEWAYS = new Set(['stats -> catalog', 'ledger -> catalog'])
/** Imports of a lower layer's folder from a higher one that the drawing names as an exception. */
const EXCEPTIONS = new Set(['stores -> ledger'])

const SRC = 'src'

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return name.endsWith('.ts') ? [path] : []
  })
}

/** Relative imports and re-exports of a file, resolved to source paths; `runtime`: those left after the build (no `import type`). */
function importsOf(file: string, runtime = false): string[] {
  // Comments (an @example's imports) are not imports.
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
  const found: string[] = []
  for (const match of text.matchAll(/(import|export)(\s+type)?[^'"]*?(?:from\s*)?\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    if (runtime && match[2]) continue
    found.push(normalize(join(dirname(file), match[3]!.replace(/\.js$/, '.ts'))))
  }
  return found
}

const folderOf = (file: string) => {
  const parts = relative(SRC, file).split('/')
  return parts.length > 1 ? parts[0]! : 'index'
}

const layerOf = (folder: string) => LAYERS.findIndex((layer) => layer.includes(folder))

function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (node: string) => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }
    stack.pop()
    state.set(node, 'done')
  }
  for (const node of graph.keys()) if (!state.has(node)) visit(node)
  return found
}

describe('import direction', () => {
  const files = sourceFiles(SRC)
  const inSrc = (targets: string[]) => targets.filter((target) => target.startsWith(SRC))
  const graph = new Map(files.map((file) => [file, inSrc(importsOf(file))]))
  // Type-only imports vanish at build: a module circle is one of runtime imports.
  const runtimeGraph = new Map(files.map((file) => [file, inSrc(importsOf(file, true))]))

  it('every folder of src/ has a layer', () => {
    const folders = new Set(files.map(folderOf))
    folders.delete('index')
    expect([...folders].filter((folder) => layerOf(folder) < 0)).toEqual([])
  })

  it('no folder imports from a higher layer or sideways, except as drawn', () => {
    const offending = new Set<string>()
    for (const [file, targets] of graph) {
      const from = folderOf(file)
      if (from === 'index') continue
      for (const target of targets) {
        const to = folderOf(target)
        if (to === from) continue
        const edge = `${from} -> ${to}`
        const upward = layerOf(to) > layerOf(from) || to === 'index'
        const sideways = layerOf(to) === layerOf(from) && !SIDEWAYS.has(edge)
        if ((upward || sideways) && !EXCEPTIONS.has(edge)) offending.add(`${relative(SRC, file)} -> ${relative(SRC, target)}`)
      }
    }
    expect([...offending]).toEqual([])
  })

  it('no module imports itself back through others at runtime', () => {
    expect(cycles(runtimeGraph).map((cycle) => cycle.map((file) => relative(SRC, file)).join(' -> '))).toEqual([])
  })

  it('the checks see what they are for', () => {
    expect(cycles(new Map([['a', ['b']], ['b', ['a']]]))).toHaveLength(1)
    expect(layerOf('core')).toBeLessThan(layerOf('settlement'))
    expect(importsOf('src/facilitator/facilitator.ts').some((target) => folderOf(target) === 'settlement')).toBe(true)
    // `import type` counts for the layers, not for runtime circles.
    expect(importsOf('src/http/request-id.ts')).toContain('src/http/handler.ts')
    expect(importsOf('src/http/request-id.ts', true)).not.toContain('src/http/handler.ts')
  })
})
