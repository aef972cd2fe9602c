/**
 * The command run as the README's "Run it as a service" says, exactly: the documented command
 * line, spawned in a project whose node_modules holds the package's built binary (bundled from
 * src/cli/cli.ts as the package build does) beside its peer packages. SIGTERM sent to what
 * that command started reaches the facilitator: a settle in flight finishes, the process exits
 * 0, and nothing is left listening. With STATS_PORT unset, the page is served at / of PORT.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { build } from 'esbuild'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'

const ROOT = resolve(import.meta.dirname, '../..')
let world: EvmFixture
let project: string
let command: string
const children: ChildProcess[] = []

/** The command line of the README's service section: the line that runs the binary. */
function documentedCommand(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Run it as a service'), readme.indexOf('## Paid endpoints'))
  const block = /```sh\n([^`]*?)```/g
  for (const [, body] of section.matchAll(block)) {
    const last = body!.trim().split('\n').at(-1)!.trim()
    if (/x402-facilitator$/.test(last) && !last.startsWith('#') && !last.startsWith('npm ')) return last
  }
  throw new Error('no command line in the README service section')
}

beforeAll(async () => {
  command = documentedCommand()
  project = mkdtempSync(join(tmpdir(), 'x402-service-'))
  const modules = join(project, 'node_modules')
  const pkg = join(modules, 'x402-facilitator')
  mkdirSync(join(pkg, 'dist'), { recursive: true })
  mkdirSync(join(modules, '.bin'))
  // The peers an operator installs beside the package (here every package of this checkout).
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry.startsWith('.') || entry === 'x402-facilitator') continue
    symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry))
  }
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> }
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'x402-facilitator', version: manifest.version, type: 'module', bin: manifest.bin }))
  await build({ entryPoints: [join(ROOT, 'src/cli/cli.ts')], outfile: join(pkg, 'dist/cli.js'), bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', logLevel: 'error' })
  chmodSync(join(pkg, 'dist/cli.js'), 0o755)
  // What npm does for a package's bin.
  symlinkSync('../x402-facilitator/dist/cli.js', join(modules, '.bin', 'x402-facilitator'))
  world = await startEvmFixture()
}, 60_000)
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  await world?.stop()
  if (project) rmSync(project, { recursive: true, force: true })
})

describe('the documented service command', () => {
  it('is the binary itself, so SIGTERM drains a settle in flight and exits 0; the page is at / of PORT when STATS_PORT is unset', async () => {
    expect(command).toBe('node_modules/.bin/x402-facilitator')
    const key = generatePrivateKey()
    await world.node.testClient.setBalance({ address: privateKeyToAccount(key).address, value: 10n ** 20n })
    const child = spawn(command, [], {
      cwd: project,
      env: {
        PATH: process.env.PATH ?? '',
        NETWORKS: 'eip155:84532',
        RPC_URL_EIP155_84532: world.node.rpcUrl,
        EVM_PRIVATE_KEYS: key,
        ASSETS_EIP155_84532: `${world.token.address}:${world.token.name}:${world.token.version}`,
        API_TOKENS: 'shop:0123456789abcdef0123',
        HOST: '127.0.0.1',
        PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    const lines: Record<string, unknown>[] = []
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    const port = await new Promise<number>((resolve, reject) => {
      let buffered = ''
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        buffered += chunk
        let at: number
        while ((at = buffered.indexOf('\n')) >= 0) {
          const line = JSON.parse(buffered.slice(0, at)) as Record<string, unknown>
          buffered = buffered.slice(at + 1)
          lines.push(line)
          if (line.event === 'listening') resolve(line.port as number)
        }
      })
      void exited.then((code) => reject(new Error(`exited ${code}: ${stderr}`)))
    })
    const url = `http://127.0.0.1:${port}`

    const page = await fetch(`${url}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await page.text()).toContain('/public/stats')

    const payer = await world.newPayer(10_000n)
    const requirements = world.requirementsV2({ amount: '1000' })
    const body = { x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: payer, requirements }), paymentRequirements: requirements }
    await world.node.testClient.setAutomine(false)
    let settling: Promise<Record<string, unknown>> | undefined
    try {
      settling = fetch(`${url}/settle`, { method: 'POST', headers: { authorization: 'Bearer 0123456789abcdef0123', 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
        (answer) => answer.json() as Promise<Record<string, unknown>>,
      )
      for (let i = 0; i < 200 && ((await world.node.publicClient.request({ method: 'txpool_status' as never })) as { pending: string }).pending === '0x0'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      // The signal goes to the process the documented command started: the facilitator itself, no npm in between.
      child.kill('SIGTERM')
      await new Promise((resolve) => setTimeout(resolve, 200))
      await world.node.testClient.mine({ blocks: 1 })
    } finally {
      await world.node.testClient.setAutomine(true)
    }
    expect(await settling!).toMatchObject({ success: true })
    expect(await exited).toBe(0)
    expect(lines.map((line) => line.event)).toEqual(expect.arrayContaining(['shutting_down', 'stopped']))
    expect(stderr).toBe('')
    // Nothing is left listening on the port.
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => (socket.destroy(), resolve(false)))
      socket.once('error', () => resolve(true))
    })
    expect(refused).toBe(true)
  })
})
