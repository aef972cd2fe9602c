import { createHash, createHmac } from 'node:crypto'
import { z } from 'zod'
import type { Caip2Network, PaymentContext, SchemeAdapter, SettleResponse, VerifyResponse } from '../../src/index.js'

/**
 * A ledger standing in for a chain, shared by every adapter built on it (as
 * two facilitator processes share one chain): balances, used nonces and
 * applied transfers. Transfers are authorised by an HMAC over their fields.
 */
export interface TestChain {
  readonly balances: Map<string, bigint>
  readonly applied: Map<string, { from: string; to: string; value: bigint }>
  readonly usedNonces: Set<string>
  /** Payers whose transfers the chain refuses once sent: a failure on chain after verify passed. */
  readonly reverts: Set<string>
  fund(account: string, value: bigint): void
  sign(transfer: Transfer): string
}

export interface Transfer {
  from: string
  to: string
  value: string
  asset: string
  nonce: string
}

export function createTestChain(secret = 'stats-test-chain'): TestChain {
  const balances = new Map<string, bigint>()
  return {
    balances,
    applied: new Map(),
    usedNonces: new Set(),
    reverts: new Set(),
    fund: (account, value) => balances.set(account, (balances.get(account) ?? 0n) + value),
    sign: (t) => createHmac('sha256', secret).update(`${t.from}|${t.to}|${t.value}|${t.asset}|${t.nonce}`).digest('hex'),
  }
}

const transferPayload = z.object({
  from: z.string().min(1),
  to: z.string().min(1),
  value: z.string().regex(/^\d+$/),
  asset: z.string().min(1),
  nonce: z.string().min(1),
  signature: z.string().regex(/^[0-9a-f]{64}$/),
})

