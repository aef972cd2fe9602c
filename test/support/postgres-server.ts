import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { createPostgresStore, type PostgresStore } from '../../src/stores/postgres/postgres-store.js'

/** A real PostgreSQL server on a loopback port, started for a test file (or a benchmark). */
export interface PostgresServer {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication on loopback). */
  readonly url: string
  /** The same server through its Unix socket (no TCP: cheaper per query for a client on the same host). */
  readonly socketUrl: string
  /** The postmaster's pid, for CPU figures. */
  readonly pid: number
  stop(): Promise<void>
}

export interface PostgresServerOptions {
  /**
   * Flush to disk as a production server does (`fsync`, `synchronous_commit`). Off, commits
   * skip the disk flush: tests run faster, and a crash of the server (never tested) could
   * lose data. @default false
   */
  durable?: boolean
}

/** The directory of the PostgreSQL binaries (Debian: /usr/lib/postgresql/<major>/bin), or PATH. */
function binDir(): string {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const majors = readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a))
    for (const major of majors) if (existsSync(join(root, major, 'bin', 'postgres'))) return join(root, major, 'bin')
  }
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('PostgreSQL is not installed (apt-get install -y postgresql)')
  }
}

/**
 * initdb and postgres refuse to run as root: as root (CI), run them as the `postgres`
 * user (spawned with its uid and gid, so the pid we hold is the postmaster's own).
 */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
  return { uid, gid }
}

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

/** True once the server accepts a TCP connection (the pg client then does the real check). */
async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Creates a fresh cluster in a temporary directory (initdb, trust authentication),
 * starts `postgres` on a free loopback port and waits until it accepts connections
 * and answers a query. `stop()` shuts it down by its pid (fast shutdown) and removes
 * the directory.
 *
 * @example
 * let pg: PostgresServer
 * beforeAll(async () => { pg = await startPostgresServer() })
 * afterAll(() => pg.stop())
 */
export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const bin = binDir()
  const user = runAs()
  const dir = mkdtempSync(join(tmpdir(), 'x402-postgres-'))
  const data = join(dir, 'data')
  if (user) chownSync(dir, user.uid, user.gid)
  const env = { ...process.env, LANG: 'C', LC_ALL: 'C' }
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync'], {
    stdio: 'pipe',
    env,
    cwd: dir,
    ...(user ?? {}),
  })
  const settings = options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort()
    const child: ChildProcess = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`, '-c', 'max_connections=200', ...settings],
      { stdio: ['ignore', 'pipe', 'pipe'], env, cwd: dir, ...(user ?? {}) },
    )
    let output = ''
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
    let exited = false
    child.once('exit', () => (exited = true))
    const started = Date.now()
    while (!exited && Date.now() - started < 20_000) {
      if ((await accepts(port)) && (await answersQuery(port))) {
        const stop = () =>
          new Promise<void>((resolve) => {
            const done = () => {
              rmSync(dir, { recursive: true, force: true })
              resolve()
            }
            if (child.exitCode !== null || exited) return done()
            child.once('exit', done)
            // SIGINT is PostgreSQL's fast shutdown: sessions are ended, nothing waits for clients.
            child.kill('SIGINT')
          })
        return {
          port,
          url: `postgres://postgres@127.0.0.1:${port}/postgres`,
          socketUrl: `postgres://postgres@/postgres?host=${encodeURIComponent(dir)}&port=${port}`,
          pid: child.pid!,
          stop,
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    child.kill('SIGKILL')
    // The port was taken between the probe and the start: try another one.
    if (!/could not bind|Address already in use/i.test(output) && !exited) {
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`postgres did not start:\n${output}`)
    }
  }
  rmSync(dir, { recursive: true, force: true })
  throw new Error('postgres did not start on a free port')
}

/** A real query: the server is past recovery and accepts sessions. */
async function answersQuery(port: number): Promise<boolean> {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 1_000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * A PostgreSQL server for the calling test file, started in `beforeAll`, and
 * PostgreSQL stores on it that are closed in `afterAll` before the server stops.
 * Stores given the same schema share their data, as instances sharing a database.
 *
 * @example
 * const postgres = usePostgresStores()
 * it('...', () => { const a = postgres.store('shared'), b = postgres.store('shared') })
 */
export function usePostgresStores(): { store(schema: string): PostgresStore } {
  let server: PostgresServer | undefined
  const stores: PostgresStore[] = []
  beforeAll(async () => {
    server = await startPostgresServer()
  })
  afterAll(async () => {
    for (const store of stores) await store.close()
    await server?.stop()
  })
  return {
    store(schema) {
      if (!server) throw new Error('usePostgresStores: the server starts in beforeAll')
      const store = createPostgresStore({ connectionString: server.url, schema })
      stores.push(store)
      return store
    },
  }
}
