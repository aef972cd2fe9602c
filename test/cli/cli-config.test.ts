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
    expect(result.config).toMatchObject({ restrictAssets: true, schemes: ['exact'], port: 4020, host: '0.0.0.0', storeUrl: 'sqlite:./data/x402-facilitator.db', rateLimitVerify: 600, rateLimitSettle: 120, maxInFlightSettlesPerSigner: 256, trustProxyHops: 0, clientIpHeader: undefined })
    expect(result.config.adminTokens.size).toBe(0)
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

  const evm = { NETWORKS: 'base', RPC_URL_BASE: 'https://mainnet.base.org', EVM_PRIVATE_KEYS: key }
  const problemsOf = (env: Record<string, string>) => {
    const result = readCliConfig(env)
    return result.ok ? [] : result.problems
  }

  it('serves upto beside exact only with API_TOKENS, naming the variable', () => {
    expect(problemsOf({ ...evm, SCHEMES: 'exact,upto' })).toEqual([
      'SCHEMES includes upto, which needs API_TOKENS: an upto settle request sets the amount charged, so only your resource servers may call /settle',
    ])
    const served = readCliConfig({ ...evm, SCHEMES: 'upto, EXACT, upto', API_TOKENS: 'shop:0123456789abcdef0123' })
    expect(served.ok && served.config.schemes).toEqual(['exact', 'upto'])
    expect(problemsOf({ ...evm, SCHEMES: 'upto', API_TOKENS: 'shop:0123456789abcdef0123' })).toEqual(['SCHEMES must include exact (upto is served beside it), e.g. SCHEMES=exact,upto'])
    expect(problemsOf({ ...evm, SCHEMES: 'exact,streaming' })).toEqual(['SCHEMES names an unknown scheme "streaming" (use exact, upto)'])
    expect(problemsOf({ NETWORKS: 'solana', RPC_URL_SOLANA: 'https://api.mainnet-beta.solana.com', SOLANA_FEE_PAYER_KEYS: solanaKey, SCHEMES: 'exact,upto', API_TOKENS: 'shop:0123456789abcdef0123' })).toEqual([
      'SCHEMES includes upto, which only EVM networks serve: name one in NETWORKS',
    ])
  })

  it('reads ADMIN_TOKENS apart from API_TOKENS, and refuses a token in both without quoting it', () => {
    const result = readCliConfig({ ...evm, API_TOKENS: 'shop-a:aaaaaaaaaaaaaaaa1,shop-b:bbbbbbbbbbbbbbbb2', ADMIN_TOKENS: 'ops:cccccccccccccccc3' })
    expect(result.ok).toBe(true)
    if (!result.ok) return
    expect([...result.config.apiTokens.values()]).toEqual(['shop-a', 'shop-b'])
    expect([...result.config.adminTokens.entries()]).toEqual([['cccccccccccccccc3', 'ops']])
    const shared = problemsOf({ ...evm, API_TOKENS: 'shop:aaaaaaaaaaaaaaaa1', ADMIN_TOKENS: 'ops:short,ops2:aaaaaaaaaaaaaaaa1' })
    expect(shared).toEqual([
      'ADMIN_TOKENS (entry 1) must be name:token with a token of at least 16 characters',
      "ADMIN_TOKENS (entry 1) repeats a token of API_TOKENS: operators' tokens must differ from payment clients'",
    ])
    expect(shared.join('\n')).not.toContain('aaaaaaaaaaaaaaaa1')
  })

  it('reads TRUST_PROXY as a number of proxies (true: one) and CLIENT_IP_HEADER as a header, never both', () => {
    const hops = (value: string) => {
      const result = readCliConfig({ ...evm, TRUST_PROXY: value })
      return result.ok ? result.config.trustProxyHops : result.problems
    }
    expect([hops('false'), hops('0'), hops('true'), hops('YES'), hops('1'), hops('2'), hops('16')]).toEqual([0, 0, 1, 1, 1, 2, 16])
    for (const bad of ['17', '-1', 'maybe', '1.5']) expect(hops(bad)).toEqual(['TRUST_PROXY must be false, true (one proxy) or the number of proxies in front that append to X-Forwarded-For (1 to 16)'])
    const header = readCliConfig({ ...evm, CLIENT_IP_HEADER: 'CF-Connecting-IP' })
    expect(header.ok && header.config.clientIpHeader).toBe('cf-connecting-ip')
    expect(problemsOf({ ...evm, CLIENT_IP_HEADER: 'X-Forwarded-For' })).toEqual([
      'CLIENT_IP_HEADER cannot be x-forwarded-for (the client writes its left end): set TRUST_PROXY to the number of proxies in front instead',
    ])
    expect(problemsOf({ ...evm, CLIENT_IP_HEADER: 'x real ip' })).toEqual(['CLIENT_IP_HEADER must be a header name, e.g. cf-connecting-ip or x-real-ip'])
    expect(problemsOf({ ...evm, CLIENT_IP_HEADER: 'x-real-ip', TRUST_PROXY: '1' })).toEqual(['set TRUST_PROXY or CLIENT_IP_HEADER, not both'])
  })

  it('--help says who may use which route', () => {
    const text = helpText()
    expect(text).toMatch(/POST \/settle \(API_TOKENS\); GET \/ledger, GET \/metrics \(ADMIN_TOKENS/)
    expect(text).toMatch(/TRUST_PROXY \(default false\)\n.*right end.*true: 1/)
    expect(text).toMatch(/SCHEMES \(default exact\)\n.*upto.*needs API_TOKENS/)
  })
})
