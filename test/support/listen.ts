/**
 * Starts a node:http request listener (an Express app, a Hono node adapter)
 * on a free loopback port, for the interop tests and the demo.
 *
 * @example
 * const shop = await listen(app)
 * await fetch(`${shop.url}/weather`)
 * await shop.close()
 */
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A listening loopback server. */
export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  close(): Promise<void>
}

export async function listen(listener: RequestListener): Promise<LoopbackServer> {
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    // Keep-alive sockets from fetch would hold close() open: drop them.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
