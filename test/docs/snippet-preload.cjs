'use strict'
// Loaded with `--require` (NODE_OPTIONS) into every process a documentation snippet starts
// (the tsx CLI and the snippet itself), so that a snippet runs as written but harmlessly:
//
// - a server a snippet starts listens on a free loopback port instead of the one it names
//   (4020 of two snippets running at once would collide, and nothing is exposed), and the
//   port it got is written to X402_SNIPPET_REPORT as {listening, port};
// - a connection to anything but loopback is refused (ECONNREFUSED) and written down as
//   {blocked: host}: a snippet must not reach a public RPC, a real chain or the internet;
// - a loopback port named in X402_SNIPPET_PORT_MAP ("8545=34567,...") is sent to the other
//   one: a snippet written for `anvil` on 8545 reaches the test's own anvil.
const net = require('node:net')
const fs = require('node:fs')

const report = process.env.X402_SNIPPET_REPORT
const portMap = new Map(
  (process.env.X402_SNIPPET_PORT_MAP || '')
    .split(',')
    .filter(Boolean)
    .map((pair) => pair.split('=').map(Number)),
)
const note = (entry) => {
  if (report) fs.appendFileSync(report, `${JSON.stringify({ pid: process.pid, ...entry })}\n`)
}
const isLoopback = (host) => host === 'localhost' || host === '::1' || /^(::ffff:)?127\./.test(host)

const listen = net.Server.prototype.listen
net.Server.prototype.listen = function (...args) {
  let asked
  const first = args[0]
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    asked = Number(first)
    const callback = args.find((arg) => typeof arg === 'function')
    args = callback ? [0, '127.0.0.1', callback] : [0, '127.0.0.1']
  } else if (first && typeof first === 'object' && !Array.isArray(first) && first.path === undefined && first.port !== undefined) {
    asked = Number(first.port)
    args = [{ ...first, port: 0, host: '127.0.0.1' }, ...args.slice(1)]
  } else if (args.length === 0 || typeof first === 'function') {
    asked = 0
    args = [0, '127.0.0.1', ...args]
  }
  // A path (a Unix socket or pipe, e.g. the tsx CLI's own channel) is left alone.
  if (asked !== undefined) this.once('listening', () => note({ listening: asked, port: this.address().port }))
  return listen.apply(this, args)
}

const connect = net.Socket.prototype.connect
net.Socket.prototype.connect = function (...args) {
  // Node hands its own calls over already normalized (an array marked with a symbol).
  const normalized = Array.isArray(args[0]) && Object.getOwnPropertySymbols(args[0]).length > 0 ? args[0] : net._normalizeArgs(args)
  const options = normalized[0]
  if (options.path == null) {
    const host = options.host || 'localhost'
    if (!isLoopback(host)) {
      note({ blocked: host })
      const error = Object.assign(new Error(`connect ECONNREFUSED ${host}: a documentation snippet stays on loopback`), { code: 'ECONNREFUSED' })
      process.nextTick(() => this.destroy(error))
      return this
    }
    const to = portMap.get(Number(options.port))
    if (to) options.port = to
  }
  return connect.call(this, normalized)
}
