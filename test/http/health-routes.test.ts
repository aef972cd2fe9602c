/**
 * `/readyz` is public: it answers from one cached check, so callers cannot make the facilitator
 * spend RPC requests and store writes at their pace. Over a real node server.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createFacilitator, createMemoryStore, type ReadinessCheck } from '../../src/index.js'
import { createHandler, createNodeServer, healthRoutes, type HealthRoutePaths } from '../../src/http/index.js'
import type { Store } from '../../src/stores/store.js'
import { createLedgerAdapter } from '../support/ledger-adapter.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** A facilitator whose adapter counts its readiness checks (each taking `checkMs`) and whose store counts writes, served by a node server. */
async function served(paths: HealthRoutePaths = {}, checkMs = 20) {
  const counts = { checks: 0, storeWrites: 0 }
  let healthy = true
  const memory = createMemoryStore()
  const store: Store = { ...memory, set: (key, value, options) => (counts.storeWrites++, memory.set(key, value, options)) }
  const adapter = {
    ...createLedgerAdapter(),
    async readiness(): Promise<ReadinessCheck[]> {
      counts.checks++
      await new Promise((resolve) => setTimeout(resolve, checkMs))
      return [{ name: 'rpc eip155:31337', ok: healthy }]
    },
  }
  const facilitator = createFacilitator({ schemes: [adapter], store })
  const server = createNodeServer(createHandler(facilitator, { routes: healthRoutes(facilitator, paths) }))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/readyz`
  return { counts, url, setHealthy: (value: boolean) => (healthy = value) }
}

describe('/readyz', () => {
  it('100 concurrent calls share one check (one round of RPC and one store write)', async () => {
    const { counts, url } = await served({}, 100)
    const answers = await Promise.all(Array.from({ length: 100 }, () => fetch(url)))
    expect(answers.every((answer) => answer.status === 200)).toBe(true)
    expect(counts).toEqual({ checks: 1, storeWrites: 1 })
  })

  it('100 rapid calls one after another answer from the one cached check (5 s by default)', async () => {
    const { counts, url } = await served()
    const bodies: { status: string; checkedAt: string }[] = []
    for (let i = 0; i < 100; i++) bodies.push((await (await fetch(url)).json()) as { status: string; checkedAt: string })
    expect(counts).toEqual({ checks: 1, storeWrites: 1 })
    expect(new Set(bodies.map((body) => body.checkedAt)).size).toBe(1)
    expect(Date.parse(bodies[0]!.checkedAt)).toBeGreaterThan(Date.now() - 5_000)
  })

  it('a call past readyCacheMs runs the next check, which can turn 503', async () => {
    const { counts, url, setHealthy } = await served({ readyCacheMs: 1_000 })
    expect((await fetch(url)).status).toBe(200)
    setHealthy(false)
    // Still the cached answer until it is a second old.
    expect((await fetch(url)).status).toBe(200)
    expect(counts.checks).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    expect((await fetch(url)).status).toBe(503)
    expect(counts.checks).toBe(2)
  })

  it('readyCacheMs 0 runs a check per call, still one at a time; a bad value is refused', async () => {
    const { counts, url } = await served({ readyCacheMs: 0 }, 50)
    await Promise.all([fetch(url), fetch(url), fetch(url)])
    expect(counts.checks).toBe(1)
    await fetch(url)
    expect(counts.checks).toBe(2)
    expect(() => healthRoutes(createFacilitator({ schemes: [createLedgerAdapter()] }), { readyCacheMs: -1 })).toThrow(/readyCacheMs/)
  })
})
