/**
 * A real local EVM node for tests, benchmarks and demos: anvil from the npm
 * package `@foundry-rs/anvil`, on a free loopback port, stopped by its pid.
 *
 * @example
 * const node = await startAnvil({ chainId: 84532 })
 * try { await node.publicClient.getBlockNumber() } finally { await node.stop() }
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  http,
  type Chain,
  type LocalAccount,
  type PublicClient,
  type TestClient,
} from 'viem'
import { mnemonicToAccount } from 'viem/accounts'

/** anvil's well-known development mnemonic (public test keys, funded with 10 000 ETH each). */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk'

export interface StartAnvilOptions {
  /** @default 31337 */
  chainId?: number
  /** Funded development accounts. @default 10 */
  accounts?: number
  /** Extra command-line flags (e.g. `['--no-mining']`). */
  args?: readonly string[]
  /** How long to wait for the node to listen. @default 15_000 */
  startTimeoutMs?: number
  /** Re-inserts transactions anvil's automine leaves queued for good (see {@link watchStuckQueue}); 0 turns it off. @default 500 */
  stuckQueueCheckMs?: number
}

/** A running anvil node and clients bound to it. */
export interface AnvilNode {
  readonly rpcUrl: string
  readonly port: number
  /** The anvil process (benchmarks read its CPU time). */
  readonly pid: number | undefined
  readonly chainId: number
  readonly chain: Chain
  /** Funded development accounts (anvil's mnemonic). Index 0 deploys the test contracts. */
  readonly accounts: readonly LocalAccount[]
  readonly publicClient: PublicClient
  /** anvil_* / evm_* methods: setCode, mine, setAutomine, ... */
  readonly testClient: TestClient<'anvil'>
  /** A wallet client for one of the accounts (default: the deployer). */
  walletClient(account?: LocalAccount): ReturnType<typeof createWalletClient>
  /** Transactions re-inserted so far because anvil left them queued at the account's nonce. */
  readonly unstuck: () => number
  /** Stops the node (by pid) and waits for it to exit. */
  stop(): Promise<void>
}

/**
 * The anvil binary installed by `@foundry-rs/anvil`: the platform package's
 * executable itself when present, so that the pid is anvil's: the npm bin is a
 * Node wrapper that hides anvil's CPU time and cannot pass a SIGKILL on (anvil
 * then outlives it). The wrapper serves when the executable is not found.
 */
export function anvilBinary(): string {
  const scope = join(process.cwd(), 'node_modules', '@foundry-rs')
  const native = existsSync(scope)
    ? readdirSync(scope)
        .filter((name) => name.startsWith(`anvil-${process.platform}-`))
        .map((name) => join(scope, name, 'bin', 'anvil'))
        .find((path) => existsSync(path))
    : undefined
  if (native) return native
  const bin = join(process.cwd(), 'node_modules', '.bin', 'anvil')
  if (!existsSync(bin)) throw new Error(`anvil is not installed at ${bin} (npm install @foundry-rs/anvil)`)
  return bin
}

