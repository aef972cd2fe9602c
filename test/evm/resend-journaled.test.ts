import type { Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import type { AdapterServices } from '../../src/core/adapter.js'
import { resendJournaled } from '../../src/evm/chain/network-runtime.js'

const SENDER = '31337:0xabc'
const journalOf = (sequences: readonly number[], raw = (n: number) => `0x0${n}` as string | undefined): AdapterServices => ({
  journaled: async (sender, from) =>
    sequences.filter((sequence) => sender === SENDER && sequence >= from).map((sequence) => ({ transaction: `tx${sequence}`, ...(raw(sequence) === undefined ? {} : { raw: raw(sequence)! }), slot: { sender, sequence } })),
})

describe('re-sending what a dead process journaled, at the first nonce read', () => {
  it('re-sends the run from the chain count in order and hands out the nonce after it', async () => {
    const sent: Hex[] = []
    const next = await resendJournaled(journalOf([5, 6, 7]), SENDER, 5, async (raw) => (sent.push(raw), 'sent'))
    expect(sent).toEqual(['0x05', '0x06', '0x07'])
    expect(next).toBe(8)
  })

  it('stops at a gap, at a transaction the node will not take, and at one journaled without its bytes', async () => {
    expect(await resendJournaled(journalOf([5, 7]), SENDER, 5, async () => 'sent')).toBe(6)
    expect(await resendJournaled(journalOf([5, 6, 7]), SENDER, 5, async (raw) => (raw === '0x06' ? 'nonce_used' : 'sent'))).toBe(6)
    expect(await resendJournaled(journalOf([5, 6], (n) => (n === 5 ? undefined : `0x0${n}`)), SENDER, 5, async () => 'sent')).toBe(5)
  })

  it('keeps the chain count when nothing is journaled, or the journal or the node fails', async () => {
    expect(await resendJournaled(journalOf([]), SENDER, 5, async () => 'sent')).toBe(5)
    expect(await resendJournaled({ journaled: () => Promise.reject(new Error('store down')) }, SENDER, 5, async () => 'sent')).toBe(5)
    let calls = 0
    expect(await resendJournaled(journalOf([5, 6]), SENDER, 5, async () => (++calls === 2 ? Promise.reject(new Error('rpc down')) : 'sent'))).toBe(6)
  })
})
