import { describe, expect, it } from 'vitest'
import type { FacilitatorError } from '../../src/errors/facilitator-error.js'
import { exceedsDepth, readJsonBody } from '../../src/http/read-body.js'

const nest = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`

describe('exceedsDepth', () => {
  it('tells nesting past the limit from nesting at it, for arrays, objects and both', () => {
    expect(exceedsDepth(nest(32), 32)).toBe(false)
    expect(exceedsDepth(nest(33), 32)).toBe(true)
    expect(exceedsDepth('{"a":'.repeat(33) + '1' + '}'.repeat(33), 32)).toBe(true)
    expect(exceedsDepth('{"a":'.repeat(32) + '1' + '}'.repeat(32), 32)).toBe(false)
    expect(exceedsDepth('[{"a":'.repeat(17) + '1' + '}]'.repeat(17), 32)).toBe(true)
  })

  it('counts depth, not brackets: many shallow brackets pass', () => {
    const wide = `[${Array.from({ length: 500 }, () => '{"a":[1]}').join(',')}]`
    expect(exceedsDepth(wide, 32)).toBe(false)
    expect(exceedsDepth(wide, 2)).toBe(true)
  })

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(exceedsDepth(JSON.stringify({ memo: '['.repeat(100) }), 32)).toBe(false)
    expect(exceedsDepth(JSON.stringify({ memo: `\\"${'{'.repeat(100)}` }), 32)).toBe(false)
    expect(exceedsDepth(JSON.stringify({ memo: '"' + '['.repeat(40) }), 32)).toBe(false)
  })

  it('a payment-sized body passes a generous limit and fails a tight one', () => {
    const body = JSON.stringify({ x402Version: 2, paymentPayload: { payload: { authorization: { from: '0x1', to: '0x2' }, signature: '0x' } }, paymentRequirements: { extra: { name: 'USDC' } } })
    expect(exceedsDepth(body, 32)).toBe(false)
    expect(exceedsDepth(body, 3)).toBe(true)
  })
})

describe('readJsonBody', () => {
  const read = (text: string) =>
    readJsonBody({ header: (name) => (name === 'content-type' ? 'application/json' : null), bytes: async () => new TextEncoder().encode(text) }, 65_536, 32)
  const refusal = (text: string) => read(text).then(() => null, (error: FacilitatorError) => [error.code, error.message])

  it('parses a JSON body, surrounding blanks included', async () => {
    expect(await read(' {"a":[1]}\n')).toEqual({ a: [1] })
  })

  it('tells an empty or blank body from one that is not JSON', async () => {
    for (const text of ['', ' ', '\r\n\t']) expect(await refusal(text), JSON.stringify(text)).toEqual(['invalid_json', 'the body is empty; send a JSON object'])
    for (const text of ['nul', '{"a":', ' x ']) expect(await refusal(text), text).toEqual(['invalid_json', 'the body is not valid JSON'])
  })
})
