/**
 * The claim policy: claims the latest voucher of every channel with unclaimed charges through the
 * facilitator (`claim`, many channels per transaction), then sweeps (`settle`). It claims when the
 * last claim is `everySeconds` old, when the unclaimed total reaches `aboveAmount`, and at once when
 * a channel has a timed withdrawal pending. Its inputs (channel states, claimed totals, when it last
 * claimed) are in the store, so it carries on after a restart; a lease lets one instance claim at a time.
 */
import { claimBatchTypedData, normalizeChannelConfig } from '../../evm/batch/codec.js'
import { BATCH_SETTLEMENT_SCHEME } from '../../evm/batch/constants.js'
import { BATCH_REJECTION as R } from '../../evm/batch/reasons.js'
import type { SettleResponse } from '../../schemas/messages.js'
import type { PaymentRequirementsV2 } from '../../schemas/requirements.js'
import type { BatchRuntime } from './batch-runtime.js'
import type { ChannelState } from './channel-state.js'

export interface ClaimPolicyOptions {
  /** Claim when the last claim is this old (and something is unclaimed). Must be well below the withdraw delay. @default 300 */
  readonly everySeconds?: number
  /** Claim as soon as the unclaimed total of a token reaches this (smallest unit). @default no threshold */
  readonly aboveAmount?: bigint
  /** Claim as soon as one channel's unclaimed charges reach this: the most a channel's payer can walk away with. @default no bound */
  readonly aboveAmountPerChannel?: bigint
  /** How often the policy looks (each look reads every channel's state from the store). @default 5_000 */
  readonly checkEveryMs?: number
  /** Rows per claim transaction. @default 100 */
  readonly maxClaimsPerBatch?: number
  /** Sweep claimed funds to the receiver after claiming. @default true */
  readonly sweep?: boolean
}

/** What one run of the policy did. */
export interface ClaimRound {
  /** Claim transactions, with the channels each covered. */
  readonly claims: readonly { readonly transaction: string; readonly channels: number }[]
  /** Sweep transactions (one per network, token and receiver with something claimed). */
  readonly sweeps: readonly { readonly transaction: string; readonly amount: string }[]
}

/** How long a round's lease outlives a crashed instance (before another instance may claim). */
export const CLAIM_POLICY_LEASE_MS = 120_000
const LAST_CLAIM = 'last-claim'
const PENDING_SWEEPS = 'pending-sweeps'
const POLICY_LEASE = 'claim-policy'

/**
 * Notes that a receiver has claimed, unswept funds of a token (a refund claimed in front of it), so
 * the next round sweeps them. A note lost to a racing write only delays that sweep to the next claim.
 */
export async function noteSweepPending(runtime: BatchRuntime, network: string, token: string, receiver: string): Promise<void> {
  const pending = parseSweeps(await runtime.store.readMark(PENDING_SWEEPS))
  if (pending.some((p) => p.network === network && p.asset.toLowerCase() === token.toLowerCase() && p.payTo.toLowerCase() === receiver.toLowerCase())) return
  pending.push(requirementsOf({ network, config: { token, receiver } }))
  await runtime.store.writeMark(PENDING_SWEEPS, JSON.stringify(pending))
}

function parseSweeps(json: string | undefined): PaymentRequirementsV2[] {
  return json === undefined ? [] : (JSON.parse(json) as PaymentRequirementsV2[])
}

type Row = { state: ChannelState; claimed: bigint }

/** Runs the policy once: claims when due (or `force`), then sweeps. Answers undefined when another instance holds the policy's lease. */
export async function runClaimPolicy(runtime: BatchRuntime, options: ClaimPolicyOptions, force: boolean): Promise<ClaimRound | undefined> {
  const { store } = runtime
  const holder = `${runtime.instance}:${crypto.randomUUID()}`
  if (!(await store.acquire(POLICY_LEASE, holder, CLAIM_POLICY_LEASE_MS))) return undefined
  try {
    const now = runtime.now()
    const states = await store.list()
    const claimedTotals = await Promise.all(states.map((s) => store.claimed(s.channelId)))
    const rows: Row[] = states.map((state, i) => ({ state, claimed: max(state.totalClaimed, claimedTotals[i]!) })).filter((r) => r.state.charged > r.claimed)
    const last = await store.readMark(LAST_CLAIM)
    if (last === undefined) await store.writeMark(LAST_CLAIM, String(now))
    const pending = parseSweeps(await store.readMark(PENDING_SWEEPS))
    if (!force && pending.length === 0 && !isDue(rows, options, now, last === undefined ? now : Number(last))) return { claims: [], sweeps: [] }
    const claims: { transaction: string; channels: number }[] = []
    const refused: string[] = []
    const swept = new Map<string, PaymentRequirementsV2>(pending.map((r) => [r.network + r.asset.toLowerCase() + r.payTo.toLowerCase(), r]))
    for (const group of groupBy(rows, (r) => `${r.state.network}|${r.state.config.token.toLowerCase()}|${r.state.config.receiver.toLowerCase()}`)) {
      const requirements = requirementsOf(group[0]!.state)
      const size = options.maxClaimsPerBatch ?? 100
      for (let i = 0; i < group.length; i += size) {
        const done = await claimRows(runtime, requirements, group.slice(i, i + size), refused)
        claims.push(...done)
        if (done.length > 0) swept.set(group[0]!.state.network + requirements.asset.toLowerCase() + requirements.payTo.toLowerCase(), requirements)
      }
    }
    await store.writeMark(LAST_CLAIM, String(runtime.now()))
    const sweeps: { transaction: string; amount: string }[] = []
    if (options.sweep !== false) {
      for (const requirements of swept.values()) {
        const answer = await settle(runtime, requirements, { type: 'settle', receiver: requirements.payTo, token: requirements.asset })
        if (answer.success) sweeps.push({ transaction: answer.transaction, amount: answer.amount ?? '' })
        else if (answer.errorReason !== R.nothingToSettle) throw new Error(`sweep failed: ${answer.errorReason ?? 'unknown'} ${answer.errorMessage ?? ''}`.trim())
      }
      if (pending.length > 0) await store.writeMark(PENDING_SWEEPS, '[]')
    }
    // Reported once the others are claimed and swept: a channel whose voucher the contract refuses.
    if (refused.length > 0) throw new Error(`claims refused for ${refused.length} channel(s), the others claimed: ${refused.join('; ')}`)
    return { claims, sweeps }
  } finally {
    await store.release(POLICY_LEASE, holder)
  }
}

