import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

// The core routes and settles every scheme through the adapter contract (parse and its key,
// settleSetsAmount, spendableWithoutTransaction, resume): a scheme-specific branch in it is how
// the cross-scheme Permit2 replay arose (issue #30). Comments may name schemes; code may not.
const FOLDERS = ['src/core', 'src/settlement', 'src/facilitator']
const SCHEME_IN_CODE = [/['"`](exact|upto|permit2|eip3009|batch-settlement)['"`]/, /\.scheme\s*[!=]==\s*['"`]/]

function codeLines(text: string): string[] {
  // Drop block and line comments; string contents stay (they are what the rule is about).
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (block) => block.replace(/[^\n]/g, ''))
    .split('\n')
    .map((line) => line.replace(/(^|[^:'"`])\/\/.*$/, '$1'))
}

describe('the core names no scheme', () => {
  it('src/core and src/settlement branch on adapter capabilities, never on a scheme name', () => {
    const offending: string[] = []
    for (const folder of FOLDERS) {
      for (const name of readdirSync(folder).filter((file) => file.endsWith('.ts'))) {
        codeLines(readFileSync(join(folder, name), 'utf8')).forEach((line, index) => {
          if (SCHEME_IN_CODE.some((pattern) => pattern.test(line))) offending.push(`${folder}/${name}:${index + 1}: ${line.trim()}`)
        })
      }
    }
    expect(offending).toEqual([])
  })

  it('the check itself sees a scheme branch', () => {
    expect(codeLines("if (context.scheme === 'upto') return // upto").some((line) => SCHEME_IN_CODE.some((p) => p.test(line)))).toBe(true)
    expect(codeLines('// the upto scheme, in a comment: `upto`').some((line) => SCHEME_IN_CODE.some((p) => p.test(line)))).toBe(false)
  })
})
