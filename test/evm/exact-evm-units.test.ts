import { describe, expect, it } from 'vitest'
import { createNonceManager } from '../../src/evm/chain/nonce-manager.js'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { EVM_REJECTION, exactEvm, parseExactEvmPayload } from '../../src/evm/index.js'
import { FacilitatorError } from '../../src/index.js'
import { exactEvmPayloadSchema } from '../../src/evm/exact/authorization.js'

describe('createNonceManager', () => {
  it('reads the chain once for many concurrent callers and hands out consecutive nonces', async () => {
    let reads = 0
    const nonces = createNonceManager(async () => {
      reads++
      await new Promise((resolve) => setTimeout(resolve, 5))
      return 7
    })
    const handed = (await Promise.all(Array.from({ length: 50 }, () => nonces.next()))).map((ticket) => ticket.nonce)
    expect(reads).toBe(1)
    expect([...handed].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => 7 + i))
  })

  it('re-reads the chain after a reset', async () => {
    let count = 3
    const nonces = createNonceManager(async () => count)
    expect((await nonces.next()).nonce).toBe(3)
    expect((await nonces.next()).nonce).toBe(4)
    count = 10
    nonces.reset()
    expect((await nonces.next()).nonce).toBe(10)
  })

  it('passes a failed read to the callers and tries again on the next call', async () => {
    let fail = true
    const nonces = createNonceManager(async () => {
      if (fail) throw new Error('node down')
      return 1
    })
    await expect(nonces.next()).rejects.toThrow('node down')
    fail = false
    expect((await nonces.next()).nonce).toBe(1)
  })

  it('gives each nonce its turn only after every lower held nonce is released, whatever order they ask in', async () => {
    const nonces = createNonceManager(async () => 0)
    const tickets = await Promise.all(Array.from({ length: 6 }, () => nonces.next()))
    const order: number[] = []
    // Ask in reverse, release each as soon as its turn comes (as a send that was answered).
    const turns = [...tickets].reverse().map(async (ticket) => {
      expect(await nonces.turn(ticket)).toBe(true)
      order.push(ticket.nonce)
      nonces.release(ticket)
    })
    await Promise.all(turns)
    expect(order).toEqual([0, 1, 2, 3, 4, 5])
  })

  it('after a reset, holders waiting behind a given-up nonce are told to take a fresh one', async () => {
    let count = 0
    const nonces = createNonceManager(async () => count)
    const [first, second, third] = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    const waiting = [nonces.turn(second!), nonces.turn(third!)]
    expect(await nonces.turn(first!)).toBe(true)
    // The first send failed before the node had it: its nonce is a gap.
    nonces.reset()
    nonces.release(first!)
    expect(await Promise.all(waiting)).toEqual([false, false])
    nonces.release(second!)
    nonces.release(third!)
    // The re-read count fills the gap, and the fresh ticket goes at once.
    count = 0
    const fresh = await nonces.next()
    expect(fresh.nonce).toBe(0)
    expect(await nonces.turn(fresh)).toBe(true)
  })

  it('never hands out again a nonce whose send is on the wire, even when the re-read count does not include it yet', async () => {
    const nonces = createNonceManager(async () => 5)
    const onTheWire = await nonces.next()
    expect(await nonces.turn(onTheWire)).toBe(true)
    const waiting = await nonces.next()
    // Another settle gives up (its budget ran out) and resets; the node still counts 5.
    nonces.reset()
    expect(await nonces.turn(waiting)).toBe(false)
    nonces.release(waiting)
    const fresh = await nonces.next()
    expect(fresh.nonce).toBe(6)
    let went = false
    const turn = nonces.turn(fresh).then((ok) => (went = ok))
    await Promise.resolve()
    expect(went).toBe(false) // it waits for the send below it
    nonces.release(onTheWire)
    await turn
    expect(went).toBe(true)
  })

  it('a queued ticket (handed to the send lane) lets the next one take its turn, and its nonce stays taken until released', async () => {
    const nonces = createNonceManager(async () => 0)
    const [first, second, third] = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    expect(await nonces.turn(first!)).toBe(true)
    let secondWent = false
    const secondTurn = nonces.turn(second!).then((ok) => (secondWent = ok))
    await Promise.resolve()
    expect(secondWent).toBe(false)
    nonces.queued(first!)
    await secondTurn
    expect(secondWent).toBe(true)
    // Queuing a ticket whose turn has not come frees nobody: the third still waits for the second.
    let thirdWent = false
    const thirdTurn = nonces.turn(third!).then((ok) => (thirdWent = ok))
    nonces.queued(third!)
    await Promise.resolve()
    expect(thirdWent).toBe(false)
    nonces.queued(second!)
    await thirdTurn
    expect(thirdWent).toBe(true)
    // Both queued ones may be on the wire: a reset and re-read (the node still counts 0) goes past them.
    nonces.reset()
    nonces.release(third!)
    expect((await nonces.next()).nonce).toBe(2)
  })

  it('giving up a queued nonce dooms the higher ones whose turn came, and the re-read count fills the gap', async () => {
    const nonces = createNonceManager(async () => 0)
    const [first, second, third] = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    expect(await nonces.turn(first!)).toBe(true)
    nonces.queued(first!)
    expect(await nonces.turn(second!)).toBe(true)
    const thirdTurn = nonces.turn(third!)
    // The first was refused; the second got its turn but is not sent yet, the third still waits.
    nonces.giveUp(first!)
    expect(nonces.doomed(second!)).toBe(true)
    expect(await thirdTurn).toBe(false)
    // While the refused first and the doomed second are still held, the node's count (0) is handed out again.
    const fresh = await nonces.next()
    expect(fresh.nonce).toBe(0)
    expect(await nonces.turn(fresh)).toBe(true)
    expect(nonces.doomed(fresh)).toBe(false)
    expect((await nonces.next()).nonce).toBe(1)
  })

  it('a transaction the node took behind a given-up nonce keeps its nonce: the gap is handed out, then the nonces above it', async () => {
    let count = 5
    const nonces = createNonceManager(async () => count)
    const tickets = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    for (const ticket of tickets) {
      expect(await nonces.turn(ticket)).toBe(true)
      nonces.queued(ticket)
    }
    // One batch: 5 taken, 6 refused, 7 taken and parked behind the gap (the node's pending count says 6).
    nonces.accepted(tickets[0]!)
    nonces.giveUp(tickets[1]!)
    nonces.accepted(tickets[2]!)
    for (const ticket of tickets) nonces.release(ticket)
    count = 6
    expect([(await nonces.next()).nonce, (await nonces.next()).nonce]).toEqual([6, 8])
  })

  it('a gap the node has used meanwhile is not handed out again', async () => {
    let count = 0
    const nonces = createNonceManager(async () => count)
    const ticket = await nonces.next()
    expect(await nonces.turn(ticket)).toBe(true)
    nonces.queued(ticket)
    // Unanswered: given up, but the node had it after all.
    nonces.giveUp(ticket)
    nonces.release(ticket)
    count = 1
    expect((await nonces.next()).nonce).toBe(1)
  })

  it('a re-read answered after the send on the wire was taken and released does not hand its nonce out again', async () => {
    let answer: (count: number) => void = () => undefined
    let reads = 0
    const nonces = createNonceManager(() => (reads++ === 0 ? Promise.resolve(0) : new Promise<number>((resolve) => (answer = resolve))))
    const onTheWire = await nonces.next()
    expect(await nonces.turn(onTheWire)).toBe(true)
    nonces.queued(onTheWire)
    // Another settle's signing failed: reset; the re-read leaves before the node processed the send.
    nonces.reset()
    const fresh = nonces.next()
    await Promise.resolve()
    nonces.accepted(onTheWire)
    nonces.release(onTheWire)
    answer(0)
    expect((await fresh).nonce).toBe(1)
  })

  it('a plain reset dooms nothing: queued tickets below a nonce given up elsewhere still go, and the count steps over them', async () => {
    const nonces = createNonceManager(async () => 0)
    const [first, second, third] = await Promise.all([nonces.next(), nonces.next(), nonces.next()])
    for (const ticket of [first!, second!]) {
      expect(await nonces.turn(ticket)).toBe(true)
      nonces.queued(ticket)
    }
    // The third's signing failed: its nonce is given up before its turn.
    nonces.reset()
    nonces.release(third!)
    expect(nonces.doomed(first!) || nonces.doomed(second!)).toBe(false)
    expect((await nonces.next()).nonce).toBe(2)
  })

  it('a ticket that never got its turn holds nothing back after a reset, and its late release frees nobody else', async () => {
    const nonces = createNonceManager(async () => 0)
    const abandoned = await nonces.next()
    nonces.reset()
    const fresh = await nonces.next()
    expect(fresh.nonce).toBe(0)
    expect(await nonces.turn(fresh)).toBe(true)
    const next = await nonces.next()
    let went = false
    const turn = nonces.turn(next).then((ok) => (went = ok))
    nonces.release(abandoned)
    await Promise.resolve()
    expect(went).toBe(false)
    nonces.release(fresh)
    await turn
    expect(went).toBe(true)
  })
})

