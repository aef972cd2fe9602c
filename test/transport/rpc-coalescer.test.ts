/**
 * The queue in front of one RPC server, on its own: a send function that holds
 * each group until the test lets it go stands in for the server, so the order of
 * events is exact (the transports built on it are tested against anvil and LiteSVM).
 */
import { describe, expect, it } from 'vitest'
import { createRpcCoalescer, Regroup } from '../../src/transport/rpc-coalescer.js'

/** A coalescer over a server whose answers the test releases; `groups` lists what was sent. */
function harness(options: { maxInFlight?: number; maxGroup?: () => number; maxWaitMs?: number } = {}) {
  const groups: string[][] = []
  const pending: { calls: readonly string[]; answer(): void; fail(error: unknown): void }[] = []
  const coalescer = createRpcCoalescer<string, string>(
    (calls) =>
      new Promise((resolve, reject) => {
        groups.push([...calls])
        pending.push({ calls, answer: () => resolve(calls.map((call) => `${call}!`)), fail: reject })
      }),
    { maxInFlight: options.maxInFlight ?? 1, maxGroup: options.maxGroup ?? (() => 100), maxWaitMs: options.maxWaitMs ?? 10_000, expired: (calls) => new Error(`expired ${calls.join()}`) },
  )
  return { coalescer, groups, pending }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0))
