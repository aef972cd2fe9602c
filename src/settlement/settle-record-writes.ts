import type { BroadcastRecord } from '../core/adapter.js'
import { boundedStoreCall } from './bounded-store-call.js'
import type { SettleCall } from './settle-call.js'
import { decodeSettlementRecord, type SettlementRecord } from './settlement-record.js'

// The store calls of one settle on its payment's record and resume lock, each bounded (see
// bounded-store-call.ts). Writes made while a lease is kept go through `keeper.serial` (here in
// releaseClaim, else at the caller), so a renewal never lands after the write that ended the lease.

/** A new lease of this call's, from now. */
export const leaseFromNow = (call: SettleCall) => Date.now() + call.leaseMs

/** Writes the payment's record, with the amount charged (once sent) and the payment's fingerprint. */
export const writeRecord = (call: SettleCall, record: SettlementRecord, ttlMs: number, boundMs = call.bound()) =>
  boundedStoreCall(
    () => call.store.set(call.storeKey, JSON.stringify({ ...(call.charged === undefined || record.state === 'claimed' ? {} : { amount: call.charged }), ...record, fingerprint: call.fingerprint }), { ttlMs }),
    boundMs,
    `recording a ${record.state} settlement`,
  )

export const readRecord = async (call: SettleCall) =>
  decodeSettlementRecord(await boundedStoreCall(() => call.store.get(call.storeKey), call.bound(), 'reading the settlement record'))

/** Claims the payment with an atomic set-if-absent; the claim's lease is then kept while the call lives. */
export async function claimPayment(call: SettleCall): Promise<boolean> {
  const record: SettlementRecord = { state: 'claimed', leaseUntil: leaseFromNow(call), fingerprint: call.fingerprint, owner: call.owner }
  const taken = await boundedStoreCall(() => call.store.set(call.storeKey, JSON.stringify(record), { ifAbsent: true, ttlMs: call.budgetMs * 2 }), call.bound(), 'claiming the payment')
  if (taken) call.keeper.hold(record, call.budgetMs * 2)
  return taken
}

// Best effort: a claim left behind expires with its lease (taken over) and its record after twice the budget.
export function releaseClaim(call: SettleCall, boundMs = call.bound()): Promise<void> {
  call.keeper.letGo()
  return call.keeper.serial(() => boundedStoreCall(() => call.store.delete(call.storeKey), boundMs, 'releasing the claim')).catch(() => undefined)
}

export const lockResume = (call: SettleCall) =>
  boundedStoreCall(() => call.store.set(call.resumeLockKey, '1', { ifAbsent: true, ttlMs: call.budgetMs }), call.bound(), 'locking the resume')

export const unlockResume = (call: SettleCall) =>
  boundedStoreCall(() => call.store.delete(call.resumeLockKey), call.storeTimeoutMs, 'unlocking the resume').catch(() => undefined)

/** A broadcast record as this call journals it: with the request, so a facilitator can finish it if no caller retries. */
export function journalRecord(call: SettleCall, sent: BroadcastRecord, leaseUntil: number): SettlementRecord {
  const { context } = call
  return {
    state: 'broadcast',
    transaction: sent.transaction,
    ...(sent.raw === undefined ? {} : { raw: sent.raw }),
    ...(sent.slot ? { slot: sent.slot } : {}),
    leaseUntil,
    owner: call.owner,
    request: { x402Version: context.x402Version, paymentPayload: context.payload, paymentRequirements: context.requirements },
    ...(call.journaledMinute === undefined ? {} : { minute: call.journaledMinute }),
  }
}
