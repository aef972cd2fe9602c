import type { AddressInfo } from 'node:net'
import express from 'express'
import type { Facilitator } from 'x402-facilitator'
import { createHandler, createNodeListener } from 'x402-facilitator/http'

/**
 * A facilitator mounted at /x402 in an Express app. No body parser runs
 * before it: the handler reads the body itself, with its size limit.
 */
export async function startExpressServer(facilitator: Facilitator, port = 0) {
  const app = express()
  app.use('/x402', createNodeListener(createHandler(facilitator)))
  const server = app.listen(port, '127.0.0.1')
  await new Promise<void>((resolve) => server.once('listening', resolve))
  const address = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}/x402`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
