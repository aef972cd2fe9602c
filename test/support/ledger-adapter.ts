import { createHash, createHmac } from 'node:crypto'
import { z } from 'zod'
import type { Caip2Network, PaymentContext, SchemeAdapter, SettleResponse, VerifyResponse } from '../../src/index.js'

type LedgerPayload = { from: string; to: string; value: string; nonce: string; signature: string }

/**
 * A small but honest scheme adapter for core and HTTP tests: payments move
 * balances on an in-memory ledger, authorised by an HMAC over the transfer.
 * It exercises the same contract as the chain adapters (verify, settlement
 * key, journal before broadcast, resume) without a chain.
 */
export interface LedgerAdapter extends SchemeAdapter<LedgerPayload, LedgerPayload> {
  readonly balances: Map<string, bigint>
  /** Transfers applied, by transaction id (what "on chain" means here). */
  readonly applied: Map<string, { from: string; to: string; value: bigint }>
  sign(transfer: { from: string; to: string; value: string; nonce: string }): string
  /** Transfers the ledger refused when applying them ("reverted on chain", at the facilitator's cost). */
  readonly reverted: string[]
}

const ledgerPayload = z.object({
  from: z.string().min(1),
  to: z.string().min(1),
  value: z.string().regex(/^\d+$/),
  nonce: z.string().min(1),
  signature: z.string().regex(/^[0-9a-f]{64}$/),
})

export interface LedgerAdapterOptions {
  network?: Caip2Network
  v1Name?: string
  secret?: string
  /** Delay before a transfer is applied ("confirmation"), in ms. */
  confirmDelayMs?: number
  /** The ledger's balances, to share one "chain" between two adapters (two processes). @default a new one */
  balances?: Map<string, bigint>
  /** Report what a verified payment spends (`Verdict.spend`), as the chain adapters do. @default true */
  reportSpend?: boolean
  /** Transfers the ledger refuses when applying them although verify passed (a hostile payer's trick). */
  revertWhen?: (transfer: { from: string; to: string; value: bigint }) => boolean
}

export function createLedgerAdapter(options: LedgerAdapterOptions = {}): LedgerAdapter {
  const secret = options.secret ?? 'ledger-test-secret'
  const balances = options.balances ?? new Map<string, bigint>()
  const applied = new Map<string, { from: string; to: string; value: bigint }>()
  const usedNonces = new Set<string>()
  const reverted: string[] = []
  const sign = (t: { from: string; to: string; value: string; nonce: string }) =>
    createHmac('sha256', secret).update(`${t.from}|${t.to}|${t.value}|${t.nonce}`).digest('hex')

  const check = (ctx: PaymentContext, p: LedgerPayload): VerifyResponse => {
    if (sign(p) !== p.signature) return { isValid: false, invalidReason: 'invalid_signature', invalidMessage: 'bad signature', payer: p.from }
    if (p.to !== ctx.payTo) return { isValid: false, invalidReason: 'recipient_mismatch', invalidMessage: 'wrong recipient', payer: p.from }
    if (BigInt(p.value) !== ctx.amount) return { isValid: false, invalidReason: 'amount_mismatch', invalidMessage: 'wrong amount', payer: p.from }
    if (usedNonces.has(p.nonce)) return { isValid: false, invalidReason: 'nonce_used', invalidMessage: 'nonce used', payer: p.from }
    if ((balances.get(p.from) ?? 0n) < BigInt(p.value)) return { isValid: false, invalidReason: 'insufficient_funds', invalidMessage: 'balance too low', payer: p.from }
    return { isValid: true, payer: p.from }
  }

  const txId = (p: LedgerPayload) => createHash('sha256').update(`${p.from}|${p.nonce}`).digest('hex')

  const apply = async (ctx: PaymentContext, p: LedgerPayload, transaction: string): Promise<SettleResponse> => {
    if (options.confirmDelayMs) await new Promise((r) => setTimeout(r, options.confirmDelayMs))
    if (!applied.has(transaction)) {
      // The ledger itself refuses a used nonce, like EIP-3009 on chain.
      if (usedNonces.has(p.nonce)) {
        return { success: false, errorReason: 'transaction_failed', transaction, network: ctx.wireNetwork, payer: p.from }
      }
      const value = BigInt(p.value)
      // Like a chain: a transfer the balance no longer covers (or a hostile one) reverts, and the nonce stays unused.
      if ((balances.get(p.from) ?? 0n) < value || options.revertWhen?.({ from: p.from, to: p.to, value })) {
        reverted.push(transaction)
        return { success: false, errorReason: 'transaction_failed', transaction, network: ctx.wireNetwork, payer: p.from }
      }
      usedNonces.add(p.nonce)
      balances.set(p.from, (balances.get(p.from) ?? 0n) - value)
      balances.set(p.to, (balances.get(p.to) ?? 0n) + value)
      applied.set(transaction, { from: p.from, to: p.to, value })
    }
    return { success: true, transaction, network: ctx.wireNetwork, payer: p.from }
  }

  return {
    scheme: 'exact',
    family: 'eip155',
    networks: [{ caip2: options.network ?? 'eip155:31337', ...(options.v1Name ? { v1Name: options.v1Name } : {}) }],
    balances,
    applied,
    reverted,
    sign,
    signers: () => ['0x000000000000000000000000000000000000fa11'],
    parse(ctx) {
      const parsed = ledgerPayload.safeParse(ctx.payload.payload)
      if (!parsed.success) return { refusal: { isValid: false, invalidReason: 'invalid_payload', invalidMessage: 'payload shape' } }
      return { payload: parsed.data, key: `${parsed.data.from}:${parsed.data.nonce}` }
    },
    async verify(ctx, p) {
      const response = check(ctx, p)
      if (!response.isValid) return { response }
      const spend = options.reportSpend === false ? undefined : { account: `ledger:${p.from}`, amount: BigInt(p.value), balance: balances.get(p.from) ?? 0n }
      return { response: { ...response, isValid: true }, payment: p, ...(spend ? { spend } : {}) }
    },
    async settle(ctx, p, journal) {
      const transaction = txId(p)
      await journal.broadcasting({ transaction })
      return apply(ctx, p, transaction)
    },
    resume: (ctx, p, record) => apply(ctx, p, record.transaction),
  }
}

/** A v2 verify/settle body for the ledger adapter. */
export function ledgerBody(
  adapter: LedgerAdapter,
  t: { from: string; to: string; value: string; nonce: string },
  network = 'eip155:31337',
) {
  const requirements = { scheme: 'exact', network, amount: t.value, asset: 'LEDGER', payTo: t.to, maxTimeoutSeconds: 60 }
  return {
    x402Version: 2,
    paymentPayload: {
      x402Version: 2,
      accepted: { ...requirements },
      resource: { url: 'https://api.example.com/weather', description: 'Weather', mimeType: 'application/json' },
      payload: { ...t, signature: adapter.sign(t) },
    },
    paymentRequirements: requirements,
  }
}
