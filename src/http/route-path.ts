import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * The route a request path names under `basePath` (given without a trailing
 * slash), trailing slashes dropped; `not_found` outside the base path.
 *
 * @example
 * routePath('/x402/verify/', '/x402') // '/verify'
 */
export function routePath(pathname: string | undefined, basePath: string): string {
  if (pathname === undefined) throw new FacilitatorError('invalid_request', 'the request URL is invalid')
  let path = pathname
  if (basePath) {
    if (path !== basePath && !path.startsWith(`${basePath}/`)) throw new FacilitatorError('not_found', `no route ${path}`)
    path = path.slice(basePath.length) || '/'
  }
  return path.length > 1 ? path.replace(/\/+$/, '') : path
}

/**
 * An origin-form request target of plain segments (letters, digits, `_`, `~`, `-`), with or
 * without a query: the path `new URL` would read, found without it. One segment per slash, so
 * the match is linear however long the target.
 */
const PLAIN_TARGET = /^\/(?:[\w~-]+\/)*[\w~-]*(?=[?#]|$)/

/**
 * The path of a request target such as node:http's `req.url`, as `new URL` reads it, when the
 * target is plain; `undefined` for anything the URL parser must read (dot segments, escapes,
 * doubled slashes, the absolute form).
 *
 * @example
 * plainPathname('/x402/verify?trace=1') // '/x402/verify'
 * plainPathname('/a/../verify') // undefined: ask `new URL`
 */
export function plainPathname(target: string): string | undefined {
  return PLAIN_TARGET.exec(target)?.[0]
}
