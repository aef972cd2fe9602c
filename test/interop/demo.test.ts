/**
 * The README's main command works: `scripts/demo.ts` (what `npm run demo`
 * runs) pays twice on local chains, exits 0, prints both transaction ids and
 * the statistics page's address, and leaves none of its chains or servers
 * running; with `--keep` it stays up, page and all, until Ctrl-C.
 * its ledger, and leaves none of its chains, servers or files behind.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { expect, it } from 'vitest'

/**
 * Runs the demo to its end and collects what it printed. `whenPrinted` sees the
 * output as it grows, with a way to press Ctrl-C (SIGINT to the demo's process
 * group, as a terminal does).
 */
function runDemo(args: string[] = [], whenPrinted?: (output: string, ctrlC: () => void) => void): Promise<{ code: number | null; output: string }> {
  // Under Ctrl-C, npx itself dies of the signal whatever the demo answers: run the demo's own process to see its exit code.
  const [command, commandArgs] = whenPrinted ? [process.execPath, ['--import', 'tsx', 'scripts/demo.ts', ...args]] : ['npx', ['tsx', 'scripts/demo.ts', ...args]]
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'], detached: whenPrinted !== undefined })
    const ctrlC = () => process.kill(-child.pid!, 'SIGINT')
    let output = ''
    const read = (chunk: Buffer) => {
      output += chunk.toString()
      whenPrinted?.(output, ctrlC)
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}

it('npm run demo: two payments land, both transaction ids are printed, everything is stopped', async () => {
  const started = performance.now()
  const { code, output } = await runDemo()
  console.info(`[measure] demo end to end: ${(performance.now() - started).toFixed(0)} ms`)
  expect(code, output).toBe(0)

  // The 402 challenge offers both networks, then each paid request verifies, settles and moves 0.01 of the token.
  expect(output).toContain('402 Payment Required, x402Version 2')
  expect(output.match(/verify\s+isValid true/g)).toHaveLength(2)
  expect(output.match(/settle\s+success true/g)).toHaveLength(2)
  expect(output.match(/payTo\s+0\.00 USDC \(0\) → 0\.01 USDC \(10000\)/g)).toHaveLength(2)

  // The ids the client read in PAYMENT-RESPONSE are the ones in the closing summary.
  const evmTx = /EVM tx\s+(0x[0-9a-f]{64})/.exec(output)?.[1]
  const solanaTx = /Solana tx\s+([1-9A-HJ-NP-Za-km-z]{64,88})/.exec(output)?.[1]
  expect(evmTx).toBeDefined()
  expect(solanaTx).toBeDefined()
  const paid = [...output.matchAll(/transaction\s+(\S+)/g)].map((m) => m[1])
  expect(paid).toEqual([evmTx, solanaTx])

  // Statistics and catalog saw both payments.
  expect(output).toMatch(/settlements\s+2 \(succeeded 2/)
  expect(output).toMatch(/calls 2, value \$0\.02/)
  // The page for people: its address is printed, and it was served.
  const pageUrl = /statistics page\s+(http:\/\/127\.0\.0\.1:\d+\/)/.exec(output)?.[1]
  expect(pageUrl).toBeDefined()
  expect(output).toMatch(/GET \/ on the statistics host: the page for people\s+\d/)
  await expect(fetch(pageUrl!, { signal: AbortSignal.timeout(2_000) }), pageUrl).rejects.toThrow()

  // The private ledger refused the request without the operator's token and listed both settlements with it.
  expect(output).toContain('401 (the ledger is private)')
  const rows = [...output.matchAll(/ledger\s+\S+\s+settled\s+(\S+)\s+0\.01 USDC \(10000\)\s+(\S+)/g)].map((m) => [m[1], m[2]])
  expect(rows).toEqual([
    ['solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', `${solanaTx!.slice(0, 8)}…${solanaTx!.slice(-6)}`],
    ['eip155:84532', `${evmTx!.slice(0, 8)}…${evmTx!.slice(-6)}`],
  ])
  // By default the SQLite file lives in a temporary data directory, gone once the demo exits.
  const file = /file\s+(\S+)\s+\(removed at exit\)/.exec(output)?.[1]
  expect(file).toMatch(/facilitator\.sqlite$/)
  expect(existsSync(file!)).toBe(false)

  // Every loopback endpoint the demo started is closed once it exits.
  const urls = [...new Set([...output.matchAll(/(?:rpc|url)\s+(http:\/\/127\.0\.0\.1:\d+)/g)].map((m) => m[1]!))]
  expect(urls.length).toBe(4) // anvil, litesvm rpc, facilitator, paid API
  for (const url of urls) await expect(fetch(url, { signal: AbortSignal.timeout(2_000) }), url).rejects.toThrow()
}, 150_000)

it('npm run demo -- --keep: stays up with the page served until Ctrl-C, then stops everything and exits 0', async () => {
  let page: Promise<{ status: number; type: string | null; body: string }> | undefined
  const { code, output } = await runDemo(['--keep'], (printed, ctrlC) => {
    const url = /open (http:\/\/127\.0\.0\.1:\d+\/) in a browser/.exec(printed)?.[1]
    if (!url || page) return
    // Past the payments, still up: a person opening the page gets it; then Ctrl-C.
    page = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 500))
      const response = await fetch(url)
      const result = { status: response.status, type: response.headers.get('content-type'), body: await response.text() }
      ctrlC()
      return result
    })()
  })
  expect(code, output).toBe(0)
  expect(page, output).toBeDefined()
  const served = await page!
  expect(served.status).toBe(200)
  expect(served.type).toBe('text/html; charset=utf-8')
  expect(served.body).toContain('<h1>x402-facilitator demo: statistics</h1>')
  expect(output).toContain('stopping the chains and servers')
  const urls = [...new Set([...output.matchAll(/(?:rpc|url|page)\s+(http:\/\/127\.0\.0\.1:\d+)/g)].map((m) => m[1]!))]
  expect(urls.length).toBe(5) // anvil, litesvm rpc, facilitator, statistics host, paid API
  for (const url of urls) await expect(fetch(url, { signal: AbortSignal.timeout(2_000) }), url).rejects.toThrow()
}, 150_000)
