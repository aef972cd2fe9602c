/**
 * What the `exact` differential tests (test/interop/evm-exact-*differential.test.ts) share: one
 * /verify body sent to our facilitator and to the official one (or one body per side, when the payment
 * must name the facilitator it goes to, as upto's witness does), what a client sees of each answer
 * (isValid, invalidReason, payer), a printed table of both, and the two assertions (same answer, or
 * a documented difference asserted exactly on each side).
 */
import { expect } from 'vitest'
import type { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import type { createFacilitator } from '../../src/facilitator/facilitator.js'

export type Json = Record<string, unknown>
/** A /verify or /settle body as both facilitators take it (the official one its two halves). */
export interface Body {
  x402Version: number
  paymentPayload: Json
  paymentRequirements: Json
}
/** One body for both sides, or each side its own (the same payment but for the facilitator it names). */
export type Bodies = Body | { ours: Body; official: Body }
export type Side = 'ours' | 'official'
export const bodyFor = (bodies: Bodies, side: Side): Body => ('x402Version' in bodies ? bodies : bodies[side])

export interface Answer {
  ok: boolean
  reason: string | null
  payer: string | null
}
/** An answer, or `threw` when the facilitator threw instead of answering (an HTTP 500 through its server). */
export type Seen = Answer | { threw: true }

export const invalid = (reason: string, payer: string | null): Answer => ({ ok: false, reason, payer })

const label = (s: Seen) => ('threw' in s ? 'throws' : `${s.ok ? 'valid' : 'invalid'}${s.reason ? ` \`${s.reason}\`` : ''}${s.payer ? '' : ' (no payer)'}`)

/** The comparisons of one test file, over its two facilitators (read when called: they start in beforeAll). */
export function exactDifferential(sides: () => { ours: ReturnType<typeof createFacilitator>; official: x402Facilitator }) {
  const table: string[] = []

  async function see(side: Side, body: Body): Promise<Seen> {
    const { ours, official } = sides()
    try {
      const r = side === 'ours' ? await ours.verify(body) : await official.verify(body.paymentPayload as unknown as OfficialPayload, body.paymentRequirements as unknown as OfficialRequirements)
      return { ok: r.isValid, reason: r.invalidReason ?? null, payer: r.payer ?? null }
    } catch {
      return { threw: true }
    }
  }

  async function both(name: string, bodies: Bodies) {
    const [a, b] = [await see('ours', bodyFor(bodies, 'ours')), await see('official', bodyFor(bodies, 'official'))]
    table.push(`| ${name} | ${label(a)} | ${label(b)} |`)
    return [a, b] as const
  }

  return {
    table,
    /** The table of every comparison so far, as Markdown. */
    printTable: () => table.length && console.log(['| case | ours | official |', '|---|---|---|', ...table].join('\n')),
    /** Both sides verify `body` and answer the same: `expected` (payer included). */
    async sameVerify(name: string, body: Bodies, expected: Answer) {
      const [a, b] = await both(name, body)
      expect(b, 'official').toEqual(expected)
      expect(a, 'ours').toEqual(b)
    },
    /** Both sides verify `body`, with a documented difference: each answer is asserted exactly. */
    async differentVerify(name: string, body: Bodies, oursSees: Answer, officialSees: Answer | 'throws') {
      const [a, b] = await both(name, body)
      expect(a, 'ours').toEqual(oursSees)
      expect(b, 'official').toEqual(officialSees === 'throws' ? { threw: true } : officialSees)
    },
  }
}
