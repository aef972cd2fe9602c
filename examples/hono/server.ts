import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { Facilitator } from 'x402-facilitator'
import { createHandler } from 'x402-facilitator/http'

/** A facilitator mounted at /x402 in a Hono app: Hono speaks Request/Response natively. */
export async function startHonoServer(facilitator: Facilitator, port = 0) {
  const handler = createHandler(facilitator, { basePath: '/x402' })
  const app = new Hono()
  app.all('/x402/*', (c) => handler(c.req.raw))
  return new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
    const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) =>
      resolve({
        url: `http://127.0.0.1:${info.port}/x402`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    )
  })
}
