/**
 * A facilitator process on a SQLite file, killed with SIGKILL in the middle of a
 * settle (after the transaction was journaled in the file, before its
 * confirmation), then restarted on the same file: the retried settle answers the
 * original transaction, nothing is sent twice, and the ledger in the file says
 * what happened.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { toHex, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signExactEvmPayment } from '../../src/evm/sign-payment.js'
import { decodeSettlementRecord } from '../../src/settlement/settlement-record.js'
import { createSqliteStore } from '../../src/stores/sqlite/sqlite-store.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { authorizationsUsed, body, postJson } from './support.js'

const SETTLE_MS = 3_000
const SCRIPT = fileURLToPath(new URL('./fixtures/facilitator-process.ts', import.meta.url))

let world: EvmFixture
let dir: string
let path: string
const children = new Set<ChildProcess>()

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 1 })
  dir = mkdtempSync(join(tmpdir(), 'x402-crash-sqlite-'))
  path = join(dir, 'facilitator.sqlite')
})
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await world?.node.testClient.setAutomine(true).catch(() => undefined)
  await world?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** Starts the facilitator process on the SQLite file and resolves with its URL once it listens (bounded). */
async function startFacilitatorProcess(): Promise<{ url: string; child: ChildProcess }> {
  const signer = world.signers[0]!
  const privateKey = 'getHdKey' in signer ? toHex((signer as { getHdKey(): { privateKey: Uint8Array | null } }).getHdKey().privateKey!) : undefined
  if (!privateKey) throw new Error('the fixture signer has no key to hand over')
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    env: { ...process.env, RPC_URL: world.node.rpcUrl, FACILITATOR_KEY: privateKey, SQLITE_PATH: path, SETTLE_MS: String(SETTLE_MS) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  child.once('exit', () => children.delete(child))
  const port = await new Promise<number>((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`the facilitator process did not start:\n${output}`)), 20_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /LISTENING (\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(Number(match[1]))
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the facilitator process exited (${code}):\n${output}`))
    })
  })
  return { url: `http://127.0.0.1:${port}`, child }
}

/** Reads the file (as another process, through its own connection) until a settlement record in state `broadcast` appears. */
async function waitForBroadcastRecord(timeoutMs: number): Promise<{ transaction: string; leaseUntil: number }> {
  const reader = new Database(path)
  try {
    const until = Date.now() + timeoutMs
    while (Date.now() < until) {
      const rows = reader.prepare(`SELECT value FROM x402_entries WHERE kind = 'v' AND key LIKE 'settlement:%'`).all() as { value: string }[]
      for (const row of rows) {
        const record = decodeSettlementRecord(row.value)
        if (record?.state === 'broadcast') return record
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    throw new Error('no broadcast record appeared in the SQLite file')
  } finally {
    reader.close()
  }
}

describe('crash in the middle of a settle, on SQLite', () => {
  it('SIGKILL after the journal, restart on the same file: the retried settle answers the original transaction, sent once', async () => {
    const t0 = performance.now()
    const at = () => `${(performance.now() - t0).toFixed(0)} ms`
    const timeline: string[] = []
    const signer = world.signers[0]!.address
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2({ amount: '2500' })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const authorizationNonce = (paymentPayload.payload as { authorization: { nonce: Hex } }).authorization.nonce
    const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
    const signerNonceBefore = await world.node.publicClient.getTransactionCount({ address: signer })
    const payToBefore = await tokenBalance(world.node, world.token, world.payTo)

    const first = await startFacilitatorProcess()
    timeline.push(`${at()} facilitator process 1 listening on ${path} (pid ${first.child.pid})`)
    // The settle will stall after broadcast: no block is mined until the test says so.
    await world.node.testClient.setAutomine(false)
    const inFlight = postJson(`${first.url}/settle`, body(paymentPayload, requirements)).then(
      (answer) => ({ answer }),
      (error: unknown) => ({ error }),
    )
    const record = await waitForBroadcastRecord(5_000)
    timeline.push(`${at()} the file holds the record in state broadcast, transaction ${record.transaction}`)
    // Give the send its moment: the process dies with the transaction in the node's pool (checked below).
    const until = Date.now() + 2_000
    while (Date.now() < until && !(await world.node.publicClient.getTransaction({ hash: record.transaction as Hex }).catch(() => undefined))) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const exited = new Promise((resolve) => first.child.once('exit', resolve))
    first.child.kill('SIGKILL')
    await exited
    timeline.push(`${at()} process 1 killed with SIGKILL mid-settle`)
    const lost = await inFlight
    expect('error' in lost).toBe(true) // the caller of the killed process got no answer
    const inPool = await world.node.publicClient.getTransaction({ hash: record.transaction as Hex }).catch(() => undefined)
    timeline.push(`${at()} the transaction is ${inPool ? 'in the node pool (sent before the kill)' : 'not in the node pool (killed between journal and send)'}`)

    await world.node.testClient.mine({ blocks: 1 })
    await world.node.testClient.setAutomine(true)
    timeline.push(`${at()} block mined, automine back on`)

    const second = await startFacilitatorProcess()
    timeline.push(`${at()} facilitator process 2 listening on the same file (pid ${second.child.pid})`)
    const retried = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
    timeline.push(`${at()} retried settle answered in ${retried.ms.toFixed(0)} ms: ${retried.text}`)
    expect(retried.status).toBe(200)
    expect(retried.json).toMatchObject({ success: true, transaction: record.transaction, payer: payer.address })
    // Asked again: the same transaction straight from the record, as a duplicate (one success per payment).
    const again = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
    expect(again.json).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: record.transaction })

    // Exactly one transfer on chain, and one transaction from the facilitator's key.
    const used = await authorizationsUsed(world, payer.address, fromBlock)
    expect(used.map((log) => log.transactionHash)).toEqual([record.transaction])
    expect(await world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'authorizationState', args: [payer.address, authorizationNonce] })).toBe(true)
    expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 2500n)
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 2500n)
    expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(signerNonceBefore + 1)

    // The ledger in the file: process 1 died before its outcome; process 2 wrote one row, marked resumed
    // (the duplicate answer is no row). It is written after the answer: wait for it, bounded.
    const reader = createSqliteStore({ path })
    let rows = (await reader.ledger.read()).entries
    for (const deadline = Date.now() + 3_000; rows.length === 0 && Date.now() < deadline; rows = (await reader.ledger.read()).entries) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(rows.map((row) => [row.status, row.resumed, row.transaction, row.payer, row.amount])).toEqual([
      ['settled', true, record.transaction, payer.address.toLowerCase(), '2500'],
    ])
    await reader.close()
    second.child.kill('SIGKILL')
    console.info(`[crash-sqlite] timeline\n  ${timeline.join('\n  ')}`)
  })
})
