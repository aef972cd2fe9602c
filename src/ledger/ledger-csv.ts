import type { LedgerEntry } from './settlement-ledger.js'

/** The CSV columns, in order: every field of a ledger entry (`cost`, added later, last). */
export const LEDGER_CSV_COLUMNS = [
  'id',
  'recordedAt',
  'startedAt',
  'status',
  'resumed',
  'errorReason',
  'errorMessage',
  'network',
  'scheme',
  'x402Version',
  'payer',
  'payTo',
  'asset',
  'amount',
  'transaction',
  'resourceUrl',
  // Last, so that readers of the columns before it keep their places.
  'cost',
] as const satisfies readonly (keyof LedgerEntry)[]

// A spreadsheet runs a cell that starts with one of these as a formula (also after blanks,
// and in their full-width forms): a payer-controlled field must never become one.
const FORMULA_START = /^[\s\u3000]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/

/**
 * One CSV field (RFC 4180), safe to open in a spreadsheet: a value that a
 * spreadsheet would read as a formula gets a leading `'`, and a value with a comma,
 * a quote or a line break is quoted with its quotes doubled.
 *
 * @example
 * // partial
 * csvField('=HYPERLINK("http://evil")') // `"'=HYPERLINK(""http://evil"")"`
 * csvField('plain') // 'plain'
 */
export function csvField(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return ''
  let text = String(value)
  if (FORMULA_START.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/**
 * Ledger entries as CSV text, a header line first, lines ending in CRLF.
 *
 * @example
 * // partial
 * const { entries } = await ledger.read({ from: '2026-11-01', to: '2026-12-01', order: 'asc', limit: 1000 })
 * await writeFile('november.csv', ledgerCsv(entries))
 */
export function ledgerCsv(entries: readonly LedgerEntry[], options: { header?: boolean } = {}): string {
  const lines = options.header === false ? [] : [LEDGER_CSV_COLUMNS.join(',')]
  for (const entry of entries) lines.push(LEDGER_CSV_COLUMNS.map((column) => csvField(entry[column])).join(','))
  return lines.length === 0 ? '' : `${lines.join('\r\n')}\r\n`
}
