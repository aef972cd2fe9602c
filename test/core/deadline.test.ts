/**
 * withDeadline ends a caller's wait when its budget is spent; the work it stops
 * waiting for may still fail later, and that failure must not surface as an
 * unhandled rejection (Node ends the process on one by default).
 */
import { describe, expect, it } from 'vitest'
import { timeBudget, withDeadline } from '../../src/core/deadline.js'

const failLater = (ms: number) => new Promise((_, reject) => setTimeout(() => reject(new Error('the RPC failed')), ms))

describe('withDeadline', () => {
  it('answers timeout at once for a spent budget, and the work failing afterwards is no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      await expect(withDeadline(failLater(20), AbortSignal.abort())).rejects.toMatchObject({ code: 'timeout' })
      await new Promise((resolve) => setTimeout(resolve, 60))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it('answers timeout when the budget runs out first, and the work failing afterwards is no unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      await expect(withDeadline(failLater(40), AbortSignal.timeout(10))).rejects.toMatchObject({ code: 'timeout' })
      await new Promise((resolve) => setTimeout(resolve, 80))
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })
})

describe('timeBudget', () => {
  it('aborts with a TimeoutError when the budget runs out, as AbortSignal.timeout does', async () => {
    const budget = timeBudget(10)
    expect(budget.signal.aborted).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 40))
    expect(budget.signal.aborted).toBe(true)
    expect(budget.signal.reason).toMatchObject({ name: 'TimeoutError' })
  })

  it('never aborts once ended, and leaves no listener on its parent', async () => {
    const parent = new AbortController()
    let listeners = 0
    const add = parent.signal.addEventListener.bind(parent.signal)
    const remove = parent.signal.removeEventListener.bind(parent.signal)
    parent.signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add
    parent.signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove
    const budget = timeBudget(10, parent.signal)
    expect(listeners).toBe(1)
    budget.end()
    expect(listeners).toBe(0)
    parent.abort(new Error('gone'))
    await new Promise((resolve) => setTimeout(resolve, 40))
    expect(budget.signal.aborted).toBe(false)
  })

  it('follows its parent: aborted with the parent\'s reason, at once when the parent already is', () => {
    const parent = new AbortController()
    const budget = timeBudget(60_000, parent.signal)
    const reason = new Error('the request budget ran out')
    parent.abort(reason)
    expect(budget.signal.aborted).toBe(true)
    expect(budget.signal.reason).toBe(reason)
    const late = timeBudget(60_000, parent.signal)
    expect(late.signal.aborted).toBe(true)
    expect(late.signal.reason).toBe(reason)
    budget.end()
    late.end()
  })

  it('bounds withDeadline as AbortSignal.timeout does', async () => {
    const budget = timeBudget(10)
    await expect(withDeadline(new Promise(() => undefined), budget.signal)).rejects.toMatchObject({ code: 'timeout' })
    budget.end()
  })
})
