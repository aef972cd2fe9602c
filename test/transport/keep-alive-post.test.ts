/**
 * Our HTTP/1.1 client against real servers on loopback: node:http and
 * node:https servers for what real nodes send, and raw TCP servers for what
 * a broken or hostile endpoint could send.
 */
import { spawn } from 'node:child_process'
import diagnostics from 'node:diagnostics_channel'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { basicAuthorization, createConnectionPool, PostFailure, postKeepAlive, RPC_REQUEST_CHANNEL, type PostOptions } from '../../src/transport/keep-alive-post.js'

const TLS = {
  cert: readFileSync(new URL('../support/tls/localhost-cert.pem', import.meta.url)),
  key: readFileSync(new URL('../support/tls/localhost-key.pem', import.meta.url)),
}

interface Running {
  readonly url: URL
  /** Connections accepted so far. */
  connections(): number
  /** Connections open now. */
  open(): number
  close(): Promise<void>
}

const running: Running[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()))
})

async function start(server: Server | ReturnType<typeof createTcpServer>, protocol: 'http:' | 'https:'): Promise<Running> {
  let accepted = 0
  const sockets = new Set<Socket>()
  server.on(protocol === 'https:' ? 'secureConnection' : 'connection', (socket: Socket) => {
    accepted++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const handle: Running = {
    url: new URL(`${protocol}//127.0.0.1:${port}/rpc?key=secret`),
    connections: () => accepted,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
  running.push(handle)
  return handle
}

/** A node:http server that answers every POST with `answer(body, request)`. */
function httpServer(answer: (body: string, request: IncomingMessage, response: ServerResponse) => void, keepAliveTimeoutMs = 5_000) {
  const server = createHttpServer({ keepAliveTimeout: keepAliveTimeoutMs }, (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => answer(Buffer.concat(chunks).toString(), request, response))
  })
  return start(server, 'http:')
}

/** A TCP server that answers each request's bytes with `reply(socket, requestNumber)`. */
function rawServer(reply: (socket: Socket, index: number) => void) {
  let index = 0
  const server = createTcpServer((socket) => {
    socket.on('data', (chunk) => {
      // A request is one write from our client; answer once its body (after the blank line) is in.
      if (chunk.includes('\r\n\r\n')) reply(socket, index++)
    })
    socket.on('error', () => undefined)
  })
  return start(server, 'http:')
}

const options = (overrides: Partial<PostOptions> = {}): PostOptions => ({
  pool: createConnectionPool(),
  headers: { 'content-type': 'application/json' },
  timeoutMs: 2_000,
  ...overrides,
})

/** The PostFailure a post rejects with. */
async function failure(posting: Promise<unknown>): Promise<PostFailure> {
  const error = await posting.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(PostFailure)
  return error as PostFailure
}

describe('postKeepAlive', () => {
  it('sends the request as written (path, query, headers, body) and reads the answer', async () => {
    let seen: { method?: string; url?: string; headers?: IncomingMessage['headers']; body?: string } = {}
    const server = await httpServer((body, request, response) => {
      seen = { method: request.method, url: request.url, headers: request.headers, body }
      response.setHeader('content-type', 'application/json')
      response.end('{"result":"0x1"}')
    })
    const answer = await postKeepAlive(server.url, '{"method":"eth_chainId","params":["é"]}', options({ headers: { 'content-type': 'application/json', 'x-api-key': 'k' } }))
    expect(answer).toEqual({ status: 200, statusMessage: 'OK', contentType: 'application/json', text: '{"result":"0x1"}' })
    expect(seen.method).toBe('POST')
    expect(seen.url).toBe('/rpc?key=secret')
    expect(seen.body).toBe('{"method":"eth_chainId","params":["é"]}')
    expect(seen.headers).toMatchObject({ host: server.url.host, 'content-type': 'application/json', 'x-api-key': 'k', 'content-length': String(Buffer.byteLength('{"method":"eth_chainId","params":["é"]}')) })
  })

  it('keeps one connection for requests one after another', async () => {
    const server = await httpServer((body, _request, response) => response.end(body))
    const o = options()
    for (let i = 0; i < 50; i++) expect((await postKeepAlive(server.url, `{"n":${i}}`, o)).text).toBe(`{"n":${i}}`)
    expect(server.connections()).toBe(1)
    expect(o.pool.idle()).toBe(1)
  })

  it('an idle kept connection does not keep the process alive', async () => {
    // The server would keep the connection open a minute: only the client's unref lets the child exit.
    const server = await httpServer((_body, _request, response) => response.end('{"ok":true}'), 60_000)
    const child = spawn(process.execPath, ['--import', 'tsx', new URL('./fixtures/post-once.ts', import.meta.url).pathname, server.url.href], { stdio: ['ignore', 'pipe', 'inherit'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        resolve(null)
      }, 15_000)
      child.on('exit', (exitCode) => {
        clearTimeout(timer)
        resolve(exitCode)
      })
    })
    expect(output).toBe('{"ok":true} idle=1\n')
    expect(code, 'the child exits by itself, its connection still kept').toBe(0)
  }, 20_000)

  it('concurrent requests each get their own answer, on as many connections as were needed, all kept', async () => {
    // Answers come back in a shuffled order and split into several writes.
    const server = await httpServer((body, _request, response) => {
      setTimeout(() => {
        response.write(body.slice(0, 3))
        response.end(body.slice(3))
      }, Math.random() * 20)
    })
    const o = options()
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => postKeepAlive(server.url, `{"request":${i}}`, o)))
    expect(answers.map((a) => a.text)).toEqual(Array.from({ length: 40 }, (_, i) => `{"request":${i}}`))
    expect(server.connections()).toBe(40)
    expect(o.pool.idle()).toBe(40)
    // The next round reuses them: no new connection.
    await Promise.all(Array.from({ length: 40 }, (_, i) => postKeepAlive(server.url, `{"again":${i}}`, o)))
    expect(server.connections()).toBe(40)
  })

  it('a connection the answer says to close is closed, and the next request opens a new one', async () => {
    const server = await httpServer((_body, _request, response) => {
      response.setHeader('connection', 'close')
      response.end('{}')
    })
    const o = options()
    await postKeepAlive(server.url, '{}', o)
    await postKeepAlive(server.url, '{}', o)
    expect(server.connections()).toBe(2)
    expect(o.pool.idle()).toBe(0)
  })

  it('a kept connection the server closes while idle is dropped, not lent again', async () => {
    const server = await httpServer((_body, _request, response) => response.end('{}'))
    const o = options()
    await postKeepAlive(server.url, '{}', o)
    expect(o.pool.idle()).toBe(1)
    await server.close()
    running.splice(running.indexOf(server), 1)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(o.pool.idle()).toBe(0)
  })

  it('an idle connection is closed after the server\'s Keep-Alive hint less a second, or the pool\'s idle timeout', async () => {
    const hinted = (seconds: number) =>
      httpServer((_body, _request, response) => {
        response.setHeader('keep-alive', `timeout=${seconds}`)
        response.end('{}')
      })
    // timeout=1 leaves no idle time at all: closed at once.
    const o = options()
    await postKeepAlive((await hinted(1)).url, '{}', o)
    expect(o.pool.idle()).toBe(0)
    // timeout=2: kept one second, well before the pool's own 30 s.
    await postKeepAlive((await hinted(2)).url, '{}', o)
    expect(o.pool.idle()).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 1_300))
    expect(o.pool.idle()).toBe(0)
    // Without a hint, the pool's idle timeout.
    const plain = await httpServer((_body, _request, response) => response.end('{}'))
    const short = options({ pool: createConnectionPool({ idleTimeoutMs: 100 }) })
    await postKeepAlive(plain.url, '{}', short)
    expect(short.pool.idle()).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 250))
    expect(short.pool.idle()).toBe(0)
    expect(plain.open()).toBe(0)
  })

  it('chunked answers and answers that run to the end of the connection', async () => {
    const server = await httpServer((_body, _request, response) => {
      // No length given: node:http sends chunked.
      response.write('{"part":1,')
      setTimeout(() => response.end('"part2":2}'), 5)
    })
    const o = options()
    expect((await postKeepAlive(server.url, '{}', o)).text).toBe('{"part":1,"part2":2}')
    expect((await postKeepAlive(server.url, '{}', o)).text).toBe('{"part":1,"part2":2}')
    expect(server.connections()).toBe(1)
    const untilClose = await rawServer((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"to":')
      setTimeout(() => socket.end('"the end"}'), 5)
    })
    expect((await postKeepAlive(untilClose.url, '{}', o)).text).toBe('{"to":"the end"}')
  })

  it('non-2xx answers are answers: the caller reads the status', async () => {
    const server = await httpServer((_body, _request, response) => {
      response.statusCode = 429
      response.end('{"error":"slow down"}')
    })
    const answer = await postKeepAlive(server.url, '{}', options())
    expect(answer).toMatchObject({ status: 429, statusMessage: 'Too Many Requests', text: '{"error":"slow down"}' })
  })

  it('credentials in the URL go as Basic authentication; a configured Authorization wins', async () => {
    const seen: (string | undefined)[] = []
    const server = await httpServer((_body, request, response) => {
      seen.push(request.headers.authorization)
      response.end('{}')
    })
    const withUser = new URL(server.url)
    withUser.username = 'user'
    withUser.password = 'p%40ss'
    await postKeepAlive(withUser, '{}', options())
    await postKeepAlive(withUser, '{}', options({ headers: { Authorization: 'Bearer t' } }))
    expect(seen).toEqual([`Basic ${Buffer.from('user:p@ss').toString('base64')}`, 'Bearer t'])
    // A malformed escape is sent as written rather than failing every request.
    expect(basicAuthorization(new URL('http://us%ZZer:pa%ss@rpc.example/'))).toBe(`Basic ${Buffer.from('us%ZZer:pa%ss').toString('base64')}`)
    expect(basicAuthorization(new URL('http://rpc.example/'))).toBeUndefined()
  })

  it('framing headers are ours; a header HTTP does not allow is refused before anything is sent', async () => {
    const server = await httpServer((body, request, response) => response.end(`${request.headers['content-length']}|${request.headers.host}|${body}`))
    const answer = await postKeepAlive(server.url, '{"a":1}', options({ headers: { 'Content-Length': '999', Host: 'evil.example', Connection: 'close' } }))
    expect(answer.text).toBe(`7|${server.url.host}|{"a":1}`)
    for (const headers of [{ 'x-a': 'v\r\nx-injected: 1' }, { 'Content-Length ': '99' }, { 'x-a': 'nul\0byte' }, { 'x-a': 'clé' }, { '': 'empty name' }] as Record<string, string>[]) {
      const refused = await failure(postKeepAlive(server.url, '{}', options({ headers })))
      expect(String((refused.cause as Error).message)).toMatch(/has a character HTTP does not allow in a header/)
    }
    expect(server.connections()).toBe(1)
  })

  it('publishes each request\'s host, never its path or credentials, on the diagnostics channel', async () => {
    const server = await httpServer((_body, _request, response) => response.end('{}'))
    const messages: unknown[] = []
    const listener = (message: unknown) => messages.push(message)
    diagnostics.subscribe(RPC_REQUEST_CHANNEL, listener)
    try {
      await postKeepAlive(server.url, '{}', options())
      await postKeepAlive(server.url, '{}', options())
    } finally {
      diagnostics.unsubscribe(RPC_REQUEST_CHANNEL, listener)
    }
    expect(messages).toEqual([{ host: server.url.host }, { host: server.url.host }])
  })

  describe('failures', () => {
    it('no answer in time: a timed-out failure, and the connection is closed', async () => {
      const server = await rawServer(() => undefined)
      const started = performance.now()
      const failed = await failure(postKeepAlive(server.url, '{}', options({ timeoutMs: 150 })))
      expect(failed.timedOut).toBe(true)
      expect(performance.now() - started).toBeLessThan(1_000)
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(server.open()).toBe(0)
    })

    it('an abort ends the exchange at once, not as a timeout; an aborted signal sends nothing', async () => {
      const server = await rawServer(() => undefined)
      const controller = new AbortController()
      const posting = postKeepAlive(server.url, '{}', options({ signal: controller.signal, timeoutMs: 5_000 }))
      setTimeout(() => controller.abort(new Error('caller gave up')), 30)
      const failed = await failure(posting)
      expect(failed.timedOut).toBe(false)
      expect((failed.cause as Error).message).toBe('caller gave up')
      const before = server.connections()
      await failure(postKeepAlive(server.url, '{}', options({ signal: AbortSignal.abort() })))
      expect(server.connections()).toBe(before)
    })

    it('a refused connection, an unsupported protocol', async () => {
      const server = await httpServer(() => undefined)
      const url = new URL(server.url)
      await server.close()
      running.splice(running.indexOf(server), 1)
      const refused = await failure(postKeepAlive(url, '{}', options()))
      expect(refused.timedOut).toBe(false)
      expect((refused.cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED')
      const ftp = await failure(postKeepAlive(new URL('ftp://127.0.0.1/'), '{}', options()))
      expect((ftp.cause as Error).message).toMatch(/unsupported protocol ftp:/)
    })

    it('a connection cut before or during the answer fails the request, and is never lent again', async () => {
      for (const cut of ['', 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"a"']) {
        const server = await rawServer((socket) => {
          if (cut) socket.write(cut)
          setTimeout(() => socket.destroy(), 5)
        })
        const o = options()
        const failed = await failure(postKeepAlive(server.url, '{}', o))
        expect(failed.timedOut).toBe(false)
        expect(o.pool.idle()).toBe(0)
      }
    })

    it('a malformed answer fails the request with the reader\'s reason, and the connection is closed', async () => {
      const server = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n{}'))
      const o = options()
      const failed = await failure(postKeepAlive(server.url, '{}', o))
      expect((failed.cause as Error).message).toMatch(/invalid Content-Length/)
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(server.open()).toBe(0)
      expect(o.pool.idle()).toBe(0)
    })

    describe('a kept connection the server closes just as a request leaves on it', () => {
      /** A server whose connection `n` (from 0) is cut on its first request when `cut(n)` says so. */
      async function cutting(cut: (connection: number, request: number) => 'cut' | 'half' | 'answer') {
        let connection = 0
        const server = createTcpServer((socket) => {
          const n = connection++
          let request = 0
          socket.on('data', (chunk) => {
            if (!chunk.includes('\r\n\r\n')) return
            const what = cut(n, request++)
            if (what === 'answer') socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${String(n).length}\r\n\r\n${n}`)
            else {
              if (what === 'half') socket.write('HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{')
              socket.destroy()
            }
          })
          socket.on('error', () => undefined)
        })
        return start(server, 'http:')
      }
      const idleFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
      const stalePool = () => options({ pool: createConnectionPool({ staleAfterMs: 50 }) })

      it('after sitting idle, it is replaced once by a new connection, and the answer comes from there', async () => {
        // The first connection answers once, then is cut on its second request, as an idle timeout would.
        const server = await cutting((connection, request) => (connection === 0 && request === 1 ? 'cut' : 'answer'))
        const o = stalePool()
        expect((await postKeepAlive(server.url, '{}', o)).text).toBe('0')
        await idleFor(100)
        expect((await postKeepAlive(server.url, '{}', o)).text).toBe('1')
        expect(server.connections()).toBe(2)
      })

      it('not when it was idle only briefly (a cut then is a failure for the caller to handle)', async () => {
        const server = await cutting((connection, request) => (connection === 0 && request === 1 ? 'cut' : 'answer'))
        // Reused well within the pool's threshold, however slow this machine is.
        const o = options({ pool: createConnectionPool({ staleAfterMs: 60_000 }) })
        await postKeepAlive(server.url, '{}', o)
        const failed = await failure(postKeepAlive(server.url, '{}', o))
        expect(failed.timedOut).toBe(false)
        expect(server.connections()).toBe(1)
      })

      it('only once, and never after part of an answer came', async () => {
        const always = await cutting((_connection, request) => (request === 0 && _connection === 0 ? 'answer' : 'cut'))
        const o = stalePool()
        await postKeepAlive(always.url, '{}', o)
        await idleFor(100)
        await failure(postKeepAlive(always.url, '{}', o))
        expect(always.connections()).toBe(2)
        const half = await cutting((_connection, request) => (request === 0 ? 'answer' : 'half'))
        const p = stalePool()
        await postKeepAlive(half.url, '{}', p)
        await idleFor(100)
        expect(((await failure(postKeepAlive(half.url, '{}', p))).cause as Error).message).toMatch(/closed before the answer was complete/)
        expect(half.connections()).toBe(1)
      })
    })

    it('bytes nobody asked for on an idle connection close it', async () => {
      let sockets: Socket[] = []
      const server = await rawServer((socket) => {
        sockets.push(socket)
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}')
      })
      const o = options()
      await postKeepAlive(server.url, '{}', o)
      expect(o.pool.idle()).toBe(1)
      sockets[0]!.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}')
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(o.pool.idle()).toBe(0)
      // The next request opens a fresh connection and gets its own answer.
      sockets = []
      expect((await postKeepAlive(server.url, '{}', o)).text).toBe('{}')
      expect(server.connections()).toBe(2)
    })
  })

  describe('https', () => {
    it('speaks TLS, checks the certificate against the trusted ones, and keeps the connection', async () => {
      const server = await start(createHttpsServer(TLS, (_request, response) => response.end('{"secure":true}')), 'https:')
      const o = options({ pool: createConnectionPool({ ca: TLS.cert }) })
      for (let i = 0; i < 5; i++) expect((await postKeepAlive(server.url, '{}', o)).text).toBe('{"secure":true}')
      expect(server.connections()).toBe(1)
      // By name (SNI and the certificate's DNS name) as well as by address.
      const byName = new URL(server.url)
      byName.hostname = 'localhost'
      expect((await postKeepAlive(byName, '{}', o)).text).toBe('{"secure":true}')
    })

    it('refuses a certificate nobody vouches for', async () => {
      const server = await start(createHttpsServer(TLS, (_request, response) => response.end('{}')), 'https:')
      const failed = await failure(postKeepAlive(server.url, '{}', options()))
      expect((failed.cause as NodeJS.ErrnoException).code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT')
    })
  })
})
