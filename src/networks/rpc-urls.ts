import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * Refuses an RPC URL that is undefined, empty or not http(s) (an unset environment variable in
 * the configuration) when the factory is called, naming its place, never quoting it.
 */
export function checkRpcUrls(urls: readonly unknown[], where: string): void {
  urls.forEach((url, index) => {
    if (typeof url !== 'string' || url.trim() === '') throw new FacilitatorError('misconfigured', `${where}: URL ${index + 1} is empty or undefined (is its environment variable set?)`)
    let protocol = ''
    try {
      protocol = new URL(url).protocol
    } catch {
      protocol = ''
    }
    if (protocol !== 'http:' && protocol !== 'https:') throw new FacilitatorError('misconfigured', `${where}: URL ${index + 1} is not an http:// or https:// URL`)
  })
}
