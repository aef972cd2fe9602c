import Fastify from 'fastify'
import type { Facilitator } from 'x402-facilitator'
import { createHandler, createNodeListener } from 'x402-facilitator/http'

/**
 * A facilitator mounted at /x402 in Fastify. Fastify's body parsers are
 * bypassed so the handler reads the raw stream with its own limits.
 */
export async function startFastifyServer(facilitator: Facilitator, port = 0) {
  const listener = createNodeListener(createHandler(facilitator, { basePath: '/x402' }))
  const app = Fastify()
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => done(null))
  app.all('/x402/*', async (request, reply) => {
    reply.hijack()
    await listener(request.raw, reply.raw)
  })
  await app.listen({ port, host: '127.0.0.1' })
  const address = app.server.address()
  const actualPort = typeof address === 'object' && address ? address.port : port
  return { url: `http://127.0.0.1:${actualPort}/x402`, close: () => app.close() }
}
