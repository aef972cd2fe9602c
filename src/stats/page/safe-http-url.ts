/**
 * A link target a page may show: an absolute `http:` or `https:` URL without
 * credentials, in the normal form the URL parser gives it (so `java\tscript:`,
 * ` javascript:` and percent tricks are read the way a browser reads them);
 * `undefined` for anything else (`javascript:`, `data:`, relative paths,
 * `https://bank.example@evil.example/`). Escape the result before writing it
 * into an attribute.
 *
 * @example
 * import { safeHttpUrl } from './safe-http-url.js'
 *
 * safeHttpUrl('https://api.example.com/weather?city=Paris') // 'https://api.example.com/weather?city=Paris'
 * safeHttpUrl('javascript:alert(1)')                        // undefined
 */
export function safeHttpUrl(value: string): string | undefined {
  // Longer than any resource address worth showing, and a cheap bound on the parser's work.
  if (value.length > 2048) return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return undefined
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined
  // user:password@ makes a link read as one host and lead to another.
  if (url.username || url.password) return undefined
  return url.href
}
