/**
 * Naming and identity of paid resources. Resource URLs come from payment
 * payloads, i.e. from clients: they are checked and normalised here before
 * they can become catalog entries.
 */

const MAX_URL_LENGTH = 2048
// Second-level labels under which registrable names sit one label deeper (example.co.uk).
const SECOND_LEVEL = new Set(['co', 'com', 'org', 'net', 'ac', 'gov', 'edu'])
// Path segments that say nothing about the resource.
const NOISE_SEGMENTS = /^(api|v\d+)$/i

/**
 * The catalog identity of a resource URL: origin and path, without query,
 * fragment or credentials; with a bazaar `routeTemplate` (`/users/:id`) the
 * template replaces the path so that one route is one entry. `undefined` for
 * anything that is not a plain http(s) URL.
 *
 * @example
 * import { resourceId } from './resource-name.js'
 *
 * resourceId('https://api.example.com/weather?city=Oslo') // 'https://api.example.com/weather'
 * resourceId('https://api.example.com/users/42', '/users/:id') // 'https://api.example.com/users/:id'
 */
export function resourceId(url: string, routeTemplate?: string): string | undefined {
  if (url.length > MAX_URL_LENGTH) return undefined
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  if ((parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.username || parsed.password) return undefined
  const path = routeTemplate !== undefined && isSafeRouteTemplate(routeTemplate) ? routeTemplate : parsed.pathname
  return `${parsed.origin}${path === '/' ? '' : path.replace(/\/+$/, '')}`
}

/**
 * A route template is safe when it is a plain path: the facilitator is a trust
 * boundary and a client could otherwise file its payment under any URL.
 */
export function isSafeRouteTemplate(template: string): boolean {
  if (!template.startsWith('/') || template.length > 512) return false
  if (!/^[A-Za-z0-9_:/.\-~%]+$/.test(template)) return false
  let decoded = template
  for (let i = 0; i < 3; i++) {
    if (decoded.includes('..') || decoded.includes('://')) return false
    try {
      const next = decodeURIComponent(decoded)
      if (next === decoded) break
      decoded = next
    } catch {
      return false
    }
  }
  return !decoded.includes('..') && !decoded.includes('://')
}

/**
 * `<owner>/<resource-slug>`: the owner from the service name when one is
 * given, else from the host's registrable label; the slug from the path.
 *
 * @example
 * import { resourceName } from './resource-name.js'
 *
 * resourceName('https://api.weather-co.com/v1/forecast/daily') // 'weather-co/forecast-daily'
 * resourceName('https://example.com/')                          // 'example/root'
 */
export function resourceName(id: string, serviceName?: string): string {
  const url = new URL(id)
  const owner = (serviceName && slugify(serviceName)) || hostOwner(url.hostname)
  const segments = url.pathname
    .split('/')
    .filter((segment) => segment && !NOISE_SEGMENTS.test(segment))
    .map((segment) => segment.replace(/^:/, ''))
  return `${owner}/${slugify(segments.join('-')) || 'root'}`
}

function hostOwner(hostname: string): string {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '')
  if (/^[\d.]+$/.test(host) || host.includes(':')) return slugify(host) || 'unknown'
  const labels = host.split('.').filter(Boolean)
  if (labels.length < 2) return slugify(host) || 'unknown'
  const second = labels[labels.length - 2]!
  const owner = SECOND_LEVEL.has(second) && labels.length >= 3 ? labels[labels.length - 3]! : second
  return slugify(owner) || 'unknown'
}

function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '')
}