function isDue(rows: readonly Row[], options: ClaimPolicyOptions, now: number, lastClaimAt: number): boolean {
  if (rows.length === 0) return false
  // A pending withdrawal finalizes after its delay: what is unclaimed by then is lost.
  if (rows.some((r) => r.state.withdrawRequestedAt > 0)) return true
  if (now - lastClaimAt >= (options.everySeconds ?? 300) * 1000) return true
  const perChannel = options.aboveAmountPerChannel
  if (perChannel !== undefined && rows.some((r) => r.state.charged - r.claimed >= perChannel)) return true
  if (options.aboveAmount !== undefined) {
    const byToken = new Map<string, bigint>()
    for (const r of rows) {
      const key = `${r.state.network}|${r.state.config.token.toLowerCase()}`
      byToken.set(key, (byToken.get(key) ?? 0n) + r.state.charged - r.claimed)
    }
    if ([...byToken.values()].some((total) => total >= options.aboveAmount!)) return true
  }
  return false
}

/**
 * Claims rows in one transaction and records their claimed totals. A claim is all-or-nothing: when
 * it fails to simulate, the rows are claimed in halves, so one bad row (a voucher the contract
 * refuses) delays no other channel; the rows refused alone go to `refused`. When the facilitator
 * finds that no row raises its channel's total (a claim that landed before a crash, unrecorded), the
 * rows are tried the same way, and those refused so alone are recorded as claimed.
 */
async function claimRows(runtime: BatchRuntime, requirements: PaymentRequirementsV2, rows: readonly Row[], refused: string[]): Promise<{ transaction: string; channels: number }[]> {
  const answer = await settle(runtime, requirements, await claimPayload(runtime, rows))
  if (answer.success) {
    for (const r of rows) await runtime.store.recordClaimed(r.state.channelId, r.state.charged)
    return [{ transaction: answer.transaction, channels: rows.length }]
  }
  const splittable = answer.errorReason === R.claimPayload || answer.errorReason === R.claimSimulationFailed
  if (splittable && rows.length > 1) {
    const half = Math.ceil(rows.length / 2)
    return [...(await claimRows(runtime, requirements, rows.slice(0, half), refused)), ...(await claimRows(runtime, requirements, rows.slice(half), refused))]
  }
  if (answer.errorReason === R.claimPayload) {
    await runtime.store.recordClaimed(rows[0]!.state.channelId, rows[0]!.state.charged)
    return []
  }
  if (answer.errorReason === R.claimSimulationFailed) {
    refused.push(`${rows[0]!.state.channelId}: ${answer.errorMessage ?? answer.errorReason}`)
    return []
  }
  throw new Error(`claim failed: ${answer.errorReason ?? 'unknown'} ${answer.errorMessage ?? ''}`.trim())
}

async function claimPayload(runtime: BatchRuntime, rows: readonly Row[]): Promise<Record<string, unknown>> {
  const claims = rows.map((r) => ({ voucher: { channel: r.state.config, maxClaimableAmount: r.state.signedMaxClaimable.toString() }, signature: r.state.signature, totalClaimed: r.state.charged.toString() }))
  if (!runtime.authorizer) return { type: 'claim', claims }
  const chainId = Number(rows[0]!.state.network.split(':')[1])
  const typed = claimBatchTypedData(
    chainId,
    rows.map((r) => ({ voucher: { channel: normalizeChannelConfig(r.state.config), maxClaimableAmount: r.state.signedMaxClaimable }, signature: r.state.signature, totalClaimed: r.state.charged })),
  )
  return { type: 'claim', claims, claimAuthorizerSignature: await runtime.authorizer.signTypedData(typed) }
}

function settle(runtime: BatchRuntime, requirements: PaymentRequirementsV2, payload: Record<string, unknown>): Promise<SettleResponse> {
  return runtime.facilitator.settle({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload }, paymentRequirements: requirements })
}

/** The requirements of server-made payloads (as the official channel manager writes them: amount 0). */
function requirementsOf(state: Pick<ChannelState, 'network'> & { config: Pick<ChannelState['config'], 'token' | 'receiver'> }): PaymentRequirementsV2 {
  return { scheme: BATCH_SETTLEMENT_SCHEME, network: state.network, asset: state.config.token, amount: '0', payTo: state.config.receiver, maxTimeoutSeconds: 0, extra: {} }
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group) group.push(item)
    else groups.set(k, [item])
  }
  return [...groups.values()]
}

const max = (a: bigint, b: bigint) => (a > b ? a : b)