/** Starts anvil on a free loopback port and resolves once it listens. */
export async function startAnvil(options: StartAnvilOptions = {}): Promise<AnvilNode> {
  const chainId = options.chainId ?? 31337
  const count = options.accounts ?? 10
  const child = spawn(
    anvilBinary(),
    ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(chainId), '--accounts', String(count), ...(options.args ?? [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const port = await listeningPort(child, options.startTimeoutMs ?? 15_000)
  const rpcUrl = `http://127.0.0.1:${port}`
  const watchdog = watchStuckQueue(rpcUrl, options.stuckQueueCheckMs ?? 500)
  const chain = defineChain({
    id: chainId,
    name: `anvil-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  })
  const transport = http(rpcUrl)
  const accounts = Array.from({ length: count }, (_, index) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index }))
  const [deployer] = accounts
  if (!deployer) throw new Error('anvil needs at least one account')
  return {
    rpcUrl,
    port,
    pid: child.pid,
    chainId,
    chain,
    accounts,
    publicClient: createPublicClient({ chain, transport, pollingInterval: 50 }),
    testClient: createTestClient({ chain, transport, mode: 'anvil' }),
    walletClient: (account = deployer) => createWalletClient({ chain, transport, account }),
    unstuck: () => watchdog.unstuck,
    stop: () => {
      watchdog.stop()
      return stopProcess(child)
    },
  }
}

/**
 * anvil's automine now and then leaves a transaction queued for good although
 * its nonce is its sender's next one, and every later transaction of that
 * sender queued behind it (foundry-rs/foundry#10122; seen here with one key's
 * sends in nonce order, each after the previous answer, under CPU load). A
 * node such as geth promotes such a transaction at the next block; anvil never
 * does, and neither resending the bytes ("already imported") nor mining helps.
 * This looks every `intervalMs` and re-inserts such a sender's queue: taken out
 * of the pool, then the same signed bytes sent again in nonce order, so hashes
 * and effects are the ones the facilitator sent. Transactions held on purpose (automine off)
 * are pending, not queued, and a queued one above a real gap is left alone.
 */
function watchStuckQueue(rpcUrl: string, intervalMs: number): { readonly unstuck: number; stop(): void } {
  let unstuck = 0
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const call = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
    const body = (await response.json()) as { result?: T; error?: { message: string } }
    if (body.error) throw new Error(body.error.message)
    return body.result as T
  }
  type Pool = Record<string, Record<string, { hash: string }>>
  const check = async () => {
    const status = await call<{ queued: string }>('txpool_status')
    if (Number(status.queued) === 0) return
    const content = await call<{ pending: Pool; queued: Pool }>('txpool_content')
    for (const [sender, byNonce] of Object.entries(content.queued)) {
      // A sender with a pending transaction is still moving: its queue may just be behind it.
      if (Object.keys(content.pending[sender] ?? {}).length > 0) continue
      const lowest = Math.min(...Object.keys(byNonce).map(Number))
      const next = Number(await call<string>('eth_getTransactionCount', [sender, 'latest']))
      if (lowest !== next) continue
      // anvil_dropTransaction leaves a queued transaction where it is: the sender's whole queue is taken out
      // and its same signed bytes sent again in nonce order.
      const queue = Object.entries(byNonce).sort(([a], [b]) => Number(a) - Number(b))
      const raws = await Promise.all(queue.map(([, tx]) => call<string>('eth_getRawTransactionByHash', [tx.hash])))
      await call('anvil_removePoolTransactions', [sender])
      for (const raw of raws) await call('eth_sendRawTransaction', [raw])
      unstuck += queue.length
      console.warn(`[anvil] re-inserted ${queue.length} transactions of ${sender} from nonce ${lowest}, left queued at its nonce by anvil's automine`)
    }
  }
  const loop = () => {
    timer = setTimeout(() => {
      check()
        // A node being stopped fails its last check: nothing to report then.
        .catch((error: unknown) => stopped || console.warn(`[anvil] stuck-queue check failed: ${String(error).slice(0, 300)}`))
        .finally(() => stopped || loop())
    }, intervalMs)
    timer.unref()
  }
  if (intervalMs > 0) loop()
  return {
    get unstuck() {
      return unstuck
    },
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}

function listeningPort(child: ChildProcess, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => fail(new Error(`anvil did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(output)
      if (match?.[1]) {
        cleanup()
        // Keep draining the pipes so a chatty node never blocks on a full buffer.
        child.stdout?.resume()
        child.stderr?.resume()
        resolve(Number(match[1]))
      }
    }
    const onExit = (code: number | null) => fail(new Error(`anvil exited with code ${code}:\n${output}`))
    function cleanup() {
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      child.stderr?.off('data', onData)
      child.off('exit', onExit)
    }
    function fail(error: Error) {
      cleanup()
      if (child.pid !== undefined && child.exitCode === null) child.kill('SIGKILL')
      reject(error)
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', onExit)
  })
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 3_000)
    child.once('exit', () => {
      clearTimeout(force)
      resolve()
    })
    child.kill('SIGTERM')
  })
}
