import { describeNetwork } from '../networks/networks.js'
import { ASSETS_SYNTAX, readAssetEntries, type CliAsset } from './cli-assets.js'

/** One variable the command reads, as `--help` lists it. */
export interface EnvVariable {
  readonly name: string
  readonly description: string
  readonly example?: string
  readonly default?: string
}

/**
 * Every variable `x402-facilitator` reads. `<NETWORK>` is a network name in
 * capitals with other characters as `_`: `BASE`, `BASE_SEPOLIA`, `EIP155_8453`,
 * `SOLANA_DEVNET`.
 */
export const ENV_VARIABLES: readonly EnvVariable[] = [
  { name: 'NETWORKS', description: 'networks to serve, comma-separated: v1 names or CAIP-2 ids', example: 'base,solana' },
  { name: 'RPC_URL_<NETWORK>', description: 'JSON-RPC URL(s) of a network, comma-separated (tried in order); may carry an API key, never logged', example: 'RPC_URL_BASE=https://base-mainnet.example/v2/KEY' },
  { name: 'EVM_PRIVATE_KEYS', description: 'settlement keys of the EVM networks, comma-separated 0x-prefixed 32-byte hex (keep only gas money on them)' },
  { name: 'SOLANA_FEE_PAYER_KEYS', description: 'fee payers of the Solana networks: a 64-byte keypair as solana-keygen writes it (JSON array), a JSON array of such, or comma-separated base58 keypairs' },
  {
    name: 'ASSETS_<NETWORK>',
    description: `tokens accepted on a network besides its built-in USDC, comma-separated; EVM: ${ASSETS_SYNTAX.evm}; Solana: ${ASSETS_SYNTAX.solana}. decimals and symbol (together) make the statistics, catalog and page write amounts in token units; usd=<price of one whole token> or stablecoin (usd=1) prices them in dollars`,
    example: 'ASSETS_BASE=0x…:My Token:1:decimals=6:symbol=MTK:stablecoin',
  },
  { name: 'RESTRICT_ASSETS', description: 'accept only the built-in and listed tokens (false: any token, at your gas)', default: 'true' },
  { name: 'SCHEMES', description: 'schemes to serve, comma-separated: exact (always; EIP-3009 and Permit2 on EVM, SPL transfers on Solana), and upto on the EVM networks (Permit2: the client signs a maximum and the settle request charges the usage, so it needs API_TOKENS)', default: 'exact', example: 'SCHEMES=exact,upto' },
  { name: 'HOST', description: 'address to listen on', default: '0.0.0.0' },
  { name: 'PORT', description: 'port of /supported, /verify, /settle, /healthz, /readyz, /metrics, /ledger', default: '4020' },
  { name: 'STATS_PORT', description: 'port of the statistics host: the page for people at /, and its JSON (/public/stats, /public/resources, /discovery/resources); unset: all of them on PORT' },
  { name: 'STORE_URL', description: 'sqlite:<file> (one process, kept across restarts), redis://… or postgres://… (several instances), or memory (forgets on restart)', default: 'sqlite:./data/x402-facilitator.db' },
  { name: 'API_TOKENS', description: 'bearer tokens of payment clients (resource servers), comma-separated, each name:token of at least 16 characters (the name keys the rate limits). Set, they close GET /supported, POST /verify and POST /settle (401 without one), and /metrics to all but ADMIN_TOKENS; unset, those three are open to anyone (logged as a warning at start)' },
  { name: 'ADMIN_TOKENS', description: 'bearer tokens of operators, comma-separated name:token, each different from every API_TOKENS token. They alone open GET /ledger and GET /metrics (a payment client\'s token never does); unset: /ledger answers 401 to everyone, and /metrics too when API_TOKENS is set (with no token at all /metrics is public)' },
  { name: 'RATE_LIMIT_VERIFY', description: 'verifies a client may ask per minute (0: no limit)', default: '600' },
  { name: 'RATE_LIMIT_SETTLE', description: 'settles a client may ask per minute (0: no limit)', default: '120' },
  { name: 'TRUST_PROXY', description: 'behind reverse proxies that append to X-Forwarded-For, how many: the client address is that many entries from its right end (true: 1), never its client-written left end; false: the socket\'s address', default: 'false', example: 'TRUST_PROXY=1' },
  { name: 'CLIENT_IP_HEADER', description: 'instead of TRUST_PROXY, a header your proxy overwrites with the client address', example: 'CLIENT_IP_HEADER=cf-connecting-ip' },
  { name: 'MAX_IN_FLIGHT_SETTLES_PER_SIGNER', description: 'settlements one signer may have in flight; past it 503 signer_busy', default: '256' },
  { name: 'BALANCE_INTERVAL_MS', description: 'how often signers\' gas money is read (a metric, and a warning when below the adapters\' thresholds)', default: '60000' },
  { name: 'SHUTDOWN_TIMEOUT_MS', description: 'on SIGTERM, how long in-flight requests may finish before the process exits', default: '30000' },
  { name: 'LOG_LEVEL', description: 'pino level: fatal, error, warn, info, debug, trace, silent', default: 'info' },
]

