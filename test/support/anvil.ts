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
    stop: () => stopProcess(child),
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
