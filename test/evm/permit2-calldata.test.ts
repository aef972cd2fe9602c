/**
 * The hand-written calldata of the Permit2 proxies' settle calls and of a Permit2 verify's reads must
 * be viem's ABI coder's, byte for byte (the chain reads it).
 */
import fc from 'fast-check'
import { bytesToHex, encodeFunctionData, getAddress, type Address, type Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import {
  allowanceCalldata,
  exactSettleCalldata,
  nonceBitmapCalldata,
  noncesCalldata,
  permit2GetterCalldata,
  uptoSettleCalldata,
} from '../../src/evm/calldata.js'
import type { Eip2612Permit } from '../../src/evm/eip2612-extension.js'
import { eip2612NoncesAbi, erc20AllowanceAbi, exactPermit2ProxyAbi, permit2NonceBitmapAbi, uptoPermit2ProxyAbi } from '../../src/evm/permit2-abi.js'
import { UINT256_MAX } from '../../src/evm/typed-data.js'

// Lowercase and EIP-55 checksummed, as payloads carry them.
const address = fc
  .tuple(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.boolean())
  .map(([bytes, checksum]) => (checksum ? getAddress(bytesToHex(bytes)) : bytesToHex(bytes)) as Address)
const uint256 = fc.oneof(fc.constantFrom(0n, 1n, UINT256_MAX), fc.bigInt({ min: 0n, max: UINT256_MAX }), fc.bigInt({ min: 0n, max: 2n ** 64n }))
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => bytesToHex(b))
// Signature lengths on and off the 32-byte word boundary: empty, compact, plain, ERC-1271 blobs.
const signature = fc.oneof(
  fc.constantFrom(0, 1, 31, 32, 33, 64, 65, 66).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
  fc.uint8Array({ maxLength: 1200 }),
).map((b) => bytesToHex(b))
const payment = fc.record({ from: address, token: address, amount: uint256, spender: address, nonce: uint256, deadline: uint256, to: address, facilitator: address, validAfter: uint256, signature })
const permit2612: fc.Arbitrary<Eip2612Permit> = fc.record({ value: uint256, deadline: uint256, nonce: uint256, r: bytes32, s: bytes32, v: fc.oneof(fc.constantFrom(27, 28), fc.integer({ min: 0, max: 255 })) })

type Payment = typeof payment extends fc.Arbitrary<infer T> ? T : never
const permitArg = (p: Payment) => ({ permitted: { token: p.token, amount: p.amount }, nonce: p.nonce, deadline: p.deadline })
const permit2612Arg = (e: Eip2612Permit) => ({ value: e.value, deadline: e.deadline, r: e.r as Hex, s: e.s as Hex, v: e.v })

describe('Permit2 calldata', () => {
  it('exact proxy settle and settleWithPermit equal viem encodeFunctionData on 500 random payments', () => {
    fc.assert(
      fc.property(payment, fc.option(permit2612, { nil: undefined }), (p, e) => {
        const witness = { to: p.to, validAfter: p.validAfter }
        const expected = e
          ? encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'settleWithPermit', args: [permit2612Arg(e), permitArg(p), p.from, witness, p.signature] })
          : encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'settle', args: [permitArg(p), p.from, witness, p.signature] })
        expect(exactSettleCalldata(p, e)).toBe(expected)
      }),
      { numRuns: 500 },
    )
  })

  it('upto proxy settle and settleWithPermit equal viem encodeFunctionData on 500 random payments', () => {
    fc.assert(
      fc.property(payment, uint256, fc.option(permit2612, { nil: undefined }), (p, amount, e) => {
        const witness = { to: p.to, facilitator: p.facilitator, validAfter: p.validAfter }
        const expected = e
          ? encodeFunctionData({ abi: uptoPermit2ProxyAbi, functionName: 'settleWithPermit', args: [permit2612Arg(e), permitArg(p), amount, p.from, witness, p.signature] })
          : encodeFunctionData({ abi: uptoPermit2ProxyAbi, functionName: 'settle', args: [permitArg(p), amount, p.from, witness, p.signature] })
        expect(uptoSettleCalldata(p, amount, e)).toBe(expected)
      }),
      { numRuns: 500 },
    )
  })

  it('the verify reads (allowance, nonceBitmap, PERMIT2, nonces) equal viem encodeFunctionData on 500 random inputs', () => {
    fc.assert(
      fc.property(address, address, uint256, (owner, spender, nonce) => {
        expect(allowanceCalldata(owner, spender)).toBe(encodeFunctionData({ abi: erc20AllowanceAbi, functionName: 'allowance', args: [owner, spender] }))
        expect(nonceBitmapCalldata(owner, nonce >> 8n)).toBe(encodeFunctionData({ abi: permit2NonceBitmapAbi, functionName: 'nonceBitmap', args: [owner, nonce >> 8n] }))
        expect(noncesCalldata(owner)).toBe(encodeFunctionData({ abi: eip2612NoncesAbi, functionName: 'nonces', args: [owner] }))
      }),
      { numRuns: 500 },
    )
    expect(permit2GetterCalldata()).toBe(encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'PERMIT2' }))
  })

  it('refuses input out of shape instead of encoding something else', () => {
    const p = { from: '0x1111111111111111111111111111111111111111', token: '0x2222222222222222222222222222222222222222', amount: 1n, spender: '0x3333333333333333333333333333333333333333', nonce: 1n, deadline: 1n, to: '0x4444444444444444444444444444444444444444', facilitator: '0x5555555555555555555555555555555555555555', validAfter: 0n, signature: '0x12' } as const
    const e: Eip2612Permit = { value: 1n, deadline: 1n, nonce: 0n, r: `0x${'11'.repeat(32)}`, s: `0x${'22'.repeat(32)}`, v: 27 }
    expect(() => exactSettleCalldata({ ...p, amount: UINT256_MAX + 1n })).toThrow(/uint256/)
    expect(() => exactSettleCalldata({ ...p, to: '0x1234' })).toThrow(/20-byte address/)
    expect(() => exactSettleCalldata({ ...p, signature: '0x123' })).toThrow(/hex bytes/)
    expect(() => exactSettleCalldata(p, { ...e, v: 256 })).toThrow(/uint8/)
    expect(() => uptoSettleCalldata(p, -1n)).toThrow(/uint256/)
    expect(() => uptoSettleCalldata(p, 1n, { ...e, r: '0x12' })).toThrow(/32 bytes/)
    expect(() => nonceBitmapCalldata(p.from, UINT256_MAX + 1n)).toThrow(/uint256/)
  })
})