/** A network the command serves, with its URLs and accepted tokens. */
export interface CliNetwork {
  /** As written in NETWORKS. */
  readonly name: string
  /** Its CAIP-2 id. */
  readonly caip2: string
  readonly family: 'eip155' | 'solana'
  readonly rpcUrls: readonly string[]
  readonly assets: readonly CliAsset[]
}

/** The command's configuration, every variable checked. */
export interface CliConfig {
  readonly networks: readonly CliNetwork[]
  readonly evmPrivateKeys: readonly `0x${string}`[]
  /** 64-byte Solana keypairs. */
  readonly solanaFeePayerKeys: readonly Uint8Array[]
  readonly restrictAssets: boolean
  /** Schemes served (`exact` always first when present). */
  readonly schemes: readonly CliScheme[]
  readonly host: string
  readonly port: number
  readonly statsPort: number | undefined
  readonly storeUrl: string
  /** Payment clients' tokens, token → name. */
  readonly apiTokens: ReadonlyMap<string, string>
  /** Operators' tokens (private routes), token → name. */
  readonly adminTokens: ReadonlyMap<string, string>
  readonly rateLimitVerify: number
  readonly rateLimitSettle: number
  /** Proxies in front that append to X-Forwarded-For; 0: none trusted. */
  readonly trustProxyHops: number
  /** A header the proxy overwrites with the client's address. */
  readonly clientIpHeader: string | undefined
  readonly maxInFlightSettlesPerSigner: number
  readonly shutdownTimeoutMs: number
  readonly balanceIntervalMs: number
  readonly logLevel: string
}

/** A scheme the command can serve. */
export type CliScheme = 'exact' | 'upto'

const SCHEMES: readonly CliScheme[] = ['exact', 'upto']

/** The outcome of reading the environment: the configuration, or one line per problem. */
export type CliConfigResult = { ok: true; config: CliConfig } | { ok: false; problems: string[] }

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])

/** `<NETWORK>` of a variable name: `base-sepolia` → `BASE_SEPOLIA`, `eip155:8453` → `EIP155_8453`. */
export function networkVariableSuffix(network: string): string {
  return network.toUpperCase().replace(/[^A-Z0-9]/g, '_')
}

/**
 * Reads and checks the environment. Problems name the variable and what is wrong
 * with it, and never quote a key, a token or a URL (they may carry secrets).
 *
 * @example
 * const result = readCliConfig(process.env)
 * if (!result.ok) for (const problem of result.problems) console.error(problem)
 */
