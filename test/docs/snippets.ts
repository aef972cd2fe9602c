import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import ts from 'typescript'

/** A TypeScript snippet found in the docs or in a JSDoc `@example`, with where it starts. */
export interface Snippet {
  /** Path relative to the repository root. */
  file: string
  /** 1-based line of the snippet's first code line in `file`. */
  line: number
  code: string
  /** Deliberately an excerpt: it must parse, it is not type-checked (nor run). */
  partial: boolean
  /** Why a complete block is type-checked but not run (it needs what the test does not reach), when marked so. */
  notRun?: string
  /** Compiled as an ES module (a copy of a block also compiled as CommonJS): said in its problems. */
  esm?: boolean
}

/** The marker, on the line right before a fence, of a markdown block that is deliberately an excerpt. */
export const MARKDOWN_PARTIAL = '<!-- snippet: partial -->'
/** The marker of a complete markdown block that is type-checked but not run, with the reason: `<!-- snippet: not run: it reads Base mainnet -->`. */
export const MARKDOWN_NOT_RUN = /^<!-- snippet: not run: (.*\S.*) -->$/
/** The first line of an `@example` that is deliberately an excerpt. */
export const EXAMPLE_PARTIAL = '// partial'

/** Every ```ts / ```typescript block of a markdown file. */
export function markdownSnippets(path: string, root: string): Snippet[] {
  const lines = readFileSync(path, 'utf8').split('\n')
  const snippets: Snippet[] = []
  for (let index = 0; index < lines.length; index++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript)\s*$/.exec(lines[index] as string)
    if (!open) continue
    const fence = open[2] as string
    let previous = index - 1
    while (previous >= 0 && (lines[previous] as string).trim() === '') previous--
    const marker = previous >= 0 ? (lines[previous] as string).trim() : ''
    const partial = marker === MARKDOWN_PARTIAL
    const notRun = MARKDOWN_NOT_RUN.exec(marker)?.[1]?.trim()
    const body: string[] = []
    let end = index + 1
    for (; end < lines.length && !(lines[end] as string).trim().startsWith(fence); end++) body.push(lines[end] as string)
    if (end === lines.length) throw new Error(`${relative(root, path)}:${index + 1}: unclosed code fence`)
    snippets.push({ file: relative(root, path), line: index + 2, code: body.join('\n'), partial, ...(notRun ? { notRun } : {}) })
    index = end
  }
  return snippets
}

/**
 * The `@example`s of the public API: the JSDoc of every declaration an entry
 * point exports, and of those declarations' members (an interface's methods,
 * an options type's fields).
 */
export function exampleSnippets(entries: readonly string[], root: string): Snippet[] {
  const program = ts.createProgram(entries, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  })
  const checker = program.getTypeChecker()
  const seen = new Set<ts.Node>()
  const found = new Map<string, Snippet>()

  const collect = (node: ts.Node) => {
    if (seen.has(node)) return
    seen.add(node)
    const source = node.getSourceFile()
    if (source.isDeclarationFile) return
    for (const doc of ts.getJSDocCommentsAndTags(node)) {
      for (const tag of ts.isJSDoc(doc) ? (doc.tags ?? []) : [doc]) {
        if (tag.tagName.text !== 'example') continue
        const snippet = exampleAt(source, tag.getStart(source), root)
        found.set(`${snippet.file}:${snippet.line}`, snippet)
      }
    }
  }

  for (const entry of entries) {
    const source = program.getSourceFile(entry)
    const module = source && checker.getSymbolAtLocation(source)
    if (!module) throw new Error(`${entry}: not a module`)
    for (const exported of checker.getExportsOfModule(module)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      for (const declaration of symbol.declarations ?? []) {
        collect(declaration)
        const members = ts.isInterfaceDeclaration(declaration) || ts.isClassDeclaration(declaration)
          ? declaration.members
          : ts.isTypeAliasDeclaration(declaration) && ts.isTypeLiteralNode(declaration.type)
            ? declaration.type.members
            : []
        for (const member of members) collect(member)
      }
    }
  }
  return [...found.values()].sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line)
}

/** The code of the `@example` tag at `position`: its lines up to the next tag or the end of the comment. */
function exampleAt(source: ts.SourceFile, position: number, root: string): Snippet {
  const lines = source.text.split('\n')
  const tagLine = source.getLineAndCharacterOfPosition(position).line
  const body: string[] = []
  for (let index = tagLine + 1; index < lines.length; index++) {
    const line = lines[index] as string
    if (/^\s*\*\//.test(line) || /^\s*\*\s*@\w/.test(line)) break
    body.push(line.replace(/^\s*\* ?/, '').replace(/\s*\*\/\s*$/, ''))
    if (/\*\/\s*$/.test(line)) break
  }
  const partial = body[0]?.trim() === EXAMPLE_PARTIAL
  return { file: relative(root, source.fileName), line: tagLine + 2, code: body.join('\n'), partial }
}

/** A problem found in a snippet, located in the file the snippet came from. */
export interface SnippetProblem {
  at: string
  message: string
}

/**
 * Compiles the snippets as strict TypeScript files of a project (whose node_modules holds the
 * package), each at the path `fileOf` gives it: the nearest package.json there decides whether
 * it compiles as CommonJS or as an ES module (NodeNext). Each snippet is its own module; partial
 * ones are only parsed.
 */
export function checkSnippets(snippets: readonly Snippet[], fileOf: (snippet: Snippet, index: number) => string, write: (path: string, text: string) => void): SnippetProblem[] {
  const files = snippets.map((snippet, index) => {
    const name = fileOf(snippet, index)
    // `export {}` makes every snippet a module (its own scope; top-level await allowed in an ES module), after its last line.
    write(name, `${snippet.code}\nexport {}\n`)
    return name
  })
  const program = ts.createProgram(files, {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    skipLibCheck: true,
    noEmit: true,
  })
  const problems: SnippetProblem[] = []
  snippets.forEach((snippet, index) => {
    const source = program.getSourceFile(files[index] as string)
    if (!source) throw new Error(`${files[index]} was not compiled`)
    const diagnostics = snippet.partial
      ? program.getSyntacticDiagnostics(source)
      : [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    for (const diagnostic of diagnostics) {
      const line = diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line
      problems.push({
        at: `${snippet.file}:${snippet.line + line}`,
        message: `${snippet.esm ? '(ES module) ' : ''}${snippet.partial ? '(partial, syntax) ' : ''}TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`,
      })
    }
  })
  return problems
}
