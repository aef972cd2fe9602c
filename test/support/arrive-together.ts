/**
 * POST /verify requests that reach a node:http server together, as a busy
 * server finds them: each on its own connection, all read in one turn of the
 * server's event loop (each in its own socket callback).
 *
 * @example
 * const answers = await verifyArrivingTogether(facilitator, [body1, body2])
 */
import { createServer } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { vi } from 'vitest'
import type { Facilitator } from '../../src/facilitator/facilitator.js'
import { createHandler } from '../../src/http/handler.js'
import { createNodeListener } from '../../src/http/node-listener.js'

/** Each request's whole HTTP answer (head and body), in the order of `bodies`. */
export async function verifyArrivingTogether(facilitator: Facilitator, bodies: readonly unknown[]): Promise<string[]> {
  let accepted = 0
  const server = createServer(createNodeListener(createHandler(facilitator)))
  server.on('connection', () => accepted++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const { port } = server.address() as AddressInfo
    const sockets = await Promise.all(
      bodies.map(
        () =>
          new Promise<Socket>((resolve, reject) => {
            const socket = connect(port, '127.0.0.1')
            socket.once('connect', () => resolve(socket)).once('error', reject)
          }),
      ),
    )
    // Every connection accepted first, so their first reads all come from the same poll.
    await vi.waitFor(() => {
      if (accepted !== sockets.length) throw new Error(`${accepted} of ${sockets.length} connections accepted`)
    })
    const answers = sockets.map((socket, i) => {
      const text = JSON.stringify(bodies[i])
      const answer = new Promise<string>((resolve) => {
        let got = ''
        socket.on('data', (chunk: Buffer) => (got += chunk.toString()))
        socket.once('close', () => resolve(got))
      })
      socket.write(`POST /verify HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`)
      return answer
    })
    // Block this thread while the kernel delivers every request: the server then reads them all in
    // one turn of its event loop.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100)
    return await Promise.all(answers)
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}