export function readCliConfig(env: Readonly<Record<string, string | undefined>>): CliConfigResult {
  const problems: string[] = []
  const text = (name: string) => {
    const value = env[name]?.trim()
    return value === undefined || value === '' ? undefined : value
  }
  const list = (name: string) => (text(name) ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '')
  const integer = (name: string, fallback: number, min: number, max: number) => {
    const value = text(name)
    if (value === undefined) return fallback
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}`)
      return fallback
    }
    return Number(value)
  }
  const boolean = (name: string, fallback: boolean) => {
    const value = text(name)?.toLowerCase()
    if (value === undefined) return fallback
    if (['true', '1', 'yes'].includes(value)) return true
    if (['false', '0', 'no'].includes(value)) return false
    problems.push(`${name} must be true or false`)
    return fallback
  }

  const networks: CliNetwork[] = []
  const names = list('NETWORKS')
  if (names.length === 0) problems.push('NETWORKS is missing: name the networks to serve, e.g. NETWORKS=base,solana')
  for (const name of names) {
    const info = describeNetwork(name)
    if (!info) {
      problems.push(`NETWORKS names an unknown network "${name.slice(0, 40)}" (use a v1 name such as base or solana-devnet, or a CAIP-2 id such as eip155:8453)`)
      continue
    }
    const suffix = networkVariableSuffix(name)
    const urls = list(`RPC_URL_${suffix}`)
    if (urls.length === 0) problems.push(`RPC_URL_${suffix} is missing: the JSON-RPC URL of ${name}`)
    for (const [index, url] of urls.entries()) {
      let protocol = ''
      try {
        protocol = new URL(url).protocol
      } catch {
        protocol = ''
      }
      if (protocol !== 'http:' && protocol !== 'https:') problems.push(`RPC_URL_${suffix} (URL ${index + 1}) is not an http:// or https:// URL`)
    }
    const assets = readAssetEntries(`ASSETS_${suffix}`, list(`ASSETS_${suffix}`), info, problems)
    networks.push({ name, caip2: info.caip2, family: info.family, rpcUrls: urls, assets })
  }

  const evmPrivateKeys = list('EVM_PRIVATE_KEYS')
  const evm = networks.some((network) => network.family === 'eip155')
  if (evm && evmPrivateKeys.length === 0) problems.push('EVM_PRIVATE_KEYS is missing: at least one settlement key for the EVM networks')
  evmPrivateKeys.forEach((key, index) => {
    if (!/^0x[0-9a-fA-F]{64}$/.test(key)) problems.push(`EVM_PRIVATE_KEYS (key ${index + 1}) is not 0x followed by 64 hex digits`)
  })

  const solana = networks.some((network) => network.family === 'solana')
  const solanaKeys = readSolanaKeys(text('SOLANA_FEE_PAYER_KEYS'), problems)
  if (solana && solanaKeys.length === 0 && !problems.some((p) => p.startsWith('SOLANA_FEE_PAYER_KEYS'))) {
    problems.push('SOLANA_FEE_PAYER_KEYS is missing: at least one fee payer keypair for the Solana networks')
  }

  const storeUrl = text('STORE_URL') ?? 'sqlite:./data/x402-facilitator.db'
  if (storeUrl !== 'memory' && !/^(?:rediss?|postgres(?:ql)?):\/\/./.test(storeUrl) && !/^sqlite:./.test(storeUrl)) {
    problems.push('STORE_URL must be sqlite:<file>, a redis:// or rediss:// URL, a postgres:// URL, or memory')
  }

  const tokens = (variable: string) => {
    const read = new Map<string, string>()
    list(variable).forEach((entry, index) => {
      const at = entry.indexOf(':')
      const name = entry.slice(0, at)
      const token = entry.slice(at + 1)
      if (at <= 0 || token.length < 16) problems.push(`${variable} (entry ${index + 1}) must be name:token with a token of at least 16 characters`)
      else read.set(token, name)
    })
    return read
  }
  const apiTokens = tokens('API_TOKENS')
  const adminTokens = tokens('ADMIN_TOKENS')
  // One token in both lists would let a payment client read every client's ledger rows.
  ;[...adminTokens.keys()].forEach((token, index) => {
    if (apiTokens.has(token)) problems.push(`ADMIN_TOKENS (entry ${index + 1}) repeats a token of API_TOKENS: operators' tokens must differ from payment clients'`)
  })

  const schemes: CliScheme[] = []
  for (const name of list('SCHEMES').map((scheme) => scheme.toLowerCase())) {
    if (!SCHEMES.includes(name as CliScheme)) problems.push(`SCHEMES names an unknown scheme "${name.slice(0, 40)}" (use ${SCHEMES.join(', ')})`)
    else if (!schemes.includes(name as CliScheme)) schemes.push(name as CliScheme)
  }
  if (schemes.length === 0 && !problems.some((problem) => problem.startsWith('SCHEMES'))) schemes.push('exact')
  schemes.sort((a, b) => SCHEMES.indexOf(a) - SCHEMES.indexOf(b))
  if (schemes.includes('upto')) {
    if (!networks.some((network) => network.family === 'eip155') && names.length > 0) problems.push('SCHEMES includes upto, which only EVM networks serve: name one in NETWORKS')
    // An upto settle request sets the amount charged: anyone who may call /settle sets the price.
    if (apiTokens.size === 0) problems.push('SCHEMES includes upto, which needs API_TOKENS: an upto settle request sets the amount charged, so only your resource servers may call /settle')
  }
  // The exact adapters own the networks' readiness checks and connections; upto is served beside them.
  if (!schemes.includes('exact') && schemes.length > 0) problems.push('SCHEMES must include exact (upto is served beside it), e.g. SCHEMES=exact,upto')

  let trustProxyHops = 0
  const trustProxy = text('TRUST_PROXY')?.toLowerCase()
  if (trustProxy === undefined || ['false', 'no', '0'].includes(trustProxy)) trustProxyHops = 0
  else if (['true', 'yes'].includes(trustProxy)) trustProxyHops = 1
  else if (/^\d{1,2}$/.test(trustProxy) && Number(trustProxy) >= 1 && Number(trustProxy) <= 16) trustProxyHops = Number(trustProxy)
  else problems.push('TRUST_PROXY must be false, true (one proxy) or the number of proxies in front that append to X-Forwarded-For (1 to 16)')
  const clientIpHeader = text('CLIENT_IP_HEADER')?.toLowerCase()
  if (clientIpHeader !== undefined) {
    if (clientIpHeader === 'x-forwarded-for') problems.push('CLIENT_IP_HEADER cannot be x-forwarded-for (the client writes its left end): set TRUST_PROXY to the number of proxies in front instead')
    else if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(clientIpHeader)) problems.push('CLIENT_IP_HEADER must be a header name, e.g. cf-connecting-ip or x-real-ip')
    if (trustProxyHops > 0) problems.push('set TRUST_PROXY or CLIENT_IP_HEADER, not both')
  }

  const logLevel = text('LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.has(logLevel)) problems.push(`LOG_LEVEL must be one of ${[...LOG_LEVELS].join(', ')}`)
  const port = integer('PORT', 4020, 0, 65_535)
  const statsPortText = text('STATS_PORT')
  const statsPort = statsPortText === undefined ? undefined : integer('STATS_PORT', 0, 0, 65_535)

  const config: CliConfig = {
    networks,
    evmPrivateKeys: evmPrivateKeys as `0x${string}`[],
    solanaFeePayerKeys: solanaKeys,
    restrictAssets: boolean('RESTRICT_ASSETS', true),
    schemes,
    host: text('HOST') ?? '0.0.0.0',
    port,
    statsPort,
    storeUrl,
    apiTokens,
    adminTokens,
    rateLimitVerify: integer('RATE_LIMIT_VERIFY', 600, 0, 1_000_000),
    rateLimitSettle: integer('RATE_LIMIT_SETTLE', 120, 0, 1_000_000),
    trustProxyHops,
    clientIpHeader,
    maxInFlightSettlesPerSigner: integer('MAX_IN_FLIGHT_SETTLES_PER_SIGNER', 256, 1, 100_000),
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', 30_000, 0, 600_000),
    balanceIntervalMs: integer('BALANCE_INTERVAL_MS', 60_000, 1_000, 86_400_000),
    logLevel,
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config }
}

