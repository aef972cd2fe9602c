import { describe, expect, it } from 'vitest'
import { createResponseReader, HttpProtocolError, type HttpResponse } from '../../src/transport/response-reader.js'

const LIMITS = { maxHeaderBytes: 1_024, maxBodyBytes: 4_096 }

/** Feeds `parts` in order; the response (or the error) the reader ends with. */
function read(parts: (string | Buffer)[], options: { end?: boolean; limits?: typeof LIMITS } = {}): HttpResponse {
  const reader = createResponseReader(options.limits ?? LIMITS)
  let response: HttpResponse | undefined
  for (const part of parts) {
    expect(response, 'nothing is fed after the answer is complete').toBeUndefined()
    response = reader.push(typeof part === 'string' ? Buffer.from(part, 'latin1') : part)
  }
  if (options.end) {
    expect(response).toBeUndefined()
    response = reader.end()
  }
  if (!response) throw new Error('the answer did not complete')
  return response
}

/** Every way of cutting `text` in two, and byte by byte. */
function splits(text: string): string[][] {
  const ways = [[text], [...text]]
  for (let i = 1; i < text.length; i++) ways.push([text.slice(0, i), text.slice(i)])
  return ways
}

const JSON_BODY = '{"jsonrpc":"2.0","id":1,"result":"0x14a34"}'
const WITH_LENGTH = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: ${JSON_BODY.length}\r\nkeep-alive: timeout=5\r\n\r\n${JSON_BODY}`
const CHUNKED = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: yes\r\n\r\n'

describe('createResponseReader', () => {
  it('reads a Content-Length answer however the bytes are cut', () => {
    for (const parts of splits(WITH_LENGTH)) {
      const response = read(parts)
      expect(response.status).toBe(200)
      expect(response.statusMessage).toBe('OK')
      expect(response.body.toString()).toBe(JSON_BODY)
      expect(response.headers.get('content-type')).toBe('application/json')
      expect(response.reusable).toBe(true)
      expect(response.idleHintMs).toBe(5_000)
    }
  })

  it('reads a chunked answer with extensions and trailers however the bytes are cut', () => {
    for (const parts of splits(CHUNKED)) {
      const response = read(parts)
      expect(response.body.toString()).toBe('hello, world')
      expect(response.reusable).toBe(true)
    }
  })

  it('skips interim 1xx answers and reads the final one', () => {
    const response = read([`HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n${WITH_LENGTH}`])
    expect(response.status).toBe(200)
    expect(response.body.toString()).toBe(JSON_BODY)
  })

  it('reads a body that runs to the end of the connection, and never reuses that connection', () => {
    const response = read(['HTTP/1.1 200 OK\r\n\r\nall', ' of it'], { end: true })
    expect(response.body.toString()).toBe('all of it')
    expect(response.reusable).toBe(false)
    // An unknown coding as the last one is framed by the connection's end too.
    expect(read(['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw'], { end: true }).reusable).toBe(false)
  })

  it('no body for 204 and 304; an empty one for Content-Length 0', () => {
    expect(read(['HTTP/1.1 204 No Content\r\n\r\n']).body.length).toBe(0)
    expect(read(['HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n']).body.length).toBe(0)
    expect(read(['HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n']).status).toBe(500)
  })

  it('tells whether the connection may be reused', () => {
    const reusable = (head: string) => read([`${head}\r\nContent-Length: 2\r\n\r\nok`]).reusable
    expect(reusable('HTTP/1.1 200 OK')).toBe(true)
    expect(reusable('HTTP/1.1 200 OK\r\nConnection: close')).toBe(false)
    expect(reusable('HTTP/1.1 200 OK\r\nConnection: keep-alive, Close')).toBe(false)
    expect(reusable('HTTP/1.0 200 OK')).toBe(false)
    expect(reusable('HTTP/1.0 200 OK\r\nConnection: keep-alive')).toBe(true)
    // Both framings: the length is ignored, and the connection is not trusted afterwards.
    const both = read(['HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'])
    expect(both.body.toString()).toBe('ok')
    expect(both.reusable).toBe(false)
    // HTTP/1.0 knows no transfer coding: the framing is read, the connection not trusted.
    const old = read(['HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'])
    expect(old.body.toString()).toBe('ok')
    expect(old.reusable).toBe(false)
    // Bytes beyond the answer (nothing else was asked): the answer stands, the connection does not.
    const extra = read([`${WITH_LENGTH}HTTP/1.1 200 OK\r\n`])
    expect(extra.body.toString()).toBe(JSON_BODY)
    expect(extra.reusable).toBe(false)
  })

  it('joins repeated fields; a repeated Content-Length must agree', () => {
    const response = read(['HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a:  2 \r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok'])
    expect(response.headers.get('x-a')).toBe('1, 2')
    expect(response.body.toString()).toBe('ok')
    expect(() => read(['HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok'])).toThrow(/invalid Content-Length/)
  })

  it.each([
    ['not HTTP', 'SSH-2.0-OpenSSH\r\n\r\n', /status line/],
    ['HTTP/2 status line', 'HTTP/2 200 OK\r\n\r\n', /status line/],
    ['a two-digit status', 'HTTP/1.1 20 OK\r\n\r\n', /status line/],
    ['a folded header line', 'HTTP/1.1 200 OK\r\nX-A: 1\r\n  folded\r\nContent-Length: 0\r\n\r\n', /malformed header line/],
    ['a space before the colon', 'HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n', /malformed header line/],
    ['a header without a colon', 'HTTP/1.1 200 OK\r\nnonsense\r\n\r\n', /malformed header line/],
    ['a bare LF inside a value', 'HTTP/1.1 200 OK\r\nX-A: 1\nX-B: 2\r\nContent-Length: 0\r\n\r\n', /malformed header value/],
    ['a negative Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', /invalid Content-Length/],
    ['a Content-Length with a sign', 'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok', /invalid Content-Length/],
    ['a chunk size that is not hex', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /invalid chunk size/],
    ['a chunk longer than its size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokay\r\n0\r\n\r\n', /does not end where its size says/],
    ['switching protocols', 'HTTP/1.1 101 Switching Protocols\r\n\r\n', /switched protocols/],
    ['a status below 100 (not an interim answer)', 'HTTP/1.1 042 Odd\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', /no valid status \(042\)/],
    ['a status above 599', 'HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n', /no valid status \(600\)/],
  ])('refuses %s', (_name, text, message) => {
    expect(() => read([text])).toThrow(HttpProtocolError)
    expect(() => read([text])).toThrow(message)
  })

  it('bounds the header section, the trailers, a chunk line and the body', () => {
    const big = 'x'.repeat(LIMITS.maxHeaderBytes)
    expect(() => read([`HTTP/1.1 200 OK\r\nX-Big: ${big}\r\n\r\n`])).toThrow(/header section is larger than 1024 bytes/)
    // Fed in small pieces, the bound holds before the end of the head ever arrives.
    const reader = createResponseReader(LIMITS)
    expect(() => {
      for (let i = 0; i < 200; i++) reader.push(Buffer.from('X-Many: 0123456789\r\n'))
    }).toThrow(/header section is larger/)
    expect(() => read([`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Big: ${big}\r\n\r\n`])).toThrow(/trailer section is larger/)
    expect(() => read(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;', 'a'.repeat(5_000)])).toThrow(/chunk size line is too long/)
    expect(() => read(['HTTP/1.1 200 OK\r\nContent-Length: 4097\r\n\r\n'])).toThrow(/larger than 4096 bytes/)
    expect(() => read(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n', 'a'.repeat(2_048), '\r\n801\r\n'])).toThrow(/larger than 4096 bytes/)
    expect(() => read(['HTTP/1.1 200 OK\r\n\r\n', Buffer.alloc(4_097)], { end: true })).toThrow(/larger than 4096 bytes/)
    // At the bound exactly, the answer is read.
    expect(read(['HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n', Buffer.alloc(4_096)]).body.length).toBe(4_096)
  })

  it('an answer cut short by the end of the connection is an error, at every point', () => {
    for (const text of [WITH_LENGTH, CHUNKED]) {
      for (let i = 0; i < text.length; i++) {
        const reader = createResponseReader(LIMITS)
        if (i > 0) expect(reader.push(Buffer.from(text.slice(0, i), 'latin1'))).toBeUndefined()
        expect(() => reader.end()).toThrow(i === 0 ? /closed without an answer/ : /closed before the answer was complete/)
      }
    }
  })

  it('reads a large head, chunk lines and trailers that trickle in a byte at a time', () => {
    const limits = { maxHeaderBytes: 64 * 1024, maxBodyBytes: 4_096 }
    const fields = Array.from({ length: 1_500 }, (_, i) => `X-Field-${i}: ${'v'.repeat(20)}\r\n`).join('')
    const text = `HTTP/1.1 200 OK\r\n${fields}Transfer-Encoding: chunked\r\n\r\n5;${'e'.repeat(200)}\r\nhello\r\n0\r\n${fields.split('\r\n').slice(0, 900).join('\r\n')}\r\n\r\n`
    const bytes = Buffer.from(text, 'latin1')
    const reader = createResponseReader(limits)
    let response: HttpResponse | undefined
    for (let i = 0; i < bytes.length; i++) {
      if (response) throw new Error(`the answer completed early, at byte ${i} of ${bytes.length}`)
      response = reader.push(bytes.subarray(i, i + 1))
    }
    expect(response?.body.toString()).toBe('hello')
    expect(response?.headers.get('x-field-1499')).toBe('v'.repeat(20))
    expect(response?.reusable).toBe(true)
  })

  it('refuses bytes after a complete answer', () => {
    const reader = createResponseReader(LIMITS)
    expect(reader.push(Buffer.from(WITH_LENGTH))).toBeDefined()
    expect(() => reader.push(Buffer.from('x'))).toThrow(/after the answer/)
  })
})
