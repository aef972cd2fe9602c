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
