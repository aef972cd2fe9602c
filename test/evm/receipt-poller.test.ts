import type { Hex } from 'viem'
import { describe, expect, it, vi } from 'vitest'
import { createReceiptPoller, type ReceiptSummary } from '../../src/evm/chain/receipt-poller.js'

const hash = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`

describe('shared receipt poller', () => {
  it('looks up every waiting hash in the same tick and resolves each waiter', async () => {
    const mined = new Map<Hex, ReceiptSummary>()
    const ticks: Hex[][] = []
    let current: Hex[] | undefined
    const poller = createReceiptPoller(async (h) => {
      if (!current) {
        current = []
        ticks.push(current)
        queueMicrotask(() => (current = undefined))
      }
      current.push(h)
      return mined.get(h) ?? null
    })
    const signal = new AbortController().signal
    const waits = Array.from({ length: 20 }, (_, i) => poller.wait(hash(i), { timeoutMs: 5_000, maxIntervalMs: 50, signal }))
    await new Promise((resolve) => setTimeout(resolve, 10))
    for (let i = 0; i < 20; i++) mined.set(hash(i), { status: i % 2 ? '0x1' : '0x0', blockNumber: '0x7' })
    const outcomes = await Promise.all(waits)
    expect(outcomes[1]).toEqual({ status: 'success', blockNumber: 7n })
    expect(outcomes[0]).toEqual({ status: 'reverted', blockNumber: 7n })
    // Lookups travel together: far fewer ticks than lookups.
    expect(ticks.length).toBeLessThan(5)
    expect(ticks[0]).toHaveLength(20)
    expect(poller.pending()).toBe(0)
  })

  it('respects each waiter own bound and abort signal, and retries failed lookups', async () => {
    let calls = 0
    const poller = createReceiptPoller(async () => {
      calls++
      throw new Error('node down')
    })
    const aborting = new AbortController()
    const started = Date.now()
    const short = poller.wait(hash(1), { timeoutMs: 120, maxIntervalMs: 40, signal: new AbortController().signal })
    const aborted = poller.wait(hash(2), { timeoutMs: 5_000, maxIntervalMs: 40, signal: aborting.signal })
    setTimeout(() => aborting.abort(), 30)
    expect(await aborted).toEqual({ status: 'pending' })
    expect(await short).toEqual({ status: 'pending' })
    expect(Date.now() - started).toBeGreaterThanOrEqual(110)
    expect(calls).toBeGreaterThan(2)
    expect(poller.pending()).toBe(0)
    // timeoutMs 0 asks once.
    const once = await poller.wait(hash(3), { timeoutMs: 0, maxIntervalMs: 40, signal: new AbortController().signal })
    expect(once).toEqual({ status: 'pending' })
  })

  it('a receipt from a new block gives the other waiters one lookup at once, without undoing their backoff', async () => {
    const mined = new Map<Hex, ReceiptSummary>()
    const lookups = new Map<Hex, number>()
    const poller = createReceiptPoller(async (h) => {
      lookups.set(h, (lookups.get(h) ?? 0) + 1)
      return mined.get(h) ?? null
    })
    const signal = new AbortController().signal
    const stillPending = new AbortController()
    const slow = poller.wait(hash(1), { timeoutMs: 10_000, maxIntervalMs: 2_000, signal })
    const never = poller.wait(hash(3), { timeoutMs: 10_000, maxIntervalMs: 2_000, signal: stillPending.signal })
    // Lookups of hashes 1 and 3 at 0, 10, 30, 70, 150, 310, 630 and 1,270 ms: the next ones are due at 2,550 ms.
    await new Promise((resolve) => setTimeout(resolve, 1_300))
    mined.set(hash(1), { status: '0x1', blockNumber: '0x9' })
    mined.set(hash(2), { status: '0x1', blockNumber: '0x9' })
    const before = lookups.get(hash(3)) ?? 0
    const woke = Date.now()
    expect(await poller.wait(hash(2), { timeoutMs: 10_000, maxIntervalMs: 2_000, signal })).toEqual({ status: 'success', blockNumber: 9n })
    expect(await slow).toEqual({ status: 'success', blockNumber: 9n })
    expect(Date.now() - woke).toBeLessThan(400)
    // Hash 3 was looked up once more at once, then keeps its backed-off schedule.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((lookups.get(hash(3)) ?? 0) - before).toBe(1)
    stillPending.abort()
    expect(await never).toEqual({ status: 'pending' })
    expect(poller.pending()).toBe(0)
  })

  it('looks up again within a few ms a hash missing from a lookup that found a new block (the node is mining its batch)', async () => {
    vi.useFakeTimers()
    try {
      // A node that took a batch of sends and mines them one block each: one more block at each round of lookups.
      const order = [hash(1), hash(2), hash(3)]
      let mined = 0
      let round: unknown
      const poller = createReceiptPoller(async (h) => {
        if (!round) {
          round = {}
          mined++
          queueMicrotask(() => (round = undefined))
        }
        const index = order.indexOf(h)
        return index < mined ? { status: '0x1', blockNumber: `0x${(index + 1).toString(16)}` } : null
      })
      const signal = new AbortController().signal
      const done: string[] = []
      for (const h of order) void poller.wait(h, { timeoutMs: 5_000, maxIntervalMs: 1_000, signal }).then((o) => done.push(`${h.slice(-1)}:${o.status}`))
      // Lookups at 0, 2 and 4 ms. Without the recheck the second and third wait out their 10 and 20 ms backoff.
      await vi.advanceTimersByTimeAsync(6)
      expect(done).toEqual(['1:success', '2:success', '3:success'])
      expect(poller.pending()).toBe(0)
    } finally {
      vi.useRealTimers()
    }
  })

  it('backs off as before when lookups find no new block', async () => {
    let lookups = 0
    const poller = createReceiptPoller(async () => {
      lookups++
      return null
    })
    const stop = new AbortController()
    const waiting = poller.wait(hash(9), { timeoutMs: 10_000, maxIntervalMs: 1_000, signal: stop.signal })
    await new Promise((resolve) => setTimeout(resolve, 100))
    stop.abort()
    expect(await waiting).toEqual({ status: 'pending' })
    // At 0, 10, 30 and 70 ms: no 2 ms rechecks without a new block.
    expect(lookups).toBeGreaterThanOrEqual(3)
    expect(lookups).toBeLessThanOrEqual(5)
  })

  it('a lookup hurried by a new block and coming back empty backs off as before, even in the same millisecond', async () => {
    vi.useFakeTimers()
    try {
      const lookups = new Map<Hex, number>()
      // Hash 2's lookup is answered when the test says, so that its receipt arrives outside a timer, at the same millisecond as what follows.
      let answerHash2: ((receipt: ReceiptSummary) => void) | undefined
      const poller = createReceiptPoller(async (h) => {
        lookups.set(h, (lookups.get(h) ?? 0) + 1)
        if (h === hash(2)) return new Promise<ReceiptSummary>((resolve) => (answerHash2 = resolve))
        return null
      })
      const stop = new AbortController()
      const never = poller.wait(hash(3), { timeoutMs: 10_000, maxIntervalMs: 2_000, signal: stop.signal })
      // Lookups at 0, 10, 30, 70 and 150 ms: the next one is due at 310 ms.
      await vi.advanceTimersByTimeAsync(200)
      const before = lookups.get(hash(3)) ?? 0
      const found = poller.wait(hash(2), { timeoutMs: 10_000, maxIntervalMs: 2_000, signal: new AbortController().signal })
      await vi.advanceTimersByTimeAsync(0)
      expect(answerHash2).toBeDefined()
      // A receipt from a new block: hash 3 gets one lookup at once, in this same millisecond, and it comes back empty.
      answerHash2!({ status: '0x1', blockNumber: '0x9' })
      expect(await found).toEqual({ status: 'success', blockNumber: 9n })
      await vi.advanceTimersByTimeAsync(0)
      expect((lookups.get(hash(3)) ?? 0) - before).toBe(1)
      // No block came while that lookup was out: no 2 ms recheck, the backoff goes on.
      await vi.advanceTimersByTimeAsync(100)
      expect((lookups.get(hash(3)) ?? 0) - before).toBe(1)
      stop.abort()
      expect(await never).toEqual({ status: 'pending' })
    } finally {
      vi.useRealTimers()
    }
  })
})
