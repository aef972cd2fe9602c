/**
 * GET /ledger through the library's handler: private by default, JSON and CSV,
 * filters and cursors, and CSV that a spreadsheet cannot turn into formulas.
 */
import { describe, expect, it } from 'vitest'
import { createHandler, type AuthenticatedRoute } from '../../src/http/handler.js'
import { csvField, LEDGER_CSV_COLUMNS, ledgerCsv } from '../../src/ledger/ledger-csv.js'
import { ledgerRoute } from '../../src/ledger/ledger-route.js'
import { createMemoryLedger } from '../../src/ledger/memory-ledger.js'
import { ledgerPageSchema } from '../../src/ledger/settlement-ledger.js'
import { sampleEntry } from './ledger-conformance.js'

const facilitator = {
  supported: async () => ({ kinds: [], extensions: [], signers: {} }),
  verify: async () => ({ isValid: false }),
  settle: async () => ({ success: false, transaction: '', network: '' }),
}
const TOKEN = 'Bearer admin-token'

async function filledLedger() {
  const ledger = createMemoryLedger()
  for (let i = 0; i < 7; i++) await ledger.append(sampleEntry(i, i === 3 ? { status: 'failed', errorReason: 'insufficient_funds', transaction: null } : {}))
  return ledger
}

function handlerWith(ledger: ReturnType<typeof createMemoryLedger>, asked: AuthenticatedRoute[] = []) {
  return createHandler(facilitator, {
    authenticate: (request, route) => {
      asked.push(route)
      // /supported stays open to everyone: the ledger must not ride on that.
      return route === 'supported' || request.headers.get('authorization') === TOKEN
    },
    routes: [ledgerRoute(ledger)],
  })
}

const get = (handler: (r: Request) => Promise<Response>, query = '', auth = true) =>
  handler(new Request(`http://facilitator.test/ledger${query}`, { headers: auth ? { authorization: TOKEN } : {} }))

/** A small RFC 4180 reader, to check what a spreadsheet would read back. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++
      else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') row.push(field), (field = '')
    else if (c === '\r' && text[i + 1] === '\n') row.push(field), rows.push(row), (row = []), (field = ''), i++
    else field += c
  }
  return rows
}

describe('ledger route', () => {
  it('is never served without authentication: 401 with no authenticate hook at all', async () => {
    const handler = createHandler(facilitator, { routes: [ledgerRoute(await filledLedger())] })
    const response = await handler(new Request('http://facilitator.test/ledger'))
    expect(response.status).toBe(401)
    expect(await response.json()).toMatchObject({ code: 'unauthorized' })
  })

  it("asks authenticate as 'private' (not as /supported) and refuses what it refuses", async () => {
    const asked: AuthenticatedRoute[] = []
    const handler = handlerWith(await filledLedger(), asked)
    expect((await get(handler, '', false)).status).toBe(401)
    expect((await get(handler)).status).toBe(200)
    expect(asked).toEqual(['private', 'private'])
  })

  it('answers a JSON page with filters and a cursor to the next one', async () => {
    const handler = handlerWith(await filledLedger())
    const first = await get(handler, '?status=settled&limit=4&order=asc')
    expect(first.headers.get('content-type')).toMatch(/application\/json/)
    expect(first.headers.get('cache-control')).toBe('no-store')
    const page = ledgerPageSchema.parse(await first.json())
    expect(page.entries.map((e) => e.recordedAt.slice(11, 16))).toEqual(['12:00', '12:01', '12:02', '12:04'])
    const next = ledgerPageSchema.parse(await (await get(handler, `?status=settled&limit=4&order=asc&cursor=${page.nextCursor}`)).json())
    expect(next.entries.map((e) => e.recordedAt.slice(11, 16))).toEqual(['12:05', '12:06'])
    expect(next.nextCursor).toBeUndefined()
    const range = ledgerPageSchema.parse(await (await get(handler, '?from=2026-11-20T12:02:00Z&to=2026-11-20T12:04:00Z&network=base')).json())
    expect(range.entries.map((e) => [e.recordedAt.slice(11, 16), e.status])).toEqual([['12:03', 'failed'], ['12:02', 'settled']])
  })

  it('refuses bad or unknown parameters with 400 naming them', async () => {
    const handler = handlerWith(await filledLedger())
    for (const [query, field] of [
      ['?status=lost', 'status'],
      ['?limit=lots', 'limit'],
      ['?limit=5000', 'limit'],
      ['?from=someday', 'from'],
      ['?format=xml', 'format'],
      ['?cursor=zzz', 'cursor'],
      ['?payto=0xabc', 'payto'],
    ]) {
      const response = await get(handler, query)
      expect(response.status, query).toBe(400)
      const body = (await response.json()) as { code: string; error: string }
      expect(body.code, query).toBe('invalid_request')
      expect(body.error.startsWith(`${field}:`), `${query}: ${body.error}`).toBe(true)
    }
  })

  it('answers CSV with a header row, one line per entry and the next cursor in a header', async () => {
    const handler = handlerWith(await filledLedger())
    const response = await get(handler, '?format=csv&limit=3')
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(response.headers.get('content-disposition')).toMatch(/attachment/)
    const rows = parseCsv(await response.text())
    expect(rows[0]).toEqual([...LEDGER_CSV_COLUMNS])
    expect(rows.slice(1).map((r) => r[1])).toEqual(['2026-11-20T12:06:00.000Z', '2026-11-20T12:05:00.000Z', '2026-11-20T12:04:00.000Z'])
    const cursor = response.headers.get('x-next-cursor')
    expect(cursor).toBeTruthy()
    const rest = parseCsv(await (await get(handler, `?format=csv&limit=10&cursor=${cursor}`)).text())
    expect(rest.slice(1).map((r) => r[3])).toEqual(['failed', 'settled', 'settled', 'settled'])
  })

  it('escapes fields against CSV and formula injection', async () => {
    const ledger = createMemoryLedger()
    const hostile = [
      '=HYPERLINK("http://evil.example","click")',
      '+1+cmd|\' /C calc\'!A0',
      '-2+3',
      '@SUM(A1:A2)',
      '\t=1',
      ' =1',
      '＝1',
      'a,b\r\nnext line "quoted"',
    ]
    for (const [i, text] of hostile.entries()) {
      await ledger.append(sampleEntry(i, { status: 'failed', errorReason: 'transaction_failed', errorMessage: text, payTo: text }))
    }
    const rows = parseCsv(await (await get(handlerWith(ledger), '?format=csv&order=asc')).text())
    expect(rows).toHaveLength(hostile.length + 1)
    const message = LEDGER_CSV_COLUMNS.indexOf('errorMessage')
    const payTo = LEDGER_CSV_COLUMNS.indexOf('payTo')
    for (const [i, text] of hostile.entries()) {
      const row = rows[i + 1]!
      expect(row).toHaveLength(LEDGER_CSV_COLUMNS.length)
      // What a spreadsheet reads back is the text, never a formula: a leading ' wherever one could start.
      const expected = i === hostile.length - 1 ? text : `'${text}`
      expect(row[message]).toBe(expected)
      expect(row[payTo]).toBe(expected)
    }
    expect(csvField(null)).toBe('')
    expect(csvField(42)).toBe('42')
    expect(ledgerCsv([], { header: false })).toBe('')
  })
})
