import type { SchemeAdapter } from '../core/adapter.js'
import { renamedOption } from '../core/renamed-option.js'
import { exactSvm as exactSvmAdapter } from './exact/exact-svm.js'
import type { ExactSvmConfig as AdapterConfig } from './exact/config.js'

/** Configuration of `exactSvm()`: the names it shares with `exactEvm()` mean the same there. */
export interface ExactSvmConfig extends Omit<AdapterConfig, 'pollIntervalMs' | 'minFeePayerLamports' | 'rpc' | 'maxRpcRequestsInFlight'> {
  /** Pause between two signature-status polling rounds; one round asks about every settlement confirming on the network. @default 400 */
  confirmPollIntervalMs?: number
  /**
   * Lamports below which a fee payer counts as not ready in `readiness()` (`GET /readyz`): it
   * soon cannot pay for settlements. @default 10_000_000n (0.01 SOL)
   */
  minSignerBalance?: bigint
  /** Builds the RPC transport of a network (tests, fault injection, custom clients). @default createHttpRpcTransport */
  transport?: AdapterConfig['rpc']
  /**
   * Most requests on the wire to a network's RPC at once, with the default transport. A
   * request that finds one free leaves at once (while another is on the wire, a verify's
   * waits for the end of its event-loop turn, with the other verifies of that turn); those
   * made while every one is taken (a burst of verifies) wait, and leave together as one
   * JSON-RPC batch when one comes back, so a burst opens this many connections at most.
   * A node that refuses the merged batch gets each request alone again. An integer from
   * 1 to 1,000; anything else is `misconfigured`. Ignored with `transport`. @default 8
   */
  maxRpcRequestsInFlight?: number
  /** @deprecated Renamed `confirmPollIntervalMs` (the name `exactEvm` uses); still read. */
  pollIntervalMs?: number
  /** @deprecated Renamed `minSignerBalance` (the name `exactEvm` uses, here in lamports); still read. */
  minFeePayerLamports?: bigint
  /** @deprecated Renamed `transport` (the name `exactEvm` uses); still read. */
  rpc?: AdapterConfig['rpc']
}

/** The adapter's own configuration: the current names mapped onto the ones it reads. */
export function svmAdapterConfig(config: ExactSvmConfig): AdapterConfig {
  const { confirmPollIntervalMs, minSignerBalance, transport, pollIntervalMs, minFeePayerLamports, rpc, ...rest } = config
  const poll = renamedOption('exactSvm', ['confirmPollIntervalMs', confirmPollIntervalMs], ['pollIntervalMs', pollIntervalMs])
  const minimum = renamedOption('exactSvm', ['minSignerBalance', minSignerBalance], ['minFeePayerLamports', minFeePayerLamports])
  const build = renamedOption('exactSvm', ['transport', transport], ['rpc', rpc])
  return {
    ...rest,
    ...(poll === undefined ? {} : { pollIntervalMs: poll }),
    ...(minimum === undefined ? {} : { minFeePayerLamports: minimum }),
    ...(build === undefined ? {} : { rpc: build }),
  }
}

/**
 * The x402 `exact` scheme on Solana: verifies a payer-signed SPL `TransferChecked` transaction,
 * co-signs it as fee payer and settles it. Every rule that protects the fee payer is checked
 * before anything is simulated or sent; the payer's signature is checked as strictly as the
 * runtime checks it, and Token-2022 mints whose extensions can short payTo or block the transfer
 * are refused unless allowed. A valid verify costs one RPC round trip.
 *
 * @example
 * import { createFacilitator } from 'x402-facilitator'
 * import { exactSvm } from 'x402-facilitator/svm'
 * import { createKeyPairSignerFromBytes } from '@solana/kit'
 *
 * // The fee payer's 64-byte secret key, as solana-keygen writes it: [12,34,...]
 * const secretKeyBytes = Uint8Array.from(JSON.parse(process.env.SOLANA_FEE_PAYER_KEY!) as number[])
 * const feePayer = await createKeyPairSignerFromBytes(secretKeyBytes)
 * const facilitator = createFacilitator({
 *   schemes: [exactSvm({ networks: [{ network: 'solana-devnet', rpcUrl: 'https://api.devnet.solana.com' }], feePayers: [feePayer] })],
 * })
 */
export function exactSvm(config: ExactSvmConfig): SchemeAdapter {
  return exactSvmAdapter(svmAdapterConfig(config))
}
