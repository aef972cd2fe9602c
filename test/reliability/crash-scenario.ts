/**
 * The crash scenario, one body for every store the facilitator process can
 * journal into: a facilitator process killed with SIGKILL in the middle of a
 * settle, after the transaction was journaled, then restarted on the same
 * store: the retried settle answers the original transaction and nothing is
 * sent twice. Each store's test file describes only its store.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { toHex, type Hex, type LocalAccount } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { decodeSettlementRecord } from '../../src/settlement/settlement-record.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { authorizationsUsed, body, postJson } from './support.js'

const SETTLE_MS = 3_000
const SCRIPT = fileURLToPath(new URL('./fixtures/facilitator-process.ts', import.meta.url))

/** The store under the crash, as fixtures/facilitator-process.ts and the test reach it. */
export interface CrashStore {
  /** How the titles, the timeline and the log name the store. */
  names: {
    /** Title of the `describe`. */
    describe: string
    /** Tag of the timeline log line: `crash` logs `[crash] timeline`. */
    log: string
    /** Who holds the journal: `Redis`, `the file`. */
    holder: string
    /** What process 2 restarts on, after "the same": `Redis`, `file`. */
    same: string
    /** Where no broadcast record showed up: `Redis`, `the SQLite file`. */
    missing: string
  }
  /** Starts the store for the file, alongside the chain; it is stopped after the file's tests. */
  start(): Promise<StartedCrashStore>
}

export interface StartedCrashStore {
  /** Where process 1 listens, for its timeline line (`on /tmp/…/facilitator.sqlite`), if worth saying. */
  listeningOn?: string
  /** Environment that points the facilitator process at the store. */
  env: Record<string, string>
  /** Opens a reader from outside the process; `values` returns the encoded settlement records the store holds now. */
  openRecords(): { values(): Promise<(string | undefined)[]>; close(): void }
  /** Store-specific checks once the retried settle has answered (process 2 still runs). */
  afterRetry?(outcome: { transaction: string; payer: LocalAccount; amount: string }): Promise<void>
  stop(): Promise<void>
}

