const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * Text made safe for HTML: in element content and in a quoted attribute value
 * (either quote), nothing it holds can open a tag, end the attribute or start
 * an entity. It does not make a URL safe to follow: see `safeHttpUrl`.
 *
 * @example
 * import { escapeHtml } from './escape-html.js'
 *
 * escapeHtml('<img src=x onerror="alert(1)">') // '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char]!)
}