/** Solana keypairs from a JSON byte array, a JSON array of them, or comma-separated base58. */
function readSolanaKeys(value: string | undefined, problems: string[]): Uint8Array[] {
  if (value === undefined) return []
  const fail = (why: string) => {
    problems.push(`SOLANA_FEE_PAYER_KEYS ${why}`)
    return []
  }
  if (value.startsWith('[')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(value)
    } catch {
      return fail('is not valid JSON')
    }
    const arrays = Array.isArray(parsed) && parsed.every((item) => Array.isArray(item)) ? (parsed as unknown[][]) : [parsed as unknown[]]
    const keys: Uint8Array[] = []
    for (const [index, array] of arrays.entries()) {
      if (!Array.isArray(array) || array.length !== 64 || !array.every((byte) => Number.isInteger(byte) && (byte as number) >= 0 && (byte as number) <= 255)) {
        return fail(`(key ${index + 1}) must be 64 bytes, as solana-keygen writes a keypair`)
      }
      keys.push(Uint8Array.from(array as number[]))
    }
    return keys
  }
  const keys: Uint8Array[] = []
  for (const [index, part] of value.split(',').map((p) => p.trim()).filter(Boolean).entries()) {
    const bytes = decodeBase58(part)
    if (!bytes || bytes.length !== 64) return fail(`(key ${index + 1}) must be a 64-byte keypair in base58 or a JSON byte array`)
    keys.push(bytes)
  }
  return keys
}

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