export interface ChainAdapterOptions {
  network: Caip2Network
  v1Name?: string
  /** Time the "chain" takes to confirm a transfer, in ms. @default 0 */
  confirmDelayMs?: number
  /** Extra time a verify takes, in ms (to give response times a shape). @default 0 */
  verifyDelayMs?: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * An honest SchemeAdapter over a TestChain: verify checks the signature,
 * recipient, amount, asset, nonce and balance; settle journals the
 * transaction before "sending" it and applies it once; Solana-family networks
 * report `timings.confirmationMs` as the Solana adapter does.
 */
type TransferPayload = Transfer & { signature: string }

export function createChainAdapter(chain: TestChain, options: ChainAdapterOptions): SchemeAdapter<TransferPayload, TransferPayload> {
  const family = options.network.startsWith('solana:') ? 'solana' : 'eip155'

  const check = (ctx: PaymentContext, p: TransferPayload): VerifyResponse => {
    if (chain.sign(p) !== p.signature) return { isValid: false, invalidReason: 'invalid_signature', invalidMessage: 'bad signature', payer: p.from }
    if (p.to !== ctx.payTo) return { isValid: false, invalidReason: 'recipient_mismatch', invalidMessage: 'wrong recipient', payer: p.from }
    if (p.asset !== ctx.asset) return { isValid: false, invalidReason: 'asset_mismatch', invalidMessage: 'wrong asset', payer: p.from }
    if (BigInt(p.value) !== ctx.amount) return { isValid: false, invalidReason: 'amount_mismatch', invalidMessage: 'wrong amount', payer: p.from }
    if (chain.usedNonces.has(p.nonce)) return { isValid: false, invalidReason: 'nonce_used', invalidMessage: 'nonce used', payer: p.from }
    if ((chain.balances.get(p.from) ?? 0n) < BigInt(p.value)) return { isValid: false, invalidReason: 'insufficient_funds', invalidMessage: 'balance too low', payer: p.from }
    return { isValid: true, payer: p.from }
  }

  const apply = async (ctx: PaymentContext, p: TransferPayload, transaction: string): Promise<SettleResponse> => {
    const sent = performance.now()
    if (options.confirmDelayMs) await sleep(options.confirmDelayMs)
    if (!chain.applied.has(transaction)) {
      if (chain.usedNonces.has(p.nonce) || chain.reverts.has(p.from)) return { success: false, errorReason: 'transaction_failed', transaction, network: ctx.wireNetwork, payer: p.from }
      const value = BigInt(p.value)
      if ((chain.balances.get(p.from) ?? 0n) < value) return { success: false, errorReason: 'transaction_failed', transaction, network: ctx.wireNetwork, payer: p.from }
      chain.usedNonces.add(p.nonce)
      chain.balances.set(p.from, (chain.balances.get(p.from) ?? 0n) - value)
      chain.balances.set(p.to, (chain.balances.get(p.to) ?? 0n) + value)
      chain.applied.set(transaction, { from: p.from, to: p.to, value })
    }
    if (family === 'solana') ctx.timings.confirmationMs = performance.now() - sent
    return { success: true, transaction, network: ctx.wireNetwork, payer: p.from }
  }

  return {
    scheme: 'exact',
    family,
    networks: [{ caip2: options.network, ...(options.v1Name ? { v1Name: options.v1Name } : {}) }],
    signers: () => [family === 'solana' ? 'FeePayer1111111111111111111111111111111111' : '0x000000000000000000000000000000000000fa11'],
    parse(ctx) {
      const parsed = transferPayload.safeParse(ctx.payload.payload)
      if (!parsed.success) return { refusal: { isValid: false, invalidReason: 'invalid_payload', invalidMessage: 'payload shape' } }
      return { payload: parsed.data, key: `${ctx.network}:${parsed.data.from}:${parsed.data.nonce}` }
    },
    async verify(ctx, p) {
      if (options.verifyDelayMs) await sleep(options.verifyDelayMs)
      const response = check(ctx, p)
      return response.isValid ? { response: { ...response, isValid: true }, payment: p } : { response }
    },
    async settle(ctx, p, journal) {
      const transaction = createHash('sha256').update(`${ctx.network}|${p.from}|${p.nonce}`).digest('hex')
      await journal.broadcasting({ transaction })
      return apply(ctx, p, transaction)
    },
    resume: (ctx, p, record) => apply(ctx, p, record.transaction),
  }
}

export interface PaymentOptions {
  network: string
  from: string
  to: string
  value: bigint | string
  asset: string
  nonce: string
  /** The paid resource: v2 `paymentPayload.resource`, v1 requirements fields. */
  resource?: { url: string; description?: string; mimeType?: string; serviceName?: string }
  /** v2 `paymentPayload.extensions` (e.g. `{ bazaar: {...} }`). */
  extensions?: Record<string, unknown>
  /** Signs with a wrong key when false. @default true */
  validSignature?: boolean
}

/** A v2 verify/settle body paying through a TestChain. */
export function paymentBody(chain: TestChain, o: PaymentOptions) {
  const transfer = { from: o.from, to: o.to, value: String(o.value), asset: o.asset, nonce: o.nonce }
  const signature = o.validSignature === false ? '0'.repeat(64) : chain.sign(transfer)
  const requirements = { scheme: 'exact', network: o.network, amount: transfer.value, asset: o.asset, payTo: o.to, maxTimeoutSeconds: 60 }
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      accepted: { ...requirements },
      ...(o.resource ? { resource: o.resource } : {}),
      ...(o.extensions ? { extensions: o.extensions } : {}),
      payload: { ...transfer, signature },
    },
    paymentRequirements: requirements,
  }
}

/** A v1 verify/settle body (network by v1 name, resource on the requirements). */
export function paymentBodyV1(chain: TestChain, o: PaymentOptions) {
  const transfer = { from: o.from, to: o.to, value: String(o.value), asset: o.asset, nonce: o.nonce }
  const signature = o.validSignature === false ? '0'.repeat(64) : chain.sign(transfer)
  return {
    x402Version: 1,
    paymentPayload: { x402Version: 1, scheme: 'exact', network: o.network, payload: { ...transfer, signature } },
    paymentRequirements: {
      scheme: 'exact',
      network: o.network,
      maxAmountRequired: transfer.value,
      asset: o.asset,
      payTo: o.to,
      maxTimeoutSeconds: 60,
      ...(o.resource ? { resource: o.resource.url, description: o.resource.description ?? '', mimeType: o.resource.mimeType ?? 'application/json' } : {}),
    },
  }
}
