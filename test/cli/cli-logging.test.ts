/**
 * What the command does with output that is not its own: a dependency's console lines, node's
 * process warnings and an uncaught error become JSON log lines (first line only, without
 * secrets), and a store's connection errors are logged at most once per interval. Real pino
 * writing into an array.
 */
import { Writable } from 'node:stream'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { captureProcessOutput, cliLoggerOptions, connectionErrorLogger, requestContext, type CliLogger } from '../../src/cli/cli-logging.js'

function capture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: pino(cliLoggerOptions('debug'), stream) as unknown as CliLogger, lines }
}

describe('the command logs what is not its own as JSON', () => {
  it("a dependency's console output, node's warnings and an uncaught error: one JSON line each, without secrets", async () => {
    const { logger, lines } = capture()
    const exits: number[] = []
    const nodeListeners = process.listeners('warning').length
    const crashListeners = process.listeners('uncaughtException').length
    const consoleError = console.error
    const restore = captureProcessOutput(logger, ['SECRET-KEY-0123456789'], (code) => void exits.push(code))
    try {
      console.error('[ioredis] Unhandled error event: Error: connect ECONNREFUSED 127.0.0.1:6379 at https://rpc.example/SECRET-KEY-0123456789\n    at TCPConnectWrap.afterConnect')
      console.log('plain %s', 'text')
      process.emitWarning('something is deprecated', { code: 'DEP0999' })
      await new Promise((resolve) => setImmediate(resolve))
      ;(process.emit as (event: string, ...args: unknown[]) => boolean)('uncaughtException', new TypeError('boom at SECRET-KEY-0123456789'), 'uncaughtException')
    } finally {
      restore()
    }
    expect(lines.map((line) => [line.level, line.event, line.msg])).toEqual([
      [50, 'dependency_output', '[ioredis] Unhandled error event: Error: connect ECONNREFUSED 127.0.0.1:6379 at https://rpc.example/[redacted]'],
      [30, 'dependency_output', 'plain text'],
      [40, 'process_warning', 'something is deprecated'],
      [60, 'crashed', 'TypeError: boom at [redacted]'],
    ])
    expect(lines[2]).toMatchObject({ name: 'Warning', code: 'DEP0999' })
    expect(exits).toEqual([1])
    // Restored: node's own warning printer is back, the console is the console.
    expect(process.listeners('warning')).toHaveLength(nodeListeners)
    expect(process.listeners('uncaughtException')).toHaveLength(crashListeners)
    expect(console.error).toBe(consoleError)
  })

  it('names the request of a line, when there is one', () => {
    const { logger, lines } = capture()
    requestContext.run('req-1', () => logger.info({ event: 'inside' }))
    logger.info({ event: 'outside' })
    expect(lines.map((line) => [line.event, line.requestId])).toEqual([
      ['inside', 'req-1'],
      ['outside', undefined],
    ])
  })

  it("a store's connection errors: the first at once, then at most one per interval with how many were left out", () => {
    const { logger, lines } = capture()
    let now = 0
    const report = connectionErrorLogger(logger, 'redis', ['hunter2-password'], 30_000, () => now)
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), { code: 'ECONNREFUSED' })
    for (let i = 0; i < 60; i++) {
      report(refused)
      now += 500
    }
    // 30 s after the first: logged, with the 59 left out meanwhile.
    const wrongPass = new Error('WRONGPASS invalid username-password pair hunter2-password')
    report(wrongPass)
    report(wrongPass)
    expect(lines.map((line) => [line.event, line.code, line.repeated, line.msg])).toEqual([
      ['store_connection_error', 'ECONNREFUSED', undefined, "the store's connection failed: connect ECONNREFUSED 127.0.0.1:6390"],
      ['store_connection_error', undefined, 59, "the store's connection failed: WRONGPASS invalid username-password pair [redacted]"],
    ])
    expect(lines[1]).toMatchObject({ level: 40, store: 'redis', variable: 'STORE_URL' })
  })
})
