import { connect as netConnect, isIP, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'

/**
 * Open HTTP/1.1 connections kept between requests, per origin (`http:` over
 * TCP, `https:` over TLS). A connection is lent to one request at a time and
 * handed back when its answer has been read whole; the most recently used one
 * is lent first, so a quiet period lets the others time out. Idle connections
 * never keep the process alive.
 */
export interface ConnectionPool {
  /**
   * An idle connection to the URL's origin, or a new one being opened. `stale`
   * says the connection sat idle long enough that the server may have closed it
   * just now, before its closing reached us.
   */
  take(url: URL): { socket: Socket; stale: boolean }
  /** A new connection, never an idle one. */
  open(url: URL): Socket
  /**
   * Hands a connection back after a complete answer. It is kept for
   * `idleMs` (the pool's idle timeout when not given), or closed at once.
   */
  give(url: URL, socket: Socket, idleMs?: number): void
  /** Idle connections, over every origin. */
  idle(): number
  /** Closes every idle connection (a facilitator shutting down); connections in use close when returned. */
  closeIdle(): void
}

export interface ConnectionPoolOptions {
  /**
   * How long an idle connection is kept; shorter when the server's `Keep-Alive:
   * timeout=` hint less a second (what node:http keeps) is shorter. Bounded,
   * unlike node:http's agent, so a connection the server has long forgotten is not
   * the one a request is sent on; long enough that a quiet facilitator does not pay
   * a TLS handshake to a remote RPC on every request.
   * @default 30000
   */
  readonly idleTimeoutMs?: number
  /** Idle connections kept per origin; more are closed. @default 256 */
  readonly maxIdlePerOrigin?: number
  /** Certificates to trust for `https:` instead of Node's bundled ones (a private CA). */
  readonly ca?: string | Buffer
  /**
   * Idle time after which a lent connection counts as `stale`: no server closes
   * a connection for idleness sooner than this.
   * @default 1000
   */
  readonly staleAfterMs?: number
}

interface Idle {
  readonly socket: Socket
  readonly timer: ReturnType<typeof setTimeout>
  readonly drop: () => void
  readonly since: number
}

export function createConnectionPool(options: ConnectionPoolOptions = {}): ConnectionPool {
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000
  const maxIdle = options.maxIdlePerOrigin ?? 256
  const staleAfterMs = options.staleAfterMs ?? 1_000
  const idleByOrigin = new Map<string, Idle[]>()
  let idleCount = 0

  const forget = (origin: string, entry: Idle) => {
    const list = idleByOrigin.get(origin)
    const index = list ? list.indexOf(entry) : -1
    if (index < 0) return
    list!.splice(index, 1)
    idleCount--
    clearTimeout(entry.timer)
    entry.socket.off('close', entry.drop).off('end', entry.drop).off('error', entry.drop).off('data', entry.drop)
  }

  return {
    take(url) {
      const origin = originOf(url)
      const list = idleByOrigin.get(origin)
      while (list && list.length > 0) {
        const entry = list.at(-1)!
        forget(origin, entry)
        if (entry.socket.destroyed || !entry.socket.writable) {
          entry.socket.destroy()
          continue
        }
        entry.socket.ref()
        return { socket: entry.socket, stale: performance.now() - entry.since >= staleAfterMs }
      }
      return { socket: connect(url, options.ca), stale: false }
    },

    open: (url) => connect(url, options.ca),

    give(url, socket, idleMs = idleTimeoutMs) {
      const origin = originOf(url)
      let list = idleByOrigin.get(origin)
      if (!list) {
        list = []
        idleByOrigin.set(origin, list)
      }
      if (idleMs <= 0 || list.length >= maxIdle || socket.destroyed || !socket.writable) {
        socket.destroy()
        return
      }
      // Closed by the server, failed, or sent bytes nobody asked for: never lent again.
      const drop = () => {
        forget(origin, entry)
        socket.destroy()
      }
      const timer = setTimeout(drop, Math.min(idleMs, idleTimeoutMs))
      timer.unref()
      const entry: Idle = { socket, timer, drop, since: performance.now() }
      socket.on('close', drop).on('end', drop).on('error', drop).on('data', drop)
      socket.unref()
      list.push(entry)
      idleCount++
    },

    idle: () => idleCount,

    closeIdle() {
      for (const list of [...idleByOrigin.values()]) for (const entry of [...list]) entry.drop()
    },
  }
}

function originOf(url: URL): string {
  return `${url.protocol}//${url.host}`
}

function connect(url: URL, ca: string | Buffer | undefined): Socket {
  // URL keeps the brackets of an IPv6 literal; the socket wants the bare address.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  const secure = url.protocol === 'https:'
  const port = url.port ? Number(url.port) : secure ? 443 : 80
  const socket = secure
    ? tlsConnect({ host, port, ...(isIP(host) ? {} : { servername: host }), ...(ca ? { ca } : {}), ALPNProtocols: ['http/1.1'] })
    : netConnect({ host, port })
  // A request is one write; Nagle would hold it back waiting for an acknowledgement.
  socket.setNoDelay(true)
  return socket
}
