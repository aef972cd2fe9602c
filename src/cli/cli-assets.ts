import { createAssetTable, type KnownAsset } from '../networks/assets.js'
import type { NetworkInfo } from '../networks/networks.js'

/**
 * One `ASSETS_<NETWORK>` entry: a token the network's adapter accepts, and how the statistics,
 * the catalog and the page write its amounts (token units, USD) when it says so.
 */
export interface CliAsset {
  /** Contract address (EVM) or mint (Solana). */
  readonly address: string
  /** The EIP-712 domain of an EVM token (its `name` and `version`). */
  readonly eip712?: { readonly name: string; readonly version: string }
  /** How amounts are written: decimals and symbol together (a built-in token already has them). */
  readonly decimals?: number
  readonly symbol?: string
  /** USD value of one whole token (`usd=<price>`; `stablecoin` is `usd=1`). */
  readonly usdPrice?: number
}

/** The grammar of an entry, as `--help` and the README give it. */
export const ASSETS_SYNTAX = {
  evm: '<address>:<EIP-712 name>:<EIP-712 version>[:decimals=<n>][:symbol=<text>][:usd=<price>|:stablecoin]',
  solana: '<mint>[:decimals=<n>][:symbol=<text>][:usd=<price>|:stablecoin]',
} as const

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/
const SOLANA_MINT = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/
const SYMBOL = /^[A-Za-z0-9.$_-]{1,16}$/
const PRICE = /^(?:\d{1,12})(?:\.\d{1,12})?$/
const builtIn = createAssetTable()

/**
 * Reads the entries of one `ASSETS_<NETWORK>` variable. Each problem names the variable and
 * the entry's position, never its text.
 *
 * @example
 * readAssetEntries('ASSETS_BASE_SEPOLIA', ['0x5FbD…0aa3:Test Token:1:decimals=6:symbol=TT:stablecoin'], describeNetwork('base-sepolia')!, problems)
 */
export function readAssetEntries(variable: string, entries: readonly string[], network: NetworkInfo, problems: string[]): CliAsset[] {
  const assets: CliAsset[] = []
  entries.forEach((entry, index) => {
    const where = `${variable} (entry ${index + 1})`
    const parts = entry.split(':').map((part) => part.trim())
    const evm = network.family === 'eip155'
    const fixed = evm ? 3 : 1
    const [address = '', name = '', version = ''] = parts
    if (evm ? !(EVM_ADDRESS.test(address) && name !== '' && version !== '' && !name.includes('=') && !version.includes('=')) : !SOLANA_MINT.test(address)) {
      problems.push(`${where} must be ${evm ? ASSETS_SYNTAX.evm : ASSETS_SYNTAX.solana}`)
      return
    }
    const options = new Map<string, string | true>()
    for (const option of parts.slice(fixed)) {
      const at = option.indexOf('=')
      const key = (at < 0 ? option : option.slice(0, at)).toLowerCase()
      if (options.has(key)) {
        problems.push(`${where} gives ${key.slice(0, 20)} twice`)
        return
      }
      options.set(key, at < 0 ? true : option.slice(at + 1))
    }
    const asset: { -readonly [K in keyof CliAsset]: CliAsset[K] } = { address, ...(evm ? { eip712: { name, version } } : {}) }
    for (const [key, value] of options) {
      if (key === 'decimals') {
        if (typeof value !== 'string' || !/^\d{1,2}$/.test(value) || Number(value) > 36) return void problems.push(`${where}: decimals must be a whole number from 0 to 36, e.g. decimals=6`)
        asset.decimals = Number(value)
      } else if (key === 'symbol') {
        if (typeof value !== 'string' || !SYMBOL.test(value)) return void problems.push(`${where}: symbol must be 1 to 16 letters, digits or . $ _ -, e.g. symbol=USDC`)
        asset.symbol = value
      } else if (key === 'usd') {
        if (typeof value !== 'string' || !PRICE.test(value) || !(Number(value) > 0)) return void problems.push(`${where}: usd must be the price of one whole token in dollars, above 0, e.g. usd=1 or usd=0.25`)
        asset.usdPrice = Number(value)
      } else if (key === 'stablecoin') {
        if (value !== true) return void problems.push(`${where}: stablecoin takes no value (it means usd=1)`)
        asset.usdPrice = 1
      } else {
        return void problems.push(`${where} has an unknown option "${key.slice(0, 20)}" (use decimals=, symbol=, usd= or stablecoin)`)
      }
    }
    if (options.has('usd') && options.has('stablecoin')) return void problems.push(`${where}: give usd=<price> or stablecoin, not both`)
    // A built-in token (USDC) brings its decimals, symbol and price; options override them.
    const known = builtIn.find(network.caip2, address)
    const decimals = asset.decimals ?? known?.decimals
    const symbol = asset.symbol ?? known?.symbol
    if (options.size > 0 && (decimals === undefined || symbol === undefined)) {
      return void problems.push(`${where} needs decimals=<n> and symbol=<text> together to write amounts in token units${asset.usdPrice === undefined ? '' : ' and price them'}, e.g. :decimals=6:symbol=TKN`)
    }
    assets.push(asset)
  })
  return assets
}

/**
 * The tokens the statistics, the catalog and the page price and write in token units: the
 * entries that give decimals and a symbol (or a price), over the built-in table.
 */
export function assetTableEntries(networks: readonly { readonly caip2: string; readonly assets: readonly CliAsset[] }[]): KnownAsset[] {
  const entries: KnownAsset[] = []
  for (const network of networks) {
    for (const asset of network.assets) {
      if (asset.decimals === undefined && asset.symbol === undefined && asset.usdPrice === undefined) continue
      const known = builtIn.find(network.caip2, asset.address)
      const decimals = asset.decimals ?? known?.decimals
      const symbol = asset.symbol ?? known?.symbol
      if (decimals === undefined || symbol === undefined) continue
      const usdPrice = asset.usdPrice ?? known?.usdPrice
      entries.push({
        network: network.caip2 as KnownAsset['network'],
        address: asset.address,
        decimals,
        symbol,
        ...(usdPrice === undefined ? {} : { usdPrice }),
        ...(asset.eip712 ? { eip712: asset.eip712 } : known?.eip712 ? { eip712: known.eip712 } : {}),
      })
    }
  }
  return entries
}
