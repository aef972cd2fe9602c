import { escapeHtml } from './escape-html.js'

/** Markup that is already safe: made by `html`, never from a plain string. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

/** What `html` accepts between `${}`: text is escaped, markup kept, nothing else written. */
export type HtmlValue = SafeHtml | string | number | null | undefined | false | readonly HtmlValue[]

/**
 * A template tag that escapes every interpolated value unless it is `SafeHtml`
 * (made by this tag): markup is built only from the literal parts, so a value
 * that came from a payload can never become markup. Arrays are joined;
 * `null`, `undefined` and `false` write nothing.
 *
 * @example
 * html`<td title="${description}">${name}</td>` // both escaped
 * html`<ul>${items.map((item) => html`<li>${item}</li>`)}</ul>`
 */
export function html(literals: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = literals[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]) + literals[i + 1]!
  return new SafeHtml(out)
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text
  if (value === null || value === undefined || value === false) return ''
  if (typeof value === 'number') return escapeHtml(String(value))
  if (typeof value === 'string') return escapeHtml(value)
  let out = ''
  for (const item of value) out += render(item)
  return out
}
