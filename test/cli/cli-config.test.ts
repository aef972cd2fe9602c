import { describe, expect, it } from 'vitest'
import { ENV_VARIABLES, helpText, networkVariableSuffix, readCliConfig } from '../../src/cli/cli-config.js'

const key = `0x${'11'.repeat(32)}`
const solanaKey = JSON.stringify(Array.from({ length: 64 }, (_, i) => i))

describe('readCliConfig', () => {
  it('reads a complete configuration, with the public-service defaults', () => {
    const result = readCliConfig({
      NETWORKS: 'base, solana-devnet',
      RPC_URL_BASE: 'https://base.example/v2/KEY, https://mainnet.base.org',
      RPC_URL_SOLANA_DEVNET: 'https://api.devnet.solana.com',
      EVM_PRIVATE_KEYS: key,
      SOLANA_FEE_PAYER_KEYS: solanaKey,
      API_TOKENS: 'alice:0123456789abcdef0123',
    })
    expect(result.ok).toBe(true)
    if (!result.ok) return
    expect(result.config.networks).toEqual([
      { name: 'base', family: 'eip155', rpcUrls: ['https://base.example/v2/KEY', 'https://mainnet.base.org'], assets: [] },
      { name: 'solana-devnet', family: 'solana', rpcUrls: ['https://api.devnet.solana.com'], assets: [] },
    ])
    expect(result.config.solanaFeePayerKeys[0]).toHaveLength(64)
    expect(result.config).toMatchObject({ restrictAssets: true, port: 4020, host: '0.0.0.0', storeUrl: 'sqlite:./data/x402-facilitator.db', rateLimitVerify: 600, rateLimitSettle: 120, maxInFlightSettlesPerSigner: 256 })
    expect(result.config.apiTokens.get('0123456789abcdef0123')).toBe('alice')
  })

  it('names every missing or malformed variable on its own line, never quoting a secret', () => {
    const result = readCliConfig({
      NETWORKS: 'base,solana,atlantis',
      RPC_URL_BASE: 'ftp://secret-host/KEY123',
      EVM_PRIVATE_KEYS: `${'ab'.repeat(32)}`,
      SOLANA_FEE_PAYER_KEYS: '[1,2,3]',
      PORT: '99999',
      API_TOKENS: 'bob:short',
      LOG_LEVEL: 'loud',
      STORE_URL: 'mysql://root:hunter2@db',
      RESTRICT_ASSETS: 'maybe',
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.problems).toEqual([
      'RPC_URL_BASE (URL 1) is not an http:// or https:// URL',
      'RPC_URL_SOLANA is missing: the JSON-RPC URL of solana',
      expect.stringMatching(/^NETWORKS names an unknown network "atlantis"/),
      'EVM_PRIVATE_KEYS (key 1) is not 0x followed by 64 hex digits',
      'SOLANA_FEE_PAYER_KEYS (key 1) must be 64 bytes, as solana-keygen writes a keypair',
      'STORE_URL must be sqlite:<file>, a redis:// or rediss:// URL, a postgres:// URL, or memory',
      'API_TOKENS (entry 1) must be name:token with a token of at least 16 characters',
      expect.stringMatching(/^LOG_LEVEL must be one of/),
      'PORT must be a whole number from 0 to 65535',
      'RESTRICT_ASSETS must be true or false',
    ])
    const all = result.problems.join('\n')
    for (const secret of ['KEY123', 'secret-host', 'ab'.repeat(32), 'hunter2', 'short']) expect(all).not.toContain(secret)
  })

  it('asks for NETWORKS first, and for keys only for the families served', () => {
    expect(readCliConfig({})).toEqual({ ok: false, problems: ['NETWORKS is missing: name the networks to serve, e.g. NETWORKS=base,solana'] })
    const evmOnly = readCliConfig({ NETWORKS: 'eip155:8453', RPC_URL_EIP155_8453: 'http://127.0.0.1:8545' })
    expect(evmOnly).toEqual({ ok: false, problems: ['EVM_PRIVATE_KEYS is missing: at least one settlement key for the EVM networks'] })
    expect(networkVariableSuffix('base-sepolia')).toBe('BASE_SEPOLIA')
  })

  it('--help lists every variable', () => {
    const text = helpText()
    for (const variable of ENV_VARIABLES) expect(text).toContain(variable.name)
  })
})
