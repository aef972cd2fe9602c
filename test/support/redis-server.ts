import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, connect } from 'node:net'
import { afterAll, beforeAll } from 'vitest'
import { createRedisStore } from '../../src/stores/redis-store.js'
import type { Store } from '../../src/stores/store.js'

/** A real redis-server on a loopback port, started for a test file. */
export interface RedisServer {
  readonly port: number
  readonly url: string
  /** The server's pid, for CPU figures. */
  readonly pid: number
  stop(): Promise<void>
}

/** A free loopback port: redis-server refuses `--port 0`, so ask the OS for one first. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => {
      socket.destroy()
      resolve(data.toString().startsWith('+PONG'))
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Starts `redis-server` without persistence and waits until it answers PING.
 *
 * @example
 * let redis: RedisServer
 * beforeAll(async () => { redis = await startRedisServer() })
 * afterAll(() => redis.stop())
 */
export async function startRedisServer(): Promise<RedisServer> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let exited = false
    child.once('exit', () => (exited = true))
    const started = Date.now()
    while (!exited && Date.now() - started < 10_000) {
      if (await answersPing(port)) {
        return {
          port,
          url: `redis://127.0.0.1:${port}`,
          pid: child.pid!,
          stop: () =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || exited) return resolve()
              child.once('exit', () => resolve())
              child.kill('SIGTERM')
            }),
        }
      }
      await new Promise((r) => setTimeout(r, 25))
    }
    child.kill('SIGKILL')
    // The port was taken between the probe and the spawn: try another one.
  }
  throw new Error('redis-server did not start (is it installed? apt-get install -y redis-server)')
}

/**
 * A redis-server for the calling test file, started in `beforeAll`, and Redis
 * stores on it that are closed in `afterAll` before the server stops.
 *
 * @example
 * const redis = useRedisStores()
 * it('...', () => { const store = redis.store('prefix:') })
 */
export function useRedisStores(): { store(keyPrefix: string): Store } {
  let server: RedisServer | undefined
  const stores: Store[] = []
  beforeAll(async () => {
    server = await startRedisServer()
  })
  afterAll(async () => {
    for (const store of stores) await store.close?.()
    await server?.stop()
  })
  return {
    store(keyPrefix) {
      if (!server) throw new Error('useRedisStores: the server starts in beforeAll')
      const store = createRedisStore({ url: server.url, keyPrefix })
      stores.push(store)
      return store
    },
  }
}
