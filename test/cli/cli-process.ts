/**
 * The x402-facilitator command as a child process for the CLI tests: started from environment
 * variables only, its JSON log lines collected, its refusals to start read from stderr.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import type { EvmFixture } from '../support/evm-fixture.js'

/** A running command. */
export interface RunningCli {
  child: ChildProcess
  url: string
  statsUrl: string
  logs: () => Record<string, unknown>[]
  /** Lines of stdout that are not JSON objects (there should be none). */
  notJson: () => string[]
  stderr: () => string
  exited: Promise<number | null>
}

const children: ChildProcess[] = []

/**
 * The environment of a command serving the fixture's chain (`eip155:84532`) with its test token listed,
 * on loopback, an ephemeral port and the memory store, logging at info; `extra` adds or overrides.
 */
export function evmCliEnv(world: EvmFixture, evmKey: `0x${string}`, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NETWORKS: 'eip155:84532',
    RPC_URL_EIP155_84532: world.node.rpcUrl,
    EVM_PRIVATE_KEYS: evmKey,
    ASSETS_EIP155_84532: `${world.token.address}:${world.token.name}:${world.token.version}`,
    HOST: '127.0.0.1',
    PORT: '0',
    STORE_URL: 'memory',
    LOG_LEVEL: 'info',
    ...extra,
  }
}

/** Kills every command a test file started (its afterAll). */
export function killCliProcesses(): void {
  for (const child of children) child.kill('SIGKILL')
}

/** How to run the command: node's own flags (a module hook for fault injection), or another command line. */
export interface CliCommand {
  /** Flags for node after `--import tsx`, before the script (a module hook registered there runs before tsx's). @default [] */
  nodeArgs?: readonly string[]
  /** Another executable and its arguments instead of `node --import tsx src/cli/cli.ts` (a built bin). */
  command?: { file: string; args?: readonly string[]; cwd?: string }
}

function spawnCli(env: Record<string, string>, args: readonly string[], how: CliCommand): ChildProcess {
  const child = how.command
    ? spawn(how.command.file, [...(how.command.args ?? []), ...args], { env, cwd: how.command.cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, ['--import', 'tsx', ...(how.nodeArgs ?? []), 'src/cli/cli.ts', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  return child
}

/** Starts the command and waits for its `listening` log line. */
export async function startCli(env: Record<string, string>, how: CliCommand = {}): Promise<RunningCli> {
  const child = spawnCli(env, [], how)
  children.push(child)
  const lines: Record<string, unknown>[] = []
  const notJson: string[] = []
  let stdout = ''
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      let at: number
      while ((at = stdout.indexOf('\n')) >= 0) {
        const line = stdout.slice(0, at)
        stdout = stdout.slice(at + 1)
        let entry: unknown
        try {
          entry = JSON.parse(line)
        } catch {
          entry = undefined
        }
        if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
          notJson.push(line)
          continue
        }
        lines.push(entry as Record<string, unknown>)
        if ((entry as Record<string, unknown>).event === 'listening') resolve(entry as Record<string, unknown>)
      }
    })
    void exited.then((code) => reject(new Error(`exited ${code}: ${stderr}`)))
  })
  const ready = await listening
  return { child, url: `http://127.0.0.1:${ready.port}`, statsUrl: `http://127.0.0.1:${ready.statsPort}`, logs: () => lines, notJson: () => notJson, stderr: () => stderr, exited }
}

/** Runs the command until it exits on its own (a refusal to start): its exit code and stderr. */
export async function refusedCli(env: Record<string, string>, args: readonly string[] = [], how: CliCommand = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawnCli(env, args, how)
  let stderr = ''
  let stdout = ''
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stderr, stdout }
}
