/**
 * An incremental reader of one HTTP/1.1 response (RFC 9112) to a request we
 * sent, fed the bytes as the socket delivers them. It frames the body by
 * `Transfer-Encoding: chunked`, `Content-Length` or the end of the connection,
 * skips interim (1xx) answers, and says whether the connection may carry the
 * next request. Anything it cannot frame for certain is an error, never a guess:
 * a misread boundary would hand one request's answer to the next.
 */

/** The server broke HTTP/1.1 framing, or exceeded a limit: the connection is unusable. */
export class HttpProtocolError extends Error {
  override readonly name = 'HttpProtocolError'
}

/** A complete response. */
export interface HttpResponse {
  readonly status: number
  readonly statusMessage: string
  /** Lower-case names; repeated fields joined with ", ". */
  readonly headers: ReadonlyMap<string, string>
  readonly body: Buffer
  /** Whether the connection may carry another request. */
  readonly reusable: boolean
  /** The server's `Keep-Alive: timeout=` hint, in ms, when it gave one. */
  readonly idleHintMs: number | undefined
}

export interface ResponseLimits {
  /** Largest status line plus header section (and trailer section). */
  readonly maxHeaderBytes: number
  readonly maxBodyBytes: number
}

export interface ResponseReader {
  /** Feeds bytes; returns the response once complete. Throws {@link HttpProtocolError}. */
  push(chunk: Buffer): HttpResponse | undefined
  /** The connection ended: the response when its body runs to the end, else throws. */
  end(): HttpResponse
}

type State = 'head' | 'length' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'until-close' | 'done'

interface Head {
  readonly status: number
  readonly statusMessage: string
  readonly headers: Map<string, string>
  keepAlive: boolean
  /** HTTP/1.0 or HTTP/1.1. */
  readonly minor: 0 | 1
}

