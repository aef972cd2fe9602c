import type { Caip2Network } from './networks.js'
import { SOLANA_DEVNET, SOLANA_MAINNET } from './networks.js'

/** A token the library knows: where it lives and how to price it. */
export interface KnownAsset {
  readonly network: Caip2Network
  /** Contract address (EVM, checksummed) or mint (Solana). */
  readonly address: string
  readonly symbol: string
  readonly decimals: number
  /** EIP-712 domain name and version of an EIP-3009 token (EVM only). */
  readonly eip712?: { readonly name: string; readonly version: string }
  /** The USD value of one whole token, for stablecoins. */
  readonly usdPrice?: number
}

const usdc = (network: Caip2Network, address: string, name?: string): KnownAsset => ({
  network,
  address,
  symbol: 'USDC',
  decimals: 6,
  usdPrice: 1,
  ...(name ? { eip712: { name, version: '2' } } : {}),
})

/** USDC on the networks of the public x402 implementations. */
export const KNOWN_ASSETS: readonly KnownAsset[] = Object.freeze([
  usdc('eip155:1', '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', 'USD Coin'),
  usdc('eip155:11155111', '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', 'USDC'),
  usdc('eip155:8453', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 'USD Coin'),
  usdc('eip155:84532', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'USDC'),
  usdc('eip155:43114', '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E', 'USD Coin'),
  usdc('eip155:43113', '0x5425890298aed601595a70AB815c96711a31Bc65', 'USD Coin'),
  usdc('eip155:137', '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', 'USD Coin'),
  usdc('eip155:80002', '0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582', 'USDC'),
  usdc('eip155:1329', '0xe15fC38F6D8c56aF07bbCBe3BAf5708A2Bf42392', 'USDC'),
  usdc('eip155:1328', '0x4fCF1784B31630811181f670Aea7A7bEF803eaED', 'USDC'),
  usdc('eip155:4689', '0xcDF79194c6c285077a58dA47641d4dBe51F63542', 'Bridged USDC'),
  usdc('eip155:3338', '0xbbA60da06c2c5424f03f7434542280FCAd453d10', 'USDC'),
  usdc('eip155:2741', '0x84A71ccD554Cc1b02749b35d22F684CC8ec987e1', 'Bridged USDC'),
  usdc('eip155:11124', '0xe4C7fBB0a626ed208021ccabA6Be1566905E2dFc', 'Bridged USDC'),
  usdc('eip155:1514', '0xF1815bd50389c46847f0Bda824eC8da914045D14', 'Bridged USDC'),
  usdc('eip155:41923', '0x12a272A581feE5577A5dFa371afEB4b2F3a8C2F8', 'Bridged USDC (Stargate)'),
  usdc('eip155:324705682', '0x2e08028E3C4c2356572E096d8EF835cD5C6030bD', 'Bridged USDC (SKALE Bridge)'),
  usdc(SOLANA_MAINNET, 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'),
  usdc(SOLANA_DEVNET, '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'),
])

/**
 * A table of assets: the built-in ones plus any the user adds (a test token,
 * another stablecoin). Lookups ignore the case of EVM addresses.
 */
export interface AssetTable {
  find(network: string, address: string): KnownAsset | undefined
  list(): readonly KnownAsset[]
}

const assetKey = (network: string, address: string) =>
  `${network}|${network.startsWith('eip155:') ? address.toLowerCase() : address}`

/** Builds an asset table from the built-in list and `extra` entries (which win). */
export function createAssetTable(extra: readonly KnownAsset[] = []): AssetTable {
  const map = new Map<string, KnownAsset>()
  for (const asset of [...KNOWN_ASSETS, ...extra]) map.set(assetKey(asset.network, asset.address), asset)
  const all = [...map.values()]
  return {
    find: (network, address) => map.get(assetKey(network, address)),
    list: () => all,
  }
}
