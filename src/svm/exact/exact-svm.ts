import type { SchemeAdapter } from '../../core/adapter.js'
import { withRedactedErrors } from '../../core/redact.js'
import type { ExactSvmConfig } from './config.js'
import { createFeePayerSlots, type FeePayerReservation } from './fee-payer-slots.js'
import { type ExactSvmPayload, parsePayment } from './parse.js'
import type { SignedPayment } from './prepare.js'
import { readiness } from './readiness.js'
import { createExactSvmRuntime } from './runtime.js'
import { resume, settle } from './settle.js'
import { createVerify } from './verify.js'

/**
 * The x402 `exact` scheme on Solana: verifies a payer-signed SPL
 * `TransferChecked` transaction, co-signs it as fee payer and settles it. Every
 * rule that protects the fee payer is checked before anything is simulated or
 * sent (see `rules/transaction-rules.ts`); the payer's signature is checked as
 * strictly as the runtime checks it (`crypto/ed25519.ts`), and Token-2022 mints whose
 * extensions can short payTo or block the transfer are refused unless allowed
 * (`rules/mint-extensions.ts`). A valid verify costs one RPC round trip: signature
 * status and simulation (plus, for a Token-2022 payment, the mint account) in
 * one JSON-RPC batch.
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
  const rt = createExactSvmRuntime(config)
  // parse → reserveSettlement → verify → settle: each step takes what the one before returned.
  const adapter: SchemeAdapter<ExactSvmPayload, SignedPayment, FeePayerReservation> = {
    scheme: 'exact',
    family: 'solana',
    readiness: (signal) => readiness(rt, signal),
    networks: [...rt.networks.values()].map((network) => network.info),
    versions: config.versions ?? [1, 2],
    signers: () => [...rt.feePayers],
    parse: (ctx) => parsePayment(rt, ctx),
    reserveSettlement: createFeePayerSlots(rt),
    verify: createVerify(rt),
    settle: (ctx, payment, journal) => settle(rt, ctx, payment, journal),
    resume: (ctx, payload, record) => resume(rt, ctx, payload, record),
  }
  // RPC URLs and headers may carry API keys: no cause chain leaves with one.
  return withRedactedErrors(adapter, rt.secrets)
}