/** Registers the crash test for `store`, with its own chain and store started for the file. */
export function describeCrashMidSettle(store: CrashStore): void {
  let world: EvmFixture
  let started: StartedCrashStore | undefined
  const children = new Set<ChildProcess>()

  beforeAll(async () => {
    ;[world, started] = await Promise.all([startEvmFixture({ signerCount: 1 }), store.start()])
  })
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL')
    await world?.node.testClient.setAutomine(true).catch(() => undefined)
    await Promise.all([world?.stop(), started?.stop()])
  })

  /** Starts the facilitator process and resolves with its URL once it listens (bounded). */
  async function startFacilitatorProcess(extraEnv: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess }> {
    const signer = world.signers[0]!
    const privateKey = 'getHdKey' in signer ? toHex((signer as { getHdKey(): { privateKey: Uint8Array | null } }).getHdKey().privateKey!) : undefined
    if (!privateKey) throw new Error('the fixture signer has no key to hand over')
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
      env: { ...process.env, RPC_URL: world.node.rpcUrl, FACILITATOR_KEY: privateKey, ...started!.env, SETTLE_MS: String(SETTLE_MS), ...extraEnv },
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

  /** Reads the store (as another process would) until a settlement record in state `broadcast` appears (bounded). */
  async function waitForBroadcastRecord(timeoutMs: number): Promise<{ transaction: string; leaseUntil: number }> {
    const records = started!.openRecords()
    try {
      const until = Date.now() + timeoutMs
      while (Date.now() < until) {
        for (const value of await records.values()) {
          const record = decodeSettlementRecord(value)
          if (record?.state === 'broadcast') return record
        }
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      throw new Error(`no broadcast record appeared in ${store.names.missing}`)
    } finally {
      records.close()
    }
  }

  /** A fresh payer's payment of `amount`, with the payee's balance and the signer's nonce before it. */
  async function newPayment(amount: string) {
    const payer = await world.newPayer(1_000_000n)
    const requirements = world.requirementsV2({ amount })
    const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
    const payToBefore = await tokenBalance(world.node, world.token, world.payTo)
    const nonceBefore = await world.node.publicClient.getTransactionCount({ address: world.signers[0]!.address })
    return { payer, requirements, paymentPayload, payToBefore, nonceBefore }
  }

  /** Process 1 settles the payment and dies right after its journal write: its caller gets no answer, the transaction never leaves it. */
  async function crashAfterJournal(paymentPayload: Parameters<typeof body>[0], requirements: Parameters<typeof body>[1]) {
    const first = await startFacilitatorProcess({ CRASH_AFTER_JOURNAL: '1' })
    const exited = new Promise((resolve) => first.child.once('exit', resolve))
    expect(await postJson(`${first.url}/settle`, body(paymentPayload, requirements)).then(() => 'answered', () => 'lost')).toBe('lost')
    await exited
    return waitForBroadcastRecord(2_000)
  }

  describe(store.names.describe, () => {
    it(`SIGKILL after the journal, restart on the same ${store.names.same}: the retried settle answers the original transaction, sent once`, async () => {
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
      timeline.push(`${at()} facilitator process 1 listening${started!.listeningOn ? ` ${started!.listeningOn}` : ''} (pid ${first.child.pid})`)
      // The settle will stall after broadcast: no block is mined until the test says so.
      await world.node.testClient.setAutomine(false)
      const inFlight = postJson(`${first.url}/settle`, body(paymentPayload, requirements)).then(
        (answer) => ({ answer }),
        (error: unknown) => ({ error }),
      )
      const record = await waitForBroadcastRecord(5_000)
      timeline.push(`${at()} ${store.names.holder} holds the record in state broadcast, transaction ${record.transaction}`)
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
      timeline.push(`${at()} facilitator process 2 listening on the same ${store.names.same} (pid ${second.child.pid})`)
      const retried = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
      timeline.push(`${at()} retried settle answered in ${retried.ms.toFixed(0)} ms: ${retried.text}`)
      expect(retried.status).toBe(200)
      expect(retried.json).toMatchObject({ success: true, transaction: record.transaction, payer: payer.address })
      // Asked again: the same answer straight from the record (a retry after a lost answer learns how it landed).
      const again = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
      expect(again.json).toMatchObject({ success: true, transaction: record.transaction })

      // Exactly one transfer on chain, and one transaction from the facilitator's key.
      const used = await authorizationsUsed(world, payer.address, fromBlock)
      expect(used.map((log) => log.transactionHash)).toEqual([record.transaction])
      expect(await world.node.publicClient.readContract({ address: world.token.address, abi: world.token.abi, functionName: 'authorizationState', args: [payer.address, authorizationNonce] })).toBe(true)
      expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 2500n)
      expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 2500n)
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(signerNonceBefore + 1)

      await started!.afterRetry?.({ transaction: record.transaction, payer, amount: '2500' })
      second.child.kill('SIGKILL')
      console.info(`[${store.names.log}] timeline\n  ${timeline.join('\n  ')}`)
    })

    it(`SIGKILL between the journal and the send: the restarted signer re-sends the journaled transaction before its nonce goes to another payment`, async () => {
      const signer = world.signers[0]!.address
      const { payer, requirements, paymentPayload, payToBefore, nonceBefore } = await newPayment('1700')

      // Process 1 dies right after its journal write: the transaction never leaves it.
      const record = await crashAfterJournal(paymentPayload, requirements)
      expect(await world.node.publicClient.getTransaction({ hash: record.transaction as Hex }).catch(() => undefined)).toBeUndefined()
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore)

      // Process 2 settles another payment first: its signer's first nonce read re-sends the journaled bytes, so the
      // other payment takes the next nonce and the journaled one lands as signed.
      const second = await startFacilitatorProcess()
      const otherPayer = await world.newPayer(1_000_000n)
      const otherRequirements = world.requirementsV2({ amount: '300' })
      const other = await postJson(`${second.url}/settle`, body(await signExactEvmPayment({ signer: otherPayer, requirements: otherRequirements }), otherRequirements))
      expect(other.json).toMatchObject({ success: true })
      const journaledReceipt = await world.node.publicClient.waitForTransactionReceipt({ hash: record.transaction as Hex, timeout: 5_000 })
      expect(journaledReceipt.status).toBe('success')
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 2)

      // The retry learns the original transaction: nothing is sent again.
      const retried = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
      expect(retried.json).toMatchObject({ success: true, payer: payer.address, transaction: record.transaction })
      expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 1700n + 300n)
      expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1700n)
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 2)
      second.child.kill('SIGKILL')
    })

    it(`SIGKILL between the journal and the send, the signer's nonce taken outside the facilitator: the retry checks the payment again and sends it anew`, async () => {
      const signerAccount = world.signers[0]!
      const signer = signerAccount.address
      const { payer, requirements, paymentPayload, payToBefore, nonceBefore } = await newPayment('1900')

      const record = await crashAfterJournal(paymentPayload, requirements)

      // Someone else with the signer's key (an operator's script) takes the journaled nonce while no facilitator runs.
      const taken = await world.node.walletClient(signerAccount).sendTransaction({ account: signerAccount, chain: world.node.chain, to: signer, value: 0n })
      await world.node.publicClient.waitForTransactionReceipt({ hash: taken })
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 1)

      // The retry: the journaled bytes can never land; the authorization is still unspent, so it is sent anew.
      const second = await startFacilitatorProcess()
      const retried = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
      expect(retried.json).toMatchObject({ success: true, payer: payer.address })
      expect((retried.json as { transaction: string }).transaction).not.toBe(record.transaction)
      // Within the lease of the dead process (a third of its 3 s budget) and a settle, not after the settle budget.
      expect(retried.ms).toBeLessThan(8_000)
      expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 1900n)
      expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1900n)
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 2)
      // And its retry learns the same outcome, nothing sent again.
      const again = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
      expect(again.json).toMatchObject({ success: true, transaction: (retried.json as { transaction: string }).transaction })
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 2)
      second.child.kill('SIGKILL')
    })

    /** Waits until the store holds the settled record of `transaction` (bounded), as another process reads it. */
    async function waitForSettledRecord(timeoutMs: number, matches: (transaction: string) => boolean): Promise<string> {
      const records = started!.openRecords()
      try {
        for (const until = Date.now() + timeoutMs; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 50))) {
          for (const value of await records.values()) {
            const record = decodeSettlementRecord(value)
            if (record?.state === 'settled' && matches(record.transaction)) return record.transaction
          }
        }
        throw new Error(`no settled record appeared in ${store.names.missing} within ${timeoutMs} ms`)
      } finally {
        records.close()
      }
    }

    it(`SIGKILL mid-settle and nobody ever retries: the restarted facilitator finishes the settlement from its journal and records it`, async () => {
      const signer = world.signers[0]!.address
      const { payer, requirements, paymentPayload, payToBefore, nonceBefore } = await newPayment('2100')

      const first = await startFacilitatorProcess()
      await world.node.testClient.setAutomine(false)
      const inFlight = postJson(`${first.url}/settle`, body(paymentPayload, requirements)).then(() => 'answered', () => 'lost')
      const record = await waitForBroadcastRecord(5_000)
      for (const until = Date.now() + 2_000; Date.now() < until && !(await world.node.publicClient.getTransaction({ hash: record.transaction as Hex }).catch(() => undefined)); ) {
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const exited = new Promise((resolve) => first.child.once('exit', resolve))
      first.child.kill('SIGKILL')
      await exited
      expect(await inFlight).toBe('lost')
      await world.node.testClient.mine({ blocks: 1 })
      await world.node.testClient.setAutomine(true)

      // Process 2 is never asked about the payment: its reconciler finds the journal and finishes it.
      const second = await startFacilitatorProcess({ RECONCILE_INTERVAL_MS: '200' })
      expect(await waitForSettledRecord(10_000, (transaction) => transaction === record.transaction)).toBe(record.transaction)
      await started!.afterRetry?.({ transaction: record.transaction, payer, amount: '2100' })
      expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 2100n)
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 1)
      // A late retry learns the same outcome; nothing is sent again.
      const retried = await postJson(`${second.url}/settle`, body(paymentPayload, requirements))
      expect(retried.json).toMatchObject({ success: true, transaction: record.transaction })
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 1)
      second.child.kill('SIGKILL')
    })

    it(`SIGKILL between the journal and the send, nobody retries: the restarted facilitator sends the journaled payment and records it`, async () => {
      const signer = world.signers[0]!.address
      const { payer, requirements, paymentPayload, payToBefore, nonceBefore } = await newPayment('1300')

      const record = await crashAfterJournal(paymentPayload, requirements)
      expect(await world.node.publicClient.getTransaction({ hash: record.transaction as Hex }).catch(() => undefined)).toBeUndefined()

      const second = await startFacilitatorProcess({ RECONCILE_INTERVAL_MS: '200' })
      expect(await waitForSettledRecord(10_000, (transaction) => transaction === record.transaction)).toBe(record.transaction)
      await started!.afterRetry?.({ transaction: record.transaction, payer, amount: '1300' })
      expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 1300n)
      expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1300n)
      expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonceBefore + 1)
      second.child.kill('SIGKILL')
    })
  })
}
