/**
 * The command's start-up checks against real adapters and stores: a Solana RPC of another
 * cluster is a mistake naming its variable; a store's errors are told apart (a mistake in
 * STORE_URL against an outage). The EVM and PostgreSQL paths run through the command itself
 * in cli-ops.test.ts.
 */
import { Writable } from 'node:stream'
import { generateKeyPairSigner } from '@solana/kit'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readCliConfig } from '../../src/cli/cli-config.js'
import { cliLoggerOptions, type CliLogger } from '../../src/cli/cli-logging.js'
import { classifyStoreError, runStartupChecks, StartupRefusal } from '../../src/cli/cli-startup-checks.js'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { createMemoryStore } from '../../src/stores/memory-store.js'
import { exactSvm } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { startSolanaTestRpc } from '../support/svm-fixtures.js'

let devnet: LiteSvmRpc
beforeAll(async () => {
  devnet = await startSolanaTestRpc()
})
afterAll(() => devnet?.close())

function logger() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  return { logger: pino(cliLoggerOptions('info'), stream) as unknown as CliLogger, lines }
}

async function checks(network: string) {
  const suffix = network.toUpperCase().replace(/[^A-Z0-9]/g, '_')
  const read = readCliConfig({ NETWORKS: network, [`RPC_URL_${suffix}`]: devnet.url, SOLANA_FEE_PAYER_KEYS: JSON.stringify(Array.from({ length: 64 }, (_, i) => i)) })
  if (!read.ok) throw new Error(read.problems.join('\n'))
  const store = createMemoryStore()
  const facilitator = createFacilitator({ schemes: [exactSvm({ networks: [{ network, rpcUrls: [devnet.url] }], feePayers: [await generateKeyPairSigner()] })], store })
  const { logger: log, lines } = logger()
  try {
    await runStartupChecks({ facilitator, store, networks: read.config.networks, logger: log, secrets: [] })
    return { refused: undefined, lines }
  } catch (error) {
    if (!(error instanceof StartupRefusal)) throw error
    return { refused: error.lines, lines }
  } finally {
    await facilitator.close()
  }
}

describe('start-up checks', () => {
  it('a Solana RPC of another cluster ends the start naming RPC_URL_<NETWORK>; the right one passes (an unfunded fee payer is left to the balance watch)', async () => {
    // The test RPC serves devnet's genesis hash.
    expect((await checks('solana')).refused).toEqual(['RPC_URL_SOLANA points at the wrong chain for solana: the RPC serves another chain (genesis hash differs)'])
    const devnetChecks = await checks('solana-devnet')
    expect(devnetChecks.refused).toBeUndefined()
    expect(devnetChecks.lines.filter((line) => line.event === 'startup_check_failed')).toEqual([])
  })

  it("tells a store's mistakes (named by STORE_URL, fatal) from its outages", () => {
    const fatal = (error: unknown) => {
      const finding = classifyStoreError(error, ['hunter2'])
      return finding && 'fatal' in finding ? finding.fatal : finding
    }
    expect(fatal({ code: '3D000', message: 'database "nosuchdb" does not exist' })).toMatch(/^STORE_URL names a PostgreSQL database that does not exist/)
    expect(fatal({ code: '28P01', message: 'password authentication failed for user "x"' })).toBe('STORE_URL: PostgreSQL refused the user or its password')
    expect(fatal({ code: '42501', message: 'permission denied for database x' })).toMatch(/^STORE_URL: the PostgreSQL user may not create or write/)
    expect(fatal(new Error('WRONGPASS invalid username-password pair or user is disabled.'))).toBe("STORE_URL: Redis refused the connection's credentials (WRONGPASS)")
    expect(fatal({ code: 'SQLITE_CANTOPEN', message: 'unable to open database file' })).toBe('STORE_URL names a SQLite file that cannot be opened or written (SQLITE_CANTOPEN)')
    expect(fatal({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' })).toEqual({ outage: { check: 'store', variable: 'STORE_URL', detail: 'ECONNREFUSED' } })
    expect(fatal(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toEqual({ outage: { check: 'store', variable: 'STORE_URL', detail: 'not connected' } })
    expect(fatal(new Error('server at redis://:hunter2@db closed the connection'))).toEqual({ outage: { check: 'store', variable: 'STORE_URL', detail: 'server at redis://:[redacted]@db closed the connection' } })
  })
})
