/**
 * withDeadline ends a caller's wait when its budget is spent; the work it stops
 * waiting for may still fail later, and that failure must not surface as an
 * unhandled rejection (Node ends the process on one by default).
 */
import { describe, expect, it } from 'vitest'
import { withDeadline } from '../../src/core/deadline.js'

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
