import { lamports } from '@solana/kit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { createHandler, healthRoutes } from '../../src/http/index.js'
import { exactSvm } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { fundedSigner, startSolanaTestRpc } from '../support/svm-fixtures.js'

let chain: LiteSvmRpc
beforeAll(async () => {
  chain = await startSolanaTestRpc()
})
afterAll(async () => {
  await chain?.close()
})

describe('Solana readiness', () => {
  it('checks the genesis hash and each fee payer balance; /readyz turns 503 while the RPC fails and 200 when it is back', async () => {
    const rich = await fundedSigner(chain.svm, 1n)
    const poor = await fundedSigner(chain.svm, 0n)
    chain.svm.airdrop(poor.address, lamports(5_000_000n))
    const facilitator = createFacilitator({
      schemes: [exactSvm({ networks: [{ network: 'solana-devnet', rpcUrl: chain.url }], feePayers: [rich, poor], rpcTimeoutMs: 1_000 })],
    })
    // Every call runs its checks here: the route's cache (readyCacheMs) has its own test in test/http/health-routes.test.ts.
    const readyz = createHandler(facilitator, { routes: healthRoutes(facilitator, { readyCacheMs: 0 }) })
    const report = await facilitator.readiness()
    expect(report.ready).toBe(false)
    expect(report.checks).toMatchObject([
      { name: 'store', ok: true },
      { name: 'rpc solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', ok: true },
      { name: `fee payer ${rich.address} solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`, ok: true, detail: '1000000000 lamports' },
      { name: `fee payer ${poor.address} solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`, ok: false, detail: '5000000 lamports, below 10000000' },
    ])

    chain.svm.airdrop(poor.address, lamports(20_000_000n))
    expect((await readyz(new Request('http://x/readyz'))).status).toBe(200)
    chain.failNext(10)
    const down = await readyz(new Request('http://x/readyz'))
    expect(down.status).toBe(503)
    expect((await down.json()).checks).toContainEqual({ name: 'rpc solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', ok: false, detail: 'rpc_unavailable' })
    chain.failNext(0)
    expect((await readyz(new Request('http://x/readyz'))).status).toBe(200)
  })

  it('is not ready on an RPC of another chain', async () => {
    const signer = await fundedSigner(chain.svm, 1n)
    const facilitator = createFacilitator({ schemes: [exactSvm({ networks: [{ network: 'solana', rpcUrl: chain.url }], feePayers: [signer] })] })
    const report = await facilitator.readiness()
    expect(report.checks).toContainEqual({ name: 'rpc solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', ok: false, detail: 'the RPC serves another chain (genesis hash differs)' })
  })
})
