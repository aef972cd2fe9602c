import type { AddressInfo } from 'node:net'
import type { Facilitator } from 'x402-facilitator'
import { createHandler, createNodeServer, type HandlerOptions, type NodeServerOptions } from 'x402-facilitator/http'

/**
 * A facilitator on plain node:http: the handler does routing, limits and errors;
 * createNodeServer bounds connections, slow clients and bodies in flight.
 */
export async function startNodeHttpServer(facilitator: Facilitator, options: HandlerOptions & { port?: number; server?: NodeServerOptions } = {}) {
  const server = createNodeServer(createHandler(facilitator, options), options.server)
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Idle keep-alive connections would hold close() for their timeout.
        server.closeIdleConnections()
      }),
  }
}
