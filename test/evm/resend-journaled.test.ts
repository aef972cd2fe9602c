import type { Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import type { AdapterServices } from '../../src/core/adapter.js'
import { resendJournaled, type JournalNode } from '../../src/evm/chain/network-runtime.js'

const SENDER = '31337:0xabc'
const journalOf = (sequences: readonly number[], raw = (n: number) => `0x0${n}` as string | undefined): AdapterServices => ({
  journaled: async (sender, from) =>
    sequences.filter((sequence) => sender === SENDER && sequence >= from).map((sequence) => ({ transaction: `tx${sequence}`, ...(raw(sequence) === undefined ? {} : { raw: raw(sequence)! }), slot: { sender, sequence } })),
})
/** A node that would land everything and takes everything, except as told. */
const nodeWith = (overrides: Partial<JournalNode> = {}, sent: Hex[] = []): JournalNode => ({
  wouldLand: async () => true,
  send: async (raw) => (sent.push(raw), 'sent'),
  ...overrides,
})

describe('re-sending what a dead process journaled, at the first nonce read', () => {
  it('re-sends the run from the chain count in order and hands out the nonce after it', async () => {
    const sent: Hex[] = []
    expect(await resendJournaled(journalOf([5, 6, 7]), SENDER, 5, nodeWith({}, sent))).toBe(8)
    expect(sent).toEqual(['0x05', '0x06', '0x07'])
  })

  it('stops at a gap, at one journaled without its bytes, at one the node will not take', async () => {
    expect(await resendJournaled(journalOf([5, 7]), SENDER, 5, nodeWith())).toBe(6)
    expect(await resendJournaled(journalOf([5, 6], (n) => (n === 5 ? undefined : `0x0${n}`)), SENDER, 5, nodeWith())).toBe(5)
    expect(await resendJournaled(journalOf([5, 6, 7]), SENDER, 5, nodeWith({ send: async (raw) => (raw === '0x06' ? 'nonce_used' : 'sent') }))).toBe(6)
  })

  it('sends nothing that would no longer land (an expired authorization, a fee cap under the base fee): its nonce is handed out again', async () => {
    const sent: Hex[] = []
    expect(await resendJournaled(journalOf([5, 6]), SENDER, 5, nodeWith({ wouldLand: async (raw) => raw !== '0x06' }, sent))).toBe(6)
    expect(sent).toEqual(['0x05'])
  })

  it('keeps the chain count when nothing is journaled; a fault of the store or the node fails the read', async () => {
    expect(await resendJournaled(journalOf([]), SENDER, 5, nodeWith())).toBe(5)
    await expect(resendJournaled({ journaled: () => Promise.reject(new Error('store down')) }, SENDER, 5, nodeWith())).rejects.toThrow('store down')
    await expect(resendJournaled(journalOf([5]), SENDER, 5, nodeWith({ send: () => Promise.reject(new Error('rpc down')) }))).rejects.toThrow('rpc down')
    await expect(resendJournaled(journalOf([5]), SENDER, 5, nodeWith({ wouldLand: () => Promise.reject(new Error('rpc down')) }))).rejects.toThrow('rpc down')
  })
})
