import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Facilitator } from 'x402-facilitator'
import { createHandler, createNodeListener, type HandlerOptions } from 'x402-facilitator/http'

/** A facilitator on plain node:http: the handler does routing, limits and errors. */
export async function startNodeHttpServer(facilitator: Facilitator, options: HandlerOptions & { port?: number } = {}) {
  const server = createServer(createNodeListener(createHandler(facilitator, options)))
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
