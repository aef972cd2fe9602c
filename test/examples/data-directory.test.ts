/**
 * The node:http example on a data directory: a restarted facilitator remembers
 * the payments it settled (a replay is a duplicate with the same transaction),
 * and serves its ledger to operators only.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openDataDirectory } from '../../examples/node-http/data-directory.js'
import { startNodeHttpServer } from '../../examples/node-http/server.js'
import { createFacilitator } from '../../src/index.js'
import { ledgerPageSchema } from '../../src/ledger/index.js'
import { createLedgerAdapter, ledgerBody } from '../support/ledger-adapter.js'

const root = mkdtempSync(join(tmpdir(), 'x402-data-dir-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('node:http example with a data directory', () => {
  it('keeps settlements across a restart and serves the ledger to operators only', async () => {
    const dir = join(root, 'data')
    const adapter = createLedgerAdapter()
    adapter.balances.set('0xpayer', 1_000n)
    const body = ledgerBody(adapter, { from: '0xpayer', to: '0xshop', value: '10', nonce: 'restart' })
    const authenticate = (request: Request, route: string) => route !== 'private' || request.headers.get('authorization') === 'Bearer ops'

    const start = async () => {
      const data = openDataDirectory(dir)
      const facilitator = createFacilitator({ schemes: [adapter], store: data.store, hooks: [...data.hooks] })
      const server = await startNodeHttpServer(facilitator, { routes: [...data.routes], authenticate })
      return { data, facilitator, server }
    }
    const post = (url: string) => fetch(`${url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json())

    const first = await start()
    expect(existsSync(join(dir, 'facilitator.sqlite'))).toBe(true)
    const settled = (await post(first.server.url)) as { success: boolean; transaction: string }
    expect(settled.success).toBe(true)
    await first.facilitator.drain()
    await first.server.close()
    await first.data.close()

    const second = await start()
    expect(await post(second.server.url)).toMatchObject({ success: true, transaction: settled.transaction })
    expect((await fetch(`${second.server.url}/ledger`)).status).toBe(401)
    const page = ledgerPageSchema.parse(await (await fetch(`${second.server.url}/ledger`, { headers: { authorization: 'Bearer ops' } })).json())
    expect(page.entries.map((e) => [e.status, e.transaction])).toEqual([['settled', settled.transaction]])
    await second.server.close()
    await second.data.close()
  })
})
