/**
 * A reverse proxy in front of a test server, as nginx or a cloud load balancer runs one: it passes
 * each request on and names the address it received it from, either appended to the client's own
 * `X-Forwarded-For` (nginx `$proxy_add_x_forwarded_for`) or written into a header it overwrites
 * (`x-real-ip`, `cf-connecting-ip`). Plus `requestFrom`, an HTTP request sent from a chosen loopback
 * address (127.0.0.2, ...), so a test has several real clients on one machine.
 *
 * @example
 * const proxy = await startForwardingProxy(upstream.url, { append: 'x-forwarded-for' })
 * await requestFrom('127.0.0.2', `${proxy.url}/verify`, { method: 'POST', headers: { 'x-forwarded-for': '1.2.3.4' }, body: '{}' })
 */
import { createServer, request, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ForwardingProxy {
  readonly url: string
  close(): Promise<void>
}

/** How the proxy names the client: appended to X-Forwarded-For, or set in a header (replacing the client's). */
export type ForwardingMode = { append: 'x-forwarded-for' } | { set: string }

const peerOf = (address: string | undefined) => (address ?? '').replace(/^::ffff:/, '')

export async function startForwardingProxy(upstream: string, mode: ForwardingMode): Promise<ForwardingProxy> {
  const target = new URL(upstream)
  const server = createServer((req, res) => {
    const headers: IncomingHttpHeaders = { ...req.headers }
    const peer = peerOf(req.socket.remoteAddress)
    if ('append' in mode) headers['x-forwarded-for'] = req.headers['x-forwarded-for'] ? `${req.headers['x-forwarded-for']}, ${peer}` : peer
    else headers[mode.set] = peer
    const forwarded = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    forwarded.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    req.pipe(forwarded)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** One request sent from `localAddress` (a loopback address such as 127.0.0.2): its status and body. */
export function requestFrom(localAddress: string, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: init.method ?? 'GET', headers: init.headers, localAddress, agent: false }, (answer) => {
      let body = ''
      answer.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body }))
    })
    outgoing.on('error', reject)
    outgoing.end(init.body)
  })
}