function decodeBase58(text: string): Uint8Array | undefined {
  let value = 0n
  for (const char of text) {
    const digit = BASE58.indexOf(char)
    if (digit < 0) return undefined
    value = value * 58n + BigInt(digit)
  }
  const bytes: number[] = []
  while (value > 0n) {
    bytes.unshift(Number(value & 0xffn))
    value >>= 8n
  }
  for (const char of text) {
    if (char !== '1') break
    bytes.unshift(0)
  }
  return Uint8Array.from(bytes)
}

/** The text of `--help`. */
export function helpText(): string {
  const lines = [
    'x402-facilitator: an x402 payment facilitator (verify and settle payments on EVM chains and Solana)',
    '',
    'Usage: x402-facilitator [--help | --version]',
    '',
    'Run the binary itself (node_modules/.bin/x402-facilitator, or exec it from a shell script) so that SIGTERM reaches it:',
    'it then stops taking connections, lets requests in flight finish, and exits 0. Under npx, npm receives the signal.',
    '',
    'Configured from environment variables:',
    '',
  ]
  for (const variable of ENV_VARIABLES) {
    lines.push(`  ${variable.name}${variable.default === undefined ? '' : ` (default ${variable.default})`}`)
    lines.push(`      ${variable.description}${variable.example ? `; e.g. ${variable.example}` : ''}`)
  }
  lines.push(
    '',
    'Routes on PORT:',
    '  GET /supported, POST /verify, POST /settle   closed by API_TOKENS (open to anyone when it is unset)',
    '  GET /ledger                                  ADMIN_TOKENS only (401 to everyone when it is unset)',
    '  GET /metrics                                 ADMIN_TOKENS only; public when neither API_TOKENS nor ADMIN_TOKENS is set',
    '  GET /healthz, GET /readyz                    public (/readyz: a check at most 5 s old; checks store, rpc <network>,',
    '                                               multicall3 <network>, signer <address> <network>, fee payer <address> <network>)',
    'Statistics host (STATS_PORT, or PORT when it is unset), public:',
    '  GET /  (the page for people), GET /public/stats, GET /public/resources, GET /discovery/resources',
    '',
    'Every answer carries x-request-id (the one sent, when sane, else a new one); every log line a request causes names it.',
    'Logs are JSON lines on stdout. A refusal to start is one line per problem on stderr, naming the variable, and exit code 1.',
  )
  return lines.join('\n')
}
