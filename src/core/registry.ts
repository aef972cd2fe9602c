import { FacilitatorError } from '../errors/facilitator-error.js'
import type { SupportedKind, SupportedResponse } from '../schemas/messages.js'
import type { AdapterNetwork, SchemeAdapter } from './adapter.js'

/** An adapter and the network entry a request matched. */
export interface RegistryMatch {
  readonly adapter: SchemeAdapter
  readonly network: AdapterNetwork
}

/**
 * Dispatch table from (protocol version, scheme, network as written on the
 * wire) to an adapter. Matching is exact: registering `eip155:8453` never
 * serves `eip155:1`, and a v1 name is only accepted from v1 requests.
 */
export interface Registry {
  readonly adapters: readonly SchemeAdapter[]
  /** The adapter serving this kind, if any. */
  find(x402Version: number, scheme: string, network: string): RegistryMatch | undefined
  /** True when some adapter serves the scheme at all (to tell `unsupported_scheme` from `invalid_network`). */
  servesScheme(scheme: string): boolean
  /** The kinds, extensions (the adapters' own and `extensions`, once each) and signers for GET /supported. */
  supported(extensions?: readonly string[]): SupportedResponse
}

const dispatchKey = (version: number, scheme: string, network: string) => `${version}|${scheme}|${network}`

/**
 * Builds a registry from adapter values. Two adapters claiming the same kind
 * is a configuration error, reported at once rather than at the first payment.
 *
 * @example
 * // partial
 * const registry = createRegistry([exactEvm(evmConfig), exactSvm(svmConfig)])
 * registry.find(2, 'exact', 'eip155:8453')
 */
export function createRegistry(adapters: readonly SchemeAdapter[]): Registry {
  const table = new Map<string, RegistryMatch>()
  const kinds: SupportedKind[] = []
  const schemes = new Set<string>()

  const add = (version: 1 | 2, wireNetwork: string, match: RegistryMatch) => {
    const key = dispatchKey(version, match.adapter.scheme, wireNetwork)
    if (table.has(key)) {
      throw new FacilitatorError(
        'misconfigured',
        `two adapters serve x402 v${version} ${match.adapter.scheme} on ${wireNetwork}`,
      )
    }
    table.set(key, match)
    kinds.push({
      x402Version: version,
      scheme: match.adapter.scheme,
      network: wireNetwork,
      ...(match.network.extra ? { extra: { ...match.network.extra } } : {}),
    })
  }

  for (const adapter of adapters) {
    schemes.add(adapter.scheme)
    const versions = adapter.versions ?? [1, 2]
    for (const network of adapter.networks) {
      const match = { adapter, network }
      // v1 kinds exist only for networks that have a v1 name.
      if (versions.includes(1) && network.v1Name) add(1, network.v1Name, match)
      if (versions.includes(2)) add(2, network.caip2, match)
    }
  }

  return {
    adapters,
    find: (version, scheme, network) => table.get(dispatchKey(version, scheme, network)),
    servesScheme: (scheme) => schemes.has(scheme),
    supported(extensions = []) {
      const signers: Record<string, string[]> = {}
      for (const adapter of adapters) {
        const list = (signers[`${adapter.family}:*`] ??= [])
        for (const address of adapter.signers()) if (!list.includes(address)) list.push(address)
      }
      const names = [...new Set([...adapters.flatMap((adapter) => adapter.extensions ?? []), ...extensions])]
      return { kinds: kinds.map((kind) => ({ ...kind })), extensions: names, signers }
    },
  }
}
