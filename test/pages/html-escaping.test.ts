import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { escapeHtml } from '../../src/stats/page/escape-html.js'
import { html } from '../../src/stats/page/html-template.js'
import { safeHttpUrl } from '../../src/stats/page/safe-http-url.js'

const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'

/** What an HTML parser gives back for escaped text: the five entities, undone. */
const unescape = (text: string) => text.replace(/&lt;|&gt;|&quot;|&#39;|&amp;/g, (entity) => ({ '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&amp;': '&' })[entity]!)

describe('escapeHtml', () => {
  it('turns markup into text', () => {
    expect(escapeHtml(HOSTILE)).toBe('&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;')
    expect(escapeHtml('Fish & Chips')).toBe('Fish &amp; Chips')
    // An entity in a payload stays text: "&lt;" must show as "&lt;", not as "<".
    expect(escapeHtml('&lt;b&gt;')).toBe('&amp;lt;b&amp;gt;')
  })

  it('cannot end a quoted attribute, of either quote', () => {
    expect(escapeHtml(`" onmouseover="alert(1)`)).toBe('&quot; onmouseover=&quot;alert(1)')
    expect(escapeHtml(`' onfocus='alert(1)`)).toBe('&#39; onfocus=&#39;alert(1)')
  })

  it('leaves no character that opens a tag, ends an attribute or starts an entity, and loses nothing', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'<>"\'&;a =/#x'.split('')), maxLength: 40 }), fc.string(), (markupish, anything) => {
        for (const input of [markupish, anything]) {
          const escaped = escapeHtml(input)
          expect(escaped).not.toMatch(/[<>"']/)
          // Every & starts one of our entities.
          expect(escaped.replace(/&(lt|gt|quot|#39|amp);/g, '')).not.toContain('&')
          expect(unescape(escaped)).toBe(input)
        }
      }),
      { numRuns: 2_000 },
    )
  })
})

describe('html template', () => {
  it('escapes every interpolated string and number, in content and in attributes', () => {
    const description = HOSTILE
    const out = html`<td title="${description}">${description}</td>`.text
    expect(out).toBe(`<td title="${escapeHtml(HOSTILE)}">${escapeHtml(HOSTILE)}</td>`)
    expect(out).not.toContain('<script')
    expect(out).not.toContain('<img')
  })

  it('keeps its own markup, joins arrays and writes nothing for null, undefined and false', () => {
    const items = ['a<b', 'c']
    expect(html`<ul>${items.map((item) => html`<li>${item}</li>`)}</ul>`.text).toBe('<ul><li>a&lt;b</li><li>c</li></ul>')
    expect(html`[${null}${undefined}${false}${0}]`.text).toBe('[0]')
    // A string that looks like markup is still a string: only the tag makes markup.
    expect(html`${'<b>bold</b>'}`.text).toBe('&lt;b&gt;bold&lt;/b&gt;')
  })
})

describe('safeHttpUrl', () => {
  it('keeps absolute http and https addresses, in the form a browser reads them', () => {
    expect(safeHttpUrl('https://api.example.com/weather?city=Paris')).toBe('https://api.example.com/weather?city=Paris')
    expect(safeHttpUrl('http://127.0.0.1:4021/notes')).toBe('http://127.0.0.1:4021/notes')
    expect(safeHttpUrl('HTTPS://API.Example.com')).toBe('https://api.example.com/')
    // Quotes and angle brackets come back percent-encoded: the escaped attribute is plain.
    expect(safeHttpUrl('https://example.com/a"b<c>')).toBe('https://example.com/a%22b%3Cc%3E')
  })

  it('refuses javascript:, data:, other schemes and the tricks that hide them', () => {
    for (const url of [
      'javascript:alert(1)',
      'JavaScript:alert(1)',
      ' javascript:alert(1)',
      'java\tscript:alert(1)',
      'java\nscript:alert(1)',
      '\u0000javascript:alert(1)',
      'javascript://example.com/%0aalert(1)',
      'data:text/html,<script>alert(1)</script>',
      'vbscript:msgbox(1)',
      'file:///etc/passwd',
      'ftp://example.com/',
      '//evil.example/path',
      '/relative/path',
      'example.com',
      '',
      `https://example.com/${'a'.repeat(3000)}`,
    ]) {
      expect(safeHttpUrl(url), JSON.stringify(url)).toBeUndefined()
    }
  })

  it('refuses credentials, which make a link read as one host and lead to another', () => {
    expect(safeHttpUrl('https://bank.example.com@evil.example/')).toBeUndefined()
    expect(safeHttpUrl('https://user:pass@example.com/')).toBeUndefined()
  })

  it('answers only what the URL parser reads as http(s), for any input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.constantFrom('', 'https://', 'http://', 'javascript:', ' jav\tascript:', 'data:'), (rest, prefix) => {
        const safe = safeHttpUrl(prefix + rest)
        if (safe !== undefined) expect(['http:', 'https:']).toContain(new URL(safe).protocol)
      }),
      { numRuns: 2_000 },
    )
  })
})
