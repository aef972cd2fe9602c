/**
 * One build's facilitator served over HTTP, in a process of its own, for the A/B comparison
 * (bench/ab.ts). It loads the build by its dist/ files, through the public API every compared
 * commit has: createFacilitator (x402-facilitator), exactEvm and privateKeySigner
 * (x402-facilitator/evm), exactSvm (x402-facilitator/svm), createHandler and createNodeListener
 * (x402-facilitator/http) on a plain node:http server. Nothing of the working tree's src/ is
 * imported here.
 *
 * Plain JavaScript run by plain node, on purpose: under tsx, every module loaded, the build's
 * dist/ included, is rewritten with esbuild's keepNames helper (`__name(...)` around each
 * closure), which costs the served code CPU the built package does not have.
 *
 * The spec comes in BENCH_AB_SERVER, JSON:
 *   { dist, label, chain: 'evm' | 'svm', rpcUrl,
 *     evm?: { network, key, asset?: { address, name, version } }, svm?: { feePayerSeed }, profileDir? }
 * Parent -> child: 'stats', { profile: 'start' | 'stop', name }, 'exit'.
 * Child -> parent: { ready: url } or { failed: message }, { stats: { requests, cpuMs } }, { profiled: file | null }.
 */
import diagnostics from 'node:diagnostics_channel'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** The channel our transports publish each RPC request on (src/transport/keep-alive-post.ts), by name, so any build's is heard. */
const RPC_REQUEST_CHANNEL = 'x402-facilitator:rpc-request'
const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1'

const send = (message) => process.send?.(message)

/** Runs a constructor of the build; its refusal (an option it does not know, say) ends in one clear line. */
function configured(label, what, make) {
  try {
    return make()
  } catch (error) {
    throw new Error(`${label}: ${what} refused the benchmark's configuration (${error instanceof Error ? error.message : String(error)}); the commit may be too old for the comparison`)
  }
}

async function main() {
  const spec = JSON.parse(process.env.BENCH_AB_SERVER ?? 'null')
  if (!spec || !process.send) throw new Error('run by bench/ab.ts with BENCH_AB_SERVER')
  const load = (entry) => import(pathToFileURL(join(spec.dist, entry)).href)
  const need = (module, name, entry) => {
    const value = module[name]
    if (typeof value !== 'function') throw new Error(`${spec.label} is too old for the comparison: its ${entry} has no ${name}`)
    return value
  }
  const core = await load('index.js')
  const http = await load('http/index.js')
  const createFacilitator = need(core, 'createFacilitator', 'x402-facilitator')
  const createHandler = need(http, 'createHandler', 'x402-facilitator/http')
  const createNodeListener = need(http, 'createNodeListener', 'x402-facilitator/http')

  let scheme
  if (spec.chain === 'evm') {
    const e = spec.evm
    const evm = await load('evm/index.js')
    const exactEvm = need(evm, 'exactEvm', 'x402-facilitator/evm')
    const privateKeySigner = need(evm, 'privateKeySigner', 'x402-facilitator/evm')
    // Only options every compared commit knows, everything else at its default, as a user starts it. Without
    // `asset` (--unknown-token), the test token is one outside the known table.
    const assets = e.asset ? { assets: [e.asset] } : {}
    scheme = configured(spec.label, 'exactEvm', () => exactEvm({ networks: [{ network: e.network, rpcUrls: [spec.rpcUrl], ...assets }], signers: [privateKeySigner(e.key)] }))
  } else {
    const svm = await load('svm/index.js')
    const exactSvm = need(svm, 'exactSvm', 'x402-facilitator/svm')
    const { createKeyPairSignerFromPrivateKeyBytes } = await import('@solana/kit')
    const feePayer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(spec.svm.feePayerSeed, 'hex'))
    const network = typeof core.SOLANA_DEVNET === 'string' ? core.SOLANA_DEVNET : SOLANA_DEVNET
    // rpcUrl (one URL) is the older spelling; newer commits take it too.
    scheme = configured(spec.label, 'exactSvm', () => exactSvm({ networks: [{ network, rpcUrl: spec.rpcUrl }], feePayers: [feePayer] }))
  }
  const facilitator = configured(spec.label, 'createFacilitator', () => createFacilitator({ schemes: [scheme] }))
  const server = createServer(createNodeListener(createHandler(facilitator)))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))

  let requests = 0
  diagnostics.subscribe(RPC_REQUEST_CHANNEL, () => void requests++)
  const cpuMs = () => {
    const usage = process.cpuUsage()
    return (usage.user + usage.system) / 1000
  }
  let session
  const profile = async ({ profile: what, name }) => {
    if (what === 'start') {
      session = new Session()
      session.connect()
      await session.post('Profiler.enable')
      // 100 µs between samples: a verify of a few hundred µs of CPU still shows its parts.
      await session.post('Profiler.setSamplingInterval', { interval: 100 })
      await session.post('Profiler.start')
      send({ profiled: null })
    } else if (session) {
      const { profile: taken } = await session.post('Profiler.stop')
      session.disconnect()
      session = undefined
      const file = join(spec.profileDir ?? '.', `${name}.cpuprofile`)
      writeFileSync(file, JSON.stringify(taken))
      send({ profiled: file })
    }
  }
  process.on('message', (message) => {
    if (message === 'stats') send({ stats: { requests, cpuMs: cpuMs() } })
    else if (message === 'exit') {
      server.close(() => process.exit(0))
      server.closeAllConnections?.()
    } else if (typeof message === 'object' && message !== null && 'profile' in message) {
      profile(message).catch((error) => send({ failed: `profiling: ${String(error)}` }))
    }
  })
  process.on('disconnect', () => process.exit(0))
  send({ ready: `http://127.0.0.1:${server.address().port}` })
}

main().catch((error) => {
  send({ failed: error instanceof Error ? error.message : String(error) })
  process.exit(1)
})
