import type { Parsed, ReadinessCheck, SchemeAdapter, Verdict } from '../../core/adapter.js'
import type { SettleResponse } from '../../schemas/messages.js'
import { pickSigner } from '../chain/send-transaction.js'
import { networkReadiness } from '../chain/readiness.js'
import { resumeSettlement } from '../chain/settlement-outcome.js'
import { reserveSigner, type SignerReservation } from '../chain/signer-reservation.js'
import type { EvmSetup } from '../evm-setup.js'
import type { ExactEvmConfig } from '../exact-evm-config.js'
import { EIP2612_GAS_SPONSORING } from '../permit2/eip2612-extension.js'
import { isPermit2Payload } from '../permit2/permit2-payload-kind.js'
import { parsePermit2Payload, type Permit2Payload } from '../permit2/permit2-payload.js'
import type { VerifiedPermit2 } from '../permit2/proxy-settlement.js'
import { invalid } from '../reasons.js'
import { parseExactEvmPayload, type ExactEvmPayload } from './authorization.js'
import { addressRejection, settleEip3009, verifyEip3009, type VerifiedPayment } from './eip3009.js'
import { settlePermit2, verifyPermit2 } from './permit2.js'

/** The exact scheme's payload as parsed, by how it moves the tokens: an EIP-3009 authorization or a Permit2 permit. */
export type ExactPayload = { readonly method: 'eip3009'; readonly payload: ExactEvmPayload } | { readonly method: 'permit2'; readonly payload: Permit2Payload }

/** What a valid verify of an exact payment hands its settle, by transfer method. */
export type ExactPayment = ({ readonly method: 'eip3009' } & VerifiedPayment) | ({ readonly method: 'permit2' } & VerifiedPermit2)

/**
 * The `exact` scheme on the networks of `setup`: EIP-3009 `transferWithAuthorization` payments and
 * Permit2 ones through the x402 exact proxy, told apart by the payload (`permit2Authorization`).
 */
export function createExactAdapter(setup: EvmSetup, config: ExactEvmConfig): SchemeAdapter<ExactPayload, ExactPayment, SignerReservation> {
  const { runtimes, runtimeOf } = setup
  return {
    scheme: 'exact',
    family: 'eip155',
    networks: [...runtimes.values()].map((r) => r.network),
    versions: config.versions ?? [1, 2],
    signers: () => setup.signerAddresses,
    // Permit2 payments may carry the payer's EIP-2612 permit, run by the proxy's settleWithPermit.
    extensions: [EIP2612_GAS_SPONSORING],

    async readiness(signal): Promise<ReadinessCheck[]> {
      const minBalance = config.minSignerBalance ?? 1_000_000_000_000_000n
      const perNetwork = await Promise.all([...runtimes.values()].map((runtime) => networkReadiness(runtime, minBalance, signal)))
      return perNetwork.flat()
    },

    attach: (services) => setup.attach(services),

    async close() {
      for (const runtime of runtimes.values()) runtime.closeConnections()
    },

    parse(ctx): Parsed<ExactPayload> {
      const { chainId } = runtimeOf(ctx)
      const raw = ctx.payload.payload
      if (isPermit2Payload(raw)) {
        const permit = parsePermit2Payload(raw)
        if ('reason' in permit) return { refusal: invalid(permit, undefined) }
        // Permit2 spends the nonce of an owner whatever the token: the key is (chain, owner, nonce).
        return { payload: { method: 'permit2', payload: permit }, key: `${chainId}:permit2:${permit.from.toLowerCase()}:${permit.nonce}` }
      }
      const payload = parseExactEvmPayload(raw)
      // The requirements' addresses are named before the payload's shape, as verify always did.
      if ('reason' in payload) return { refusal: invalid(addressRejection(ctx, payload) ?? payload, undefined) }
      const { from, nonce } = payload.authorization
      return { payload: { method: 'eip3009', payload }, key: `${chainId}:${ctx.asset.toLowerCase()}:${from.toLowerCase()}:${nonce.toLowerCase()}` }
    },

    async verify(ctx, parsed, reservation): Promise<Verdict<ExactPayment>> {
      const runtime = runtimeOf(ctx)
      if (parsed.method === 'permit2') return verifyPermit2(setup, ctx, runtime, parsed.payload, reservation?.slot)
      return verifyEip3009(setup, ctx, runtime, parsed.payload, reservation?.slot)
    },

    // A Permit2 nonce may have been settled for an upto usage of zero: nothing on chain shows it.
    spendableWithoutTransaction: (_ctx, parsed) => parsed.method === 'permit2',

    reserveSettlement(ctx): SignerReservation {
      return reserveSigner(pickSigner(runtimeOf(ctx)), setup.maxInFlight, `every signer of ${ctx.network} has ${setup.maxInFlight} settlements in flight; retry shortly`)
    },

    async settle(ctx, verified, journal, reservation): Promise<SettleResponse> {
      const runtime = runtimeOf(ctx)
      if (verified.method === 'permit2') return settlePermit2(setup, ctx, runtime, verified, journal, reservation)
      return settleEip3009(setup, ctx, runtime, verified, journal, reservation)
    },

    async resume(ctx, parsed, record): Promise<SettleResponse> {
      return resumeSettlement(setup, ctx, parsed.method === 'permit2' ? parsed.payload.from : parsed.payload.authorization.from, record)
    },
  }
}