/** After the held `together` requests leave: immediates run in order, and a timer may fire before them. */
const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('createRpcCoalescer', () => {
  it('sends alone while a slot is free, groups what waits, and answers each request its own calls', async () => {
    const { coalescer, groups, pending } = harness()
    const a = coalescer.request(['a'])
    const b = coalescer.request(['b1', 'b2'])
    const c = coalescer.request(['c'])
    expect(groups).toEqual([['a']])
    pending[0]!.answer()
    expect(await a).toEqual(['a!'])
    await tick()
    expect(groups).toEqual([['a'], ['b1', 'b2', 'c']])
    pending[1]!.answer()
    expect(await b).toEqual(['b1!', 'b2!'])
    expect(await c).toEqual(['c!'])
  })

  it('a request that waits longer than maxWaitMs fails and is never sent', async () => {
    const { coalescer, groups, pending } = harness({ maxWaitMs: 30 })
    const a = coalescer.request(['a'])
    const b = coalescer.request(['b'])
    await expect(b).rejects.toThrow('expired b')
    pending[0]!.answer()
    await a
    await tick()
    expect(groups).toEqual([['a']])
  })

  it('a request whose signal aborts while it waits is dropped unsent; an aborted signal sends nothing', async () => {
    const { coalescer, groups, pending } = harness()
    const a = coalescer.request(['a'])
    const controller = new AbortController()
    const b = coalescer.request(['b'], { signal: controller.signal })
    const c = coalescer.request(['c'])
    controller.abort(new Error('gave up'))
    await expect(b).rejects.toThrow('gave up')
    await expect(coalescer.request(['d'], { signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow('already')
    pending[0]!.answer()
    await a
    await tick()
    expect(groups).toEqual([['a'], ['c']])
    pending[1]!.answer()
    expect(await c).toEqual(['c!'])
  })

  it('`now` leaves at once even when every slot is taken', async () => {
    const { coalescer, groups } = harness()
    void coalescer.request(['a'])
    void coalescer.request(['b'])
    void coalescer.request(['send'], { now: true })
    expect(groups).toEqual([['a'], ['send']])
  })

  it('while a request is on the wire, `together` requests of one turn leave as one group even with free slots; the rest stay alone', async () => {
    const { coalescer, groups } = harness({ maxInFlight: 8 })
    void coalescer.request(['r1'], { together: true })
    void coalescer.request(['x'])
    void coalescer.request(['r2'], { together: true })
    await Promise.resolve()
    await turn()
    expect(groups).toEqual([['x'], ['r1', 'r2']])
  })

  it('an idle coalescer\'s `together` requests leave at the end of their microtask, without waiting for the turn', async () => {
    const { coalescer, groups } = harness({ maxInFlight: 8 })
    void coalescer.request(['r1'], { together: true })
    void coalescer.request(['r2'], { together: true })
    expect(groups).toEqual([])
    await Promise.resolve()
    expect(groups).toEqual([['r1', 'r2']])
  })

  it('a caller answered by a group finds its slot free: its next `together` request does not wait for the turn', async () => {
    const { coalescer, groups, pending } = harness({ maxInFlight: 8 })
    const first = coalescer.request(['a'], { together: true })
    await Promise.resolve()
    pending[0]!.answer()
    await first
    void coalescer.request(['b'], { together: true })
    await Promise.resolve()
    expect(groups).toEqual([['a'], ['b']])
  })

  it('while a request is on the wire, `together` requests made by different callbacks of one event-loop turn leave as one group', async () => {
    const { coalescer, groups } = harness({ maxInFlight: 8 })
    void coalescer.request(['busy'])
    // Two callbacks of one check phase, as two sockets' callbacks of one poll phase: a microtask checkpoint between them.
    await new Promise<void>((resolve) => {
      setImmediate(() => void coalescer.request(['r1'], { together: true }))
      setImmediate(() => {
        void coalescer.request(['r2'], { together: true })
        resolve()
      })
    })
    expect(groups).toEqual([['busy']])
    await turn()
    expect(groups).toEqual([['busy'], ['r1', 'r2']])
  })

  it('a `together` request aborted while held for the turn is rejected and never sent', async () => {
    const { coalescer, groups } = harness({ maxInFlight: 8 })
    void coalescer.request(['busy'])
    const abort = new AbortController()
    const dropped = coalescer.request(['r1'], { together: true, signal: abort.signal })
    const kept = coalescer.request(['r2'], { together: true })
    await Promise.resolve()
    abort.abort(new Error('caller gone'))
    const outcome = dropped.then(() => 'answered', (error: Error) => error.message)
    await turn()
    expect(groups).toEqual([['busy'], ['r2']])
    expect(await outcome).toBe('caller gone')
    void kept
  })

  it('a `together` request aborted before it leaves is rejected and never sent', async () => {
    const { coalescer, groups } = harness({ maxInFlight: 8 })
    const abort = new AbortController()
    const dropped = coalescer.request(['r1'], { together: true, signal: abort.signal })
    const kept = coalescer.request(['r2'], { together: true })
    abort.abort(new Error('caller gone'))
    const outcome = dropped.then(() => 'answered', (error: Error) => error.message)
    await turn()
    expect(groups).toEqual([['r2']])
    expect(await outcome).toBe('caller gone')
    void kept
  })

  it('a group refused as a whole goes back to the head of the queue and leaves again in groups of maxGroup, in order, one slot each', async () => {
    let limit = 100
    const { coalescer, groups, pending } = harness({ maxGroup: () => limit })
    const first = coalescer.request(['a'])
    const rest = [coalescer.request(['b']), coalescer.request(['c']), coalescer.request(['d'])]
    pending[0]!.answer()
    await first
    await tick()
    expect(groups.at(-1)).toEqual(['b', 'c', 'd'])
    limit = 1
    pending[1]!.fail(new Regroup('refused'))
    await tick()
    expect(groups.slice(2)).toEqual([['b']])
    for (let i = 2; i < 5; i++) {
      pending[i]!.answer()
      await tick()
    }
    expect(groups.slice(2)).toEqual([['b'], ['c'], ['d']])
    expect(await Promise.all(rest)).toEqual([['b!'], ['c!'], ['d!']])
  })

  it('a request whose caller aborted while its group was on the wire is not sent again when the group is refused', async () => {
    const { coalescer, groups, pending } = harness()
    void coalescer.request(['a'])
    const abort = new AbortController()
    const kept = coalescer.request(['b'])
    const dropped = coalescer.request(['c'], { signal: abort.signal })
    pending[0]!.answer()
    await tick()
    expect(groups).toEqual([['a'], ['b', 'c']])
    abort.abort(new Error('caller gone'))
    const outcome = dropped.then(() => 'answered', (error: Error) => error.message)
    pending[1]!.fail(new Regroup('refused'))
    await tick()
    expect(groups.slice(2)).toEqual([['b']])
    expect(await outcome).toBe('caller gone')
    pending[2]!.answer()
    expect(await kept).toEqual(['b!'])
  })

  it('a refused group is back at the head before its slot frees: a request made meanwhile does not jump ahead of it', async () => {
    let limit = 100
    const { coalescer, groups, pending } = harness({ maxGroup: () => limit })
    const first = coalescer.request(['a'])
    void coalescer.request(['b'])
    void coalescer.request(['c'])
    pending[0]!.answer()
    await first
    await tick()
    expect(groups).toEqual([['a'], ['b', 'c']])
    limit = 1
    pending[1]!.fail(new Regroup('refused'))
    // Runs right after the refusal is handled, before any later step of the group's chain.
    queueMicrotask(() => void coalescer.request(['d']))
    await tick()
    expect(groups.slice(2)).toEqual([['b']])
  })

  it('a failed group fails each of its requests', async () => {
    const { coalescer, pending } = harness()
    const a = coalescer.request(['a'])
    const b = coalescer.request(['b'])
    const c = coalescer.request(['c'])
    pending[0]!.answer()
    await a
    await tick()
    pending[1]!.fail(new Error('no answer'))
    await expect(b).rejects.toThrow('no answer')
    await expect(c).rejects.toThrow('no answer')
  })
})
