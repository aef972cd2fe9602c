import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { plainPathname, routePath } from '../../src/http/route-path.js'

const viaUrl = (target: string) => new URL(target, 'http://127.0.0.1:4020').pathname

describe('plainPathname', () => {
  it('reads the path of plain targets, query and fragment dropped', () => {
    expect(plainPathname('/')).toBe('/')
    expect(plainPathname('/verify')).toBe('/verify')
    expect(plainPathname('/x402/verify/')).toBe('/x402/verify/')
    expect(plainPathname('/verify?trace=1&x=/../')).toBe('/verify')
    expect(plainPathname('/public/stats#top')).toBe('/public/stats')
    expect(plainPathname('/a_b~c-d/e')).toBe('/a_b~c-d/e')
  })

  it('leaves to the URL parser every target it would rewrite', () => {
    for (const target of ['//verify', '/x402//verify', '/a/../verify', '/./verify', '/verify%2F', '/ver ify', '/verify\\', 'http://h/verify', '*', '', 'verify', '/vérify']) {
      expect(plainPathname(target), target).toBeUndefined()
    }
  })

  it('agrees with new URL on every target it reads', () => {
    const target = fc.string({ unit: fc.constantFrom(...'/ab_~-.%2F?#\\ é:;@'.split('')), maxLength: 24 }).map((rest) => `/${rest}`)
    fc.assert(
      fc.property(target, (t) => {
        const plain = plainPathname(t)
        if (plain !== undefined) expect(plain).toBe(viaUrl(t))
      }),
      { numRuns: 5_000 },
    )
  })

  it('stays linear on a long target that does not match (no backtracking blow-up)', () => {
    // A pattern with an optional separator inside a repeated group would try 2^n splits here.
    expect(plainPathname(`/${'a'.repeat(50_000)}%`)).toBeUndefined()
    expect(plainPathname(`/${'a/'.repeat(25_000)}.`)).toBeUndefined()
  })

  it('feeds routePath as the URL parser would', () => {
    for (const target of ['/x402/verify', '/x402/verify/', '/x402/verify?x=1']) {
      expect(routePath(plainPathname(target), '/x402')).toBe(routePath(viaUrl(target), '/x402'))
    }
  })
})
