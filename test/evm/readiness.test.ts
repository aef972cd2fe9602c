import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createFacilitator } from '../../src/index.js'
import { createHandler, healthRoutes } from '../../src/http/index.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { MULTICALL3_ADDRESS } from '../../src/evm/codec/abi.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'

let world: EvmFixture
let proxy: FaultProxy
beforeAll(async () => {
  world = await startEvmFixture()
  proxy = await startFaultProxy(world.node.rpcUrl)
})
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})

describe('EVM readiness', () => {
  it('checks chain id, Multicall3 and signer balances; /readyz turns 503 while the RPC fails and 200 when it is back', async () => {
    const facilitator = createFacilitator({
      schemes: [exactEvm(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [proxy.url] }], rpcTimeoutMs: 500 }))],
    })
    // Every call runs its checks here: the route's cache (readyCacheMs) has its own test in test/http/health-routes.test.ts.
    const readyz = createHandler(facilitator, { routes: healthRoutes(facilitator, { readyCacheMs: 0 }) })
    const signer = world.signers[0]!.address
    const ready = await readyz(new Request('http://x/readyz'))
    expect(ready.status).toBe(200)
    const body = (await ready.json()) as { checks: { name: string; ok: boolean; detail?: string }[] }
    expect(body.checks.map((check) => [check.name, check.ok])).toEqual([
      ['store', true],
      ['rpc eip155:84532', true],
      ['multicall3 eip155:84532', true],
      [`signer ${signer} eip155:84532`, true],
    ])

    proxy.setMode({ kind: 'error', status: 502 })
    const down = await readyz(new Request('http://x/readyz'))
    expect(down.status).toBe(503)
    const text = await down.text()
    expect(JSON.parse(text).checks).toContainEqual({ name: 'rpc eip155:84532', ok: false, detail: 'rpc_unavailable' })
    expect(text).not.toContain(proxy.url)
    proxy.setMode({ kind: 'pass' })
    expect((await readyz(new Request('http://x/readyz'))).status).toBe(200)
  })

  it('names a chain id that differs, a missing Multicall3 and a signer short of gas money', async () => {
    const config = world.adapterConfig()
    const wrongChain = createFacilitator({ schemes: [exactEvm({ ...config, networks: [{ network: 'eip155:8453', rpcUrls: [world.node.rpcUrl] }] })] })
    expect((await wrongChain.readiness()).checks).toContainEqual({ name: 'rpc eip155:8453', ok: false, detail: 'the RPC serves chain 84532, not 8453' })

    const poor = exactEvm({ ...config, minSignerBalance: 10n ** 30n })
    const report = await createFacilitator({ schemes: [poor] }).readiness()
    expect(report.ready).toBe(false)
    expect(report.checks.find((check) => check.name.startsWith('signer'))?.detail).toMatch(/ wei, below 1000000000000000000000000000000$/)

    const code = await world.node.publicClient.getCode({ address: MULTICALL3_ADDRESS })
    await world.node.testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: '0x' })
    try {
      const missing = await createFacilitator({ schemes: [exactEvm(config)] }).readiness()
      expect(missing.checks).toContainEqual({ name: 'multicall3 eip155:84532', ok: false, detail: `no contract at ${MULTICALL3_ADDRESS}: deploy Multicall3 there or set the network's multicall3 option` })
    } finally {
      await world.node.testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: code! })
    }
  })

  it('watches the signers\' gas money on an interval: onLow once per fall, onRecovered when refilled', async () => {
    const { watchSignerBalances } = await import('../../src/index.js')
    const signer = world.signers[0]!.address
    const facilitator = createFacilitator({ schemes: [exactEvm(world.adapterConfig({ minSignerBalance: 10n ** 18n }))] })
    const events: string[] = []
    const watch = watchSignerBalances(facilitator, {
      intervalMs: 60_000,
      onLow: (s) => events.push(`low ${s.address} ${s.balance}`),
      onRecovered: (s) => events.push(`recovered ${s.address}`),
    })
    try {
      const before = await world.node.publicClient.getBalance({ address: signer })
      await world.node.testClient.setBalance({ address: signer, value: 10n ** 17n })
      const readings = await watch.check()
      expect(readings).toEqual([{ network: 'eip155:84532', address: signer, balance: 10n ** 17n, minimum: 10n ** 18n }])
      await watch.check()
      await world.node.testClient.setBalance({ address: signer, value: before })
      await watch.check()
      expect(events).toEqual([`low ${signer} ${10n ** 17n}`, `recovered ${signer}`])
    } finally {
      watch.stop()
    }
  })
})