/** An HTTP token (RFC 9110): what a header name is made of. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: ([^\r\n]*))?$/
const CHUNK_SIZE = /^([0-9a-fA-F]{1,15})[ \t]*(?:;.*)?$/
// A chunk-size line is a few bytes; its extensions are bounded too.
const MAX_CHUNK_LINE = 4_096

export function createResponseReader(limits: ResponseLimits): ResponseReader {
  let state: State = 'head'
  let started = false
  // Bytes that need more to be read (part of a head, a chunk line, the trailers, a chunk's CRLF), kept as
  // pieces: a head trickling in a byte at a time is searched at each seam, not copied and rescanned each time.
  let pendingPieces: Buffer[] = []
  let pendingLength = 0
  let head: Head | undefined
  let remaining = 0
  let bodyBytes = 0
  let trailerBytes = 0
  const body: Buffer[] = []

  const wait = (data: Buffer, at: number) => {
    pendingPieces = at < data.length ? [data.subarray(at)] : []
    pendingLength = data.length - at
  }

  /** The last `n` pending bytes. */
  const pendingTail = (n: number): Buffer => {
    const parts: Buffer[] = []
    for (let i = pendingPieces.length - 1; i >= 0 && n > 0; i--) {
      const piece = pendingPieces[i]!
      const part = piece.subarray(Math.max(0, piece.length - n))
      parts.unshift(part)
      n -= part.length
    }
    return Buffer.concat(parts)
  }

  /** Whether `chunk` added to the pending bytes can move the reader on (or break a bound, which the full path reports). */
  const worthReading = (chunk: Buffer): boolean => {
    const total = pendingLength + chunk.length
    switch (state) {
      case 'head':
        return total > limits.maxHeaderBytes || Buffer.concat([pendingTail(3), chunk]).includes('\r\n\r\n')
      case 'chunk-size':
        return total > MAX_CHUNK_LINE || Buffer.concat([pendingTail(1), chunk]).includes('\r\n')
      case 'trailers':
        return trailerBytes + total > limits.maxHeaderBytes || Buffer.concat([pendingTail(1), chunk]).includes('\r\n')
      default:
        return true
    }
  }

  const takeBody = (bytes: Buffer) => {
    bodyBytes += bytes.length
    if (bodyBytes > limits.maxBodyBytes) throw new HttpProtocolError(`the answer is larger than ${limits.maxBodyBytes} bytes`)
    body.push(bytes)
  }

  const finish = (reusable: boolean): HttpResponse => {
    state = 'done'
    const h = head!
    return {
      status: h.status,
      statusMessage: h.statusMessage,
      headers: h.headers,
      body: body.length === 1 ? body[0]! : Buffer.concat(body),
      reusable: reusable && h.keepAlive,
      idleHintMs: idleHint(h.headers.get('keep-alive')),
    }
  }

  /** The body's framing once the head is read (RFC 9112 section 6.3). */
  const startBody = (h: Head): State => {
    if (h.status === 204 || h.status === 304) return 'done'
    const transferEncoding = h.headers.get('transfer-encoding')
    if (transferEncoding !== undefined) {
      // With both, Content-Length is ignored and the connection cannot be trusted afterwards; nor after
      // an HTTP/1.0 answer with a transfer coding, which 1.0 does not know (RFC 9112 section 6.1).
      if (h.headers.has('content-length') || h.minor === 0) h.keepAlive = false
      const codings = transferEncoding.split(',').map((coding) => coding.trim().toLowerCase())
      if (codings.at(-1) === 'chunked') return 'chunk-size'
      h.keepAlive = false
      return 'until-close'
    }
    const contentLength = h.headers.get('content-length')
    if (contentLength !== undefined) {
      // A repeated field must repeat the same number.
      const values = new Set(contentLength.split(',').map((value) => value.trim()))
      const [only] = values
      if (values.size !== 1 || only === undefined || !/^\d{1,15}$/.test(only)) throw new HttpProtocolError('the answer has an invalid Content-Length')
      remaining = Number(only)
      if (remaining > limits.maxBodyBytes) throw new HttpProtocolError(`the answer is larger than ${limits.maxBodyBytes} bytes`)
      return remaining === 0 ? 'done' : 'length'
    }
    h.keepAlive = false
    return 'until-close'
  }

  return {
    push(chunk) {
      if (chunk.length > 0) started = true
      if (state === 'done') throw new HttpProtocolError('bytes arrived after the answer')
      if (pendingLength > 0 && !worthReading(chunk)) {
        pendingPieces.push(chunk)
        pendingLength += chunk.length
        return undefined
      }
      const data = pendingLength > 0 ? Buffer.concat([...pendingPieces, chunk]) : chunk
      pendingPieces = []
      pendingLength = 0
      let at = 0
      for (;;) {
        switch (state) {
          case 'head': {
            const end = data.indexOf('\r\n\r\n', at, 'latin1')
            if (end < 0 || end - at > limits.maxHeaderBytes) {
              if (data.length - at > limits.maxHeaderBytes) throw new HttpProtocolError(`the answer's header section is larger than ${limits.maxHeaderBytes} bytes`)
              wait(data, at)
              return undefined
            }
            const read = readHead(data.toString('latin1', at, end))
            at = end + 4
            // 101 would switch protocols, which was never asked for; other 1xx answers precede the real one.
            if (read.status === 101) throw new HttpProtocolError('the server switched protocols unasked')
            if (read.status < 200) continue
            head = read
            state = startBody(read)
            break
          }
          case 'length':
          case 'chunk-data': {
            const take = Math.min(remaining, data.length - at)
            if (take > 0) takeBody(data.subarray(at, at + take))
            remaining -= take
            at += take
            if (remaining > 0) return undefined
            state = state === 'length' ? 'done' : 'chunk-end'
            break
          }
          case 'chunk-size': {
            const end = data.indexOf('\r\n', at, 'latin1')
            if (end < 0) {
              if (data.length - at > MAX_CHUNK_LINE) throw new HttpProtocolError('a chunk size line is too long')
              wait(data, at)
              return undefined
            }
            const match = CHUNK_SIZE.exec(data.toString('latin1', at, end))
            if (!match) throw new HttpProtocolError('the answer has an invalid chunk size')
            remaining = Number.parseInt(match[1]!, 16)
            if (bodyBytes + remaining > limits.maxBodyBytes) throw new HttpProtocolError(`the answer is larger than ${limits.maxBodyBytes} bytes`)
            at = end + 2
            state = remaining === 0 ? 'trailers' : 'chunk-data'
            break
          }
          case 'chunk-end': {
            if (data.length - at < 2) {
              wait(data, at)
              return undefined
            }
            if (data[at] !== 0x0d || data[at + 1] !== 0x0a) throw new HttpProtocolError('a chunk does not end where its size says')
            at += 2
            state = 'chunk-size'
            break
          }
          case 'trailers': {
            const end = data.indexOf('\r\n', at, 'latin1')
            if (end < 0) {
              if (trailerBytes + data.length - at > limits.maxHeaderBytes) throw new HttpProtocolError(`the answer's trailer section is larger than ${limits.maxHeaderBytes} bytes`)
              wait(data, at)
              return undefined
            }
            trailerBytes += end - at + 2
            if (trailerBytes > limits.maxHeaderBytes) throw new HttpProtocolError(`the answer's trailer section is larger than ${limits.maxHeaderBytes} bytes`)
            const empty = end === at
            at = end + 2
            // Trailer fields are read past, not used.
            if (empty) state = 'done'
            break
          }
          case 'until-close': {
            if (at < data.length) takeBody(data.subarray(at))
            return undefined
          }
        }
        // Nothing was asked after this answer: extra bytes make the connection unusable, not the answer wrong.
        if (state === 'done') return finish(at === data.length)
      }
    },

    end() {
      if (state === 'until-close') return finish(false)
      throw new HttpProtocolError(state === 'head' && !started ? 'the connection closed without an answer' : 'the connection closed before the answer was complete')
    },
  }
}

function readHead(text: string): Head {
  const lines = text.split('\r\n')
  const status = STATUS_LINE.exec(lines[0]!)
  if (!status) throw new HttpProtocolError('the answer does not start with an HTTP/1.x status line')
  const code = Number(status[2])
  if (code < 100 || code > 599) throw new HttpProtocolError(`the answer has no valid status (${status[2]})`)
  const headers = new Map<string, string>()
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!
    const colon = line.indexOf(':')
    const name = colon > 0 ? line.slice(0, colon) : ''
    // Folded lines (leading whitespace) and names with spaces are refused, as RFC 9112 requires.
    if (!HTTP_TOKEN.test(name)) throw new HttpProtocolError('the answer has a malformed header line')
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '')
    if (/[\0\n\r]/.test(value)) throw new HttpProtocolError('the answer has a malformed header value')
    const key = name.toLowerCase()
    const earlier = headers.get(key)
    headers.set(key, earlier === undefined ? value : `${earlier}, ${value}`)
  }
  const minor = status[1]
  const connection = (headers.get('connection') ?? '').toLowerCase().split(',').map((token) => token.trim())
  const keepAlive = minor === '1' ? !connection.includes('close') : connection.includes('keep-alive')
  return { status: code, statusMessage: status[3] ?? '', headers, keepAlive, minor: minor === '1' ? 1 : 0 }
}

/** `Keep-Alive: timeout=5, max=100` → 5000. */
function idleHint(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const match = /(?:^|[,\s])timeout\s*=\s*(\d{1,6})/i.exec(value)
  return match ? Number(match[1]) * 1000 : undefined
}
