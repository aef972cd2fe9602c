/**
 * Network identities. x402 v1 names networks (`base`, `solana`); v2 uses CAIP-2
 * ids (`eip155:8453`, `solana:<genesis hash prefix>`). This table maps one to
 * the other for every network the public x402 implementations list; any other
 * `eip155:<chainId>` or `solana:<genesis>` id can be served by configuring it.
 */

/** A CAIP-2 chain id such as `eip155:8453`. */
export type Caip2Network = `${string}:${string}`

/** The chain family a network belongs to; also the key prefix of `signers` in supported(). */
export type NetworkFamily = 'eip155' | 'solana'

/** What the library knows about one network. */
export interface NetworkInfo {
  readonly caip2: Caip2Network
  readonly family: NetworkFamily
  /** The x402 v1 name, when the network has one. */
  readonly v1Name?: string
  readonly testnet: boolean
}

export const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
export const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1'
export const SOLANA_TESTNET = 'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z'

const evm = (v1Name: string, chainId: number, testnet = false): NetworkInfo => ({
  caip2: `eip155:${chainId}`,
  family: 'eip155',
  v1Name,
  testnet,
})

/** Every network with a v1 name in the public x402 implementations. */
export const KNOWN_NETWORKS: readonly NetworkInfo[] = Object.freeze([
  evm('ethereum', 1),
  evm('sepolia', 11155111, true),
  evm('base', 8453),
  evm('base-sepolia', 84532, true),
  evm('avalanche', 43114),
  evm('avalanche-fuji', 43113, true),
  evm('polygon', 137),
  evm('polygon-amoy', 80002, true),
  evm('sei', 1329),
  evm('sei-testnet', 1328, true),
  evm('iotex', 4689),
  evm('peaq', 3338),
  evm('abstract', 2741),
  evm('abstract-testnet', 11124, true),
  evm('story', 1514),
  evm('educhain', 41923),
  evm('skale-base-sepolia', 324705682, true),
  evm('megaeth', 4326),
  evm('monad', 143),
  evm('stable', 988),
  evm('stable-testnet', 2201, true),
  evm('celo', 42220),
  evm('flare', 14),
  { caip2: SOLANA_MAINNET, family: 'solana', v1Name: 'solana', testnet: false },
  { caip2: SOLANA_DEVNET, family: 'solana', v1Name: 'solana-devnet', testnet: true },
  { caip2: SOLANA_TESTNET, family: 'solana', v1Name: 'solana-testnet', testnet: true },
])

const byV1Name = new Map(KNOWN_NETWORKS.map((n) => [n.v1Name, n]))
const byCaip2 = new Map(KNOWN_NETWORKS.map((n) => [n.caip2, n]))

const CAIP2 = /^(eip155):([1-9]\d{0,19})$|^(solana):([1-9A-HJ-NP-Za-km-z]{32,44})$/

/** True for a well-formed CAIP-2 id of a family this library serves. */
export function isCaip2Network(value: string): value is Caip2Network {
  return CAIP2.test(value)
}

/**
 * Describes a network given by v1 name or CAIP-2 id. Unknown but well-formed
 * CAIP-2 ids are described without a v1 name; anything else is `undefined`.
 *
 * @example
 * import { describeNetwork } from 'x402-facilitator'
 *
 * describeNetwork('base')        // { caip2: 'eip155:8453', v1Name: 'base', ... }
 * describeNetwork('eip155:31337') // { caip2: 'eip155:31337', family: 'eip155', testnet: false }
 */
export function describeNetwork(network: string): NetworkInfo | undefined {
  const known = byV1Name.get(network) ?? byCaip2.get(network as Caip2Network)
  if (known) return known
  const match = CAIP2.exec(network)
  if (!match) return undefined
  const family: NetworkFamily = match[1] ? 'eip155' : 'solana'
  return { caip2: network as Caip2Network, family, testnet: false }
}

/** The CAIP-2 id of a v1 name or CAIP-2 id, or `undefined` when unknown. */
export function toCaip2(network: string): Caip2Network | undefined {
  return describeNetwork(network)?.caip2
}

/** The numeric chain id of an `eip155:` network. */
export function evmChainId(network: Caip2Network): number {
  const [family, reference] = network.split(':')
  if (family !== 'eip155' || !reference) throw new TypeError(`${network} is not an eip155 network`)
  return Number(reference)
}