describe('parseExactEvmPayload', () => {
  const good = {
    signature: `0x${'11'.repeat(65)}`,
    authorization: {
      from: `0x${'aa'.repeat(20)}`,
      to: `0x${'bb'.repeat(20)}`,
      value: '1000',
      validAfter: '0',
      validBefore: '9999999999',
      nonce: `0x${'cc'.repeat(32)}`,
    },
  }

  it('reads numbers as bigints and accepts amount as an alias of value', () => {
    const parsed = parseExactEvmPayload(good)
    expect(parsed).toMatchObject({ authorization: { value: 1000n, validAfter: 0n, validBefore: 9_999_999_999n } })
    const { value: _value, ...rest } = good.authorization
    expect(parseExactEvmPayload({ ...good, authorization: { ...rest, amount: '1000' } })).toMatchObject({ authorization: { value: 1000n } })
  })

  it('refuses value and amount that differ, numbers beyond uint256 and odd-length signatures, naming the field', () => {
    const cases: [unknown, string][] = [
      [{ ...good, authorization: { ...good.authorization, amount: '999' } }, 'authorization.amount'],
      [{ ...good, authorization: { ...good.authorization, value: (1n << 256n).toString() } }, 'authorization.value'],
      [{ ...good, signature: '0x123' }, 'signature'],
      [{ ...good, authorization: { ...good.authorization, from: 'alice' } }, 'authorization.from'],
    ]
    for (const [payload, field] of cases) {
      const parsed = parseExactEvmPayload(payload)
      expect(parsed).toMatchObject({ reason: EVM_REJECTION.invalidPayload })
      expect('message' in parsed && parsed.message).toContain(field)
    }
  })

  it('answers what the schema answers for any payload, valid or not (the hand-read path agrees with zod)', () => {
    // Each field replaced by values the schema may or may not take.
    const variants: Record<string, unknown[]> = {
      signature: [good.signature, '0x', '0x1', `0x${'AB'.repeat(65)}`, `0x${'zz'.repeat(2)}`, 7, null, undefined, `0x${'11'.repeat(16_385)}`],
      from: [good.authorization.from, `0x${'AA'.repeat(20)}`, `0x${'aa'.repeat(19)}`, '', 1, undefined],
      value: ['1000', 1000, 0, -1, 1.5, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY, '01', '', ' 1', '1e3', (1n << 256n).toString(), ((1n << 256n) - 1n).toString(), '9'.repeat(79), undefined, null, 1000n],
      amount: [undefined, '1000', 1000, '999', null],
      asset: [undefined, `0x${'dd'.repeat(20)}`, 'USDC', null],
      validBefore: ['9999999999', 9_999_999_999, -0, '-1', undefined, {}],
      nonce: [good.authorization.nonce, `0x${'CC'.repeat(32)}`, `0x${'cc'.repeat(31)}`, 5],
      extra: [undefined, 'anything'],
    }
    const reference = (raw: unknown) => {
      const parsed = exactEvmPayloadSchema.safeParse(raw)
      if (!parsed.success) return 'refused'
      const { signature, authorization: a } = parsed.data
      return { signature, authorization: { from: a.from, to: a.to, value: a.value ?? a.amount ?? 0n, validAfter: a.validAfter, validBefore: a.validBefore, nonce: a.nonce, asset: a.asset } }
    }
    let checked = 0
    for (const [field, values] of Object.entries(variants)) {
      for (const value of values) {
        for (const other of [undefined, ...(field === 'value' ? variants.amount! : [])]) {
          const authorization: Record<string, unknown> = { ...good.authorization }
          if (field !== 'signature' && field !== 'extra') authorization[field] = value
          if (other !== undefined) authorization.amount = other
          const raw = field === 'signature' ? { ...good, signature: value } : field === 'extra' ? { ...good, extra: value, authorization } : { ...good, authorization }
          const parsed = parseExactEvmPayload(raw)
          const expected = reference(raw)
          if (expected === 'refused') expect(parsed).toMatchObject({ reason: EVM_REJECTION.invalidPayload })
          else expect(parsed).toEqual(expected)
          checked++
        }
      }
    }
    for (const raw of [null, [], 'x', 1, { signature: good.signature }, { authorization: good.authorization }, { ...good, authorization: [] }]) {
      expect(parseExactEvmPayload(raw)).toMatchObject({ reason: EVM_REJECTION.invalidPayload })
    }
    expect(checked).toBeGreaterThan(60)
  })
})

describe('exactEvm configuration', () => {
  it('refuses a maxSettlementGas too small for any transaction', () => {
    const config = { networks: [{ network: 'base-sepolia', rpcUrls: ['http://127.0.0.1:1'] }], signers: [privateKeyToAccount(generatePrivateKey())] }
    expect(() => exactEvm({ ...config, maxSettlementGas: 0n })).toThrow(FacilitatorError)
    expect(() => exactEvm({ ...config, maxSettlementGas: 21_000n })).not.toThrow()
  })
})
