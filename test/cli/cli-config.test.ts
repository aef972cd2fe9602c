import { describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { assetTableEntries } from '../../src/cli/cli-assets.js'
import { ENV_VARIABLES, helpText, networkVariableSuffix, readCliConfig } from '../../src/cli/cli-config.js'
import { neededPackages, packageProblems } from '../../src/cli/cli-packages.js'

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
      { name: 'base', caip2: 'eip155:8453', family: 'eip155', rpcUrls: ['https://base.example/v2/KEY', 'https://mainnet.base.org'], assets: [] },
      { name: 'solana-devnet', caip2: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', family: 'solana', rpcUrls: ['https://api.devnet.solana.com'], assets: [] },
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

  it('--help says exactly which routes each kind of token closes, and where the page is', () => {
    const text = helpText()
    expect(text).toMatch(/GET \/supported, POST \/verify, POST \/settle +closed by API_TOKENS/)
    expect(text).toMatch(/GET \/ledger +ADMIN_TOKENS only/)
    expect(text).toMatch(/GET \/metrics +ADMIN_TOKENS only; public when neither API_TOKENS nor ADMIN_TOKENS is set/)
    expect(text).toMatch(/Statistics host \(STATS_PORT, or PORT when it is unset\)[^\n]*\n +GET \/ +\(the page for people\), GET \/public\/stats/)
    expect(text).toMatch(/API_TOKENS\n.*close GET \/supported, POST \/verify and POST \/settle/)
    expect(text).toContain('Usage: x402-facilitator [--help | --version]')
    expect(text).toContain('node_modules/.bin/x402-facilitator')
    expect(text).toMatch(/TRUST_PROXY \(default false\)\n.*right end.*true: 1/)
    expect(text).toMatch(/SCHEMES \(default exact\)\n.*upto.*needs API_TOKENS/)
  })

  it('reads ASSETS_<NETWORK> entries with decimals, a symbol and a price (or stablecoin), and the tables the pages use', () => {
    const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
    const mint = 'So11111111111111111111111111111111111111112'
    const result = readCliConfig({
      NETWORKS: 'base-sepolia,solana-devnet',
      RPC_URL_BASE_SEPOLIA: 'https://sepolia.base.org',
      RPC_URL_SOLANA_DEVNET: 'https://api.devnet.solana.com',
      EVM_PRIVATE_KEYS: key,
      SOLANA_FEE_PAYER_KEYS: solanaKey,
      ASSETS_BASE_SEPOLIA: `${token}:My Dollar:1:decimals=6:symbol=MYD:stablecoin, 0x036CbD53842c5426634e7929541eC2318f3dCF7e:USDC:2:usd=0.99, 0x1111111111111111111111111111111111111111:Plain:1`,
      ASSETS_SOLANA_DEVNET: `${mint}:decimals=9:symbol=wSOL:usd=150.5`,
    })
    expect(result.ok, JSON.stringify(result)).toBe(true)
    if (!result.ok) return
    expect(result.config.networks[0]!.assets).toEqual([
      { address: token, eip712: { name: 'My Dollar', version: '1' }, decimals: 6, symbol: 'MYD', usdPrice: 1 },
      { address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', eip712: { name: 'USDC', version: '2' }, usdPrice: 0.99 },
      { address: '0x1111111111111111111111111111111111111111', eip712: { name: 'Plain', version: '1' } },
    ])
    expect(result.config.networks[1]!.assets).toEqual([{ address: mint, decimals: 9, symbol: 'wSOL', usdPrice: 150.5 }])
    // What statistics, catalog and page price: the entries that say how; a built-in token keeps its decimals and symbol.
    const table = assetTableEntries(result.config.networks)
    expect(table).toEqual([
      { network: 'eip155:84532', address: token, decimals: 6, symbol: 'MYD', usdPrice: 1, eip712: { name: 'My Dollar', version: '1' } },
      { network: 'eip155:84532', address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', decimals: 6, symbol: 'USDC', usdPrice: 0.99, eip712: { name: 'USDC', version: '2' } },
      { network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', address: mint, decimals: 9, symbol: 'wSOL', usdPrice: 150.5 },
    ])
  })

  it('refuses a malformed ASSETS_<NETWORK> entry naming the variable and the entry, never its text', () => {
    const token = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
    const assets = (value: string) => problemsOf({ ...evm, ASSETS_BASE: value })
    expect(assets(`${token}:T:1:decimals=6`)).toEqual(['ASSETS_BASE (entry 1) needs decimals=<n> and symbol=<text> together to write amounts in token units, e.g. :decimals=6:symbol=TKN'])
    expect(assets(`${token}:T:1:stablecoin`)).toEqual(['ASSETS_BASE (entry 1) needs decimals=<n> and symbol=<text> together to write amounts in token units and price them, e.g. :decimals=6:symbol=TKN'])
    expect(assets(`${token}:T:1:decimals=6:symbol=T:usd=1:stablecoin`)).toEqual(['ASSETS_BASE (entry 1): give usd=<price> or stablecoin, not both'])
    expect(assets(`${token}:T:1, ${token}:T:1:decimals=99:symbol=T`)).toEqual(['ASSETS_BASE (entry 2): decimals must be a whole number from 0 to 36, e.g. decimals=6'])
    expect(assets(`${token}:T:1:decimals=6:symbol=T:usd=-1`)).toEqual(['ASSETS_BASE (entry 1): usd must be the price of one whole token in dollars, above 0, e.g. usd=1 or usd=0.25'])
    expect(assets(`${token}:T:1:decimals=6:symbol=<b>`)).toEqual(['ASSETS_BASE (entry 1): symbol must be 1 to 16 letters, digits or . $ _ -, e.g. symbol=USDC'])
    expect(assets(`${token}:T:1:price=2`)).toEqual(['ASSETS_BASE (entry 1) has an unknown option "price" (use decimals=, symbol=, usd= or stablecoin)'])
    expect(assets(`${token}:T:1:symbol=A:symbol=B`)).toEqual(['ASSETS_BASE (entry 1) gives symbol twice'])
    expect(assets(`${token}:decimals=6:symbol=T`)).toEqual([
      'ASSETS_BASE (entry 1) must be <address>:<EIP-712 name>:<EIP-712 version>[:decimals=<n>][:symbol=<text>][:usd=<price>|:stablecoin]',
    ])
    expect(problemsOf({ NETWORKS: 'solana', RPC_URL_SOLANA: 'https://api.mainnet-beta.solana.com', SOLANA_FEE_PAYER_KEYS: solanaKey, ASSETS_SOLANA: 'not-a-mint:decimals=6' })).toEqual([
      'ASSETS_SOLANA (entry 1) must be <mint>[:decimals=<n>][:symbol=<text>][:usd=<price>|:stablecoin]',
    ])
  })
})

describe('packages and the README', () => {
  it("every optional package a configuration loads is named at once, and the README's service install line installs the defaults", () => {
    const config = (env: Record<string, string>) => {
      const result = readCliConfig({ EVM_PRIVATE_KEYS: key, SOLANA_FEE_PAYER_KEYS: solanaKey, ...env })
      if (!result.ok) throw new Error(result.problems.join('\n'))
      return result.config
    }
    const names = (env: Record<string, string>) => neededPackages(config(env)).map((pkg) => pkg.name)
    expect(names({ NETWORKS: 'base', RPC_URL_BASE: 'https://mainnet.base.org' })).toEqual(['pino', 'prom-client', 'viem', 'better-sqlite3'])
    expect(names({ NETWORKS: 'solana', RPC_URL_SOLANA: 'https://x.example', STORE_URL: 'postgres://db/x' })).toEqual([
      'pino', 'prom-client', '@solana/kit', '@solana-program/token', '@solana-program/compute-budget', '@solana-program/system', 'pg',
    ])
    expect(names({ NETWORKS: 'base', RPC_URL_BASE: 'https://x.example', STORE_URL: 'redis://r' })).toContain('ioredis')

    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Run it as a service'), readme.indexOf('## Paid endpoints'))
    const install = /^npm install x402-facilitator (.+)$/m.exec(section)?.[1]?.split(/\s+/)
    // The README's own example: NETWORKS=base, the default store.
    expect(install?.sort()).toEqual(names({ NETWORKS: 'base', RPC_URL_BASE: 'https://mainnet.base.org' }).sort())
    const lines = packageProblems({ missing: neededPackages(config({ NETWORKS: 'base', RPC_URL_BASE: 'https://x.example' })).slice(0, 4), broken: [] })
    expect(lines).toEqual([
      'this configuration needs packages that are not installed: pino (logging), prom-client (metrics), viem (EVM networks), better-sqlite3 (STORE_URL=sqlite:…, the default store)',
      'install them all with: npm install pino prom-client viem better-sqlite3',
    ])
  })
})
