/**
 * The README's main command works: `scripts/demo.ts` (what `npm run demo`
 * runs) pays twice on local chains, exits 0, prints both transaction ids and
 * its ledger, and leaves none of its chains, servers or files behind.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { expect, it } from 'vitest'

/** Runs the demo to its end and collects what it printed. */
function runDemo(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', 'scripts/demo.ts'], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
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
