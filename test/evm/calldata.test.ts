/**
 * The hand-written calldata must be viem's ABI coder's, byte for byte (the chain reads it), and the
 * aggregate3 reader must read what viem reads and refuse what does not fit: its input comes from an RPC.
 */
import { randomBytes } from 'node:crypto'
import { bytesToHex, decodeFunctionResult, encodeAbiParameters, encodeFunctionData, getAddress, type Address, type Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import { eip3009Abi, erc1271Abi, multicall3Abi } from '../../src/evm/codec/abi.js'
import {
  aggregate3Calldata,
  allowanceCalldata,
  authorizationStateCalldata,
  balanceOfCalldata,
  decodeAggregate3Result,
  exactProxySettleCalldata,
  isValidSignatureCalldata,
  nonceBitmapCalldata,
  PERMIT2_GETTER_CALLDATA,
  transferWithAuthorizationBytesCalldata,
  transferWithAuthorizationVrsCalldata,
  uptoProxySettleCalldata,
} from '../../src/evm/codec/calldata.js'
import { erc20AllowanceAbi, exactPermit2ProxyAbi, permit2NonceBitmapAbi, uptoPermit2ProxyAbi } from '../../src/evm/codec/permit2-abi.js'
import { UINT256_MAX, type AuthorizationMessage } from '../../src/evm/codec/typed-data.js'

const random = (bytes: number) => bytesToHex(randomBytes(bytes))
const pick = <T>(values: readonly T[]): T => values[Math.floor(Math.random() * values.length)]!
const randomUint = (): bigint => pick([0n, 1n, UINT256_MAX, BigInt(random(pick([1, 8, 31, 32])))])
// Data lengths on and off the 32-byte word boundary, empty included.
const randomData = (): Hex => random(pick([0, 1, 31, 32, 33, 65, 228, 1000]))
// Lowercase and EIP-55 checksummed, as payloads carry them.
const address = (): Address => pick([(a: Address) => a, getAddress])(random(20) as Address)

function randomAuthorization(): AuthorizationMessage {
  return { from: address(), to: address(), value: randomUint(), validAfter: randomUint(), validBefore: randomUint(), nonce: random(32) as Hex }
}
const head = (a: AuthorizationMessage) => [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const

describe('calldata', () => {
  it('encodes 200 random calls of each shape as viem does', () => {
    for (let i = 0; i < 200; i++) {
      const a = randomAuthorization()
      expect(balanceOfCalldata(a.from)).toBe(encodeFunctionData({ abi: eip3009Abi, functionName: 'balanceOf', args: [a.from] }))
      expect(authorizationStateCalldata(a.from, a.nonce)).toBe(encodeFunctionData({ abi: eip3009Abi, functionName: 'authorizationState', args: [a.from, a.nonce] }))
      const [v, r, s] = [pick([27, 28, 0, 255]), random(32) as Hex, random(32) as Hex]
      expect(transferWithAuthorizationVrsCalldata(a, v, r, s)).toBe(encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [...head(a), v, r, s] }))
      const signature = randomData()
      expect(transferWithAuthorizationBytesCalldata(a, signature)).toBe(encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [...head(a), signature] }))
      expect(isValidSignatureCalldata(a.nonce, signature)).toBe(encodeFunctionData({ abi: erc1271Abi, functionName: 'isValidSignature', args: [a.nonce, signature] }))
      const calls = Array.from({ length: pick([0, 1, 3, 5]) }, () => ({ target: address(), allowFailure: pick([true, false]), callData: randomData() }))
      expect(aggregate3Calldata(calls)).toBe(encodeFunctionData({ abi: multicall3Abi, functionName: 'aggregate3', args: [calls] }))
    }
  })

  it('encodes 200 random Permit2 calls of each shape as viem does (the proxies\' settle, allowance, nonceBitmap, PERMIT2)', () => {
    expect(PERMIT2_GETTER_CALLDATA).toBe(encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'PERMIT2' }))
    for (let i = 0; i < 200; i++) {
      // Signatures of 65 and 64 bytes (EIP-2098), and any other length a wallet's may have.
      const p = { token: address(), amount: randomUint(), nonce: randomUint(), deadline: randomUint(), from: address(), to: address(), validAfter: randomUint(), signature: pick([random(65), random(64), randomData()]) as Hex }
      const permit = { permitted: { token: p.token, amount: p.amount }, nonce: p.nonce, deadline: p.deadline }
      expect(exactProxySettleCalldata(p)).toBe(encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'settle', args: [permit, p.from, { to: p.to, validAfter: p.validAfter }, p.signature] }))
      const facilitator = address()
      const charge = randomUint()
      expect(uptoProxySettleCalldata({ ...p, facilitator }, charge)).toBe(
        encodeFunctionData({ abi: uptoPermit2ProxyAbi, functionName: 'settle', args: [permit, charge, p.from, { to: p.to, facilitator, validAfter: p.validAfter }, p.signature] }),
      )
      expect(allowanceCalldata(p.from, p.to)).toBe(encodeFunctionData({ abi: erc20AllowanceAbi, functionName: 'allowance', args: [p.from, p.to] }))
      expect(nonceBitmapCalldata(p.from, p.nonce >> 8n)).toBe(encodeFunctionData({ abi: permit2NonceBitmapAbi, functionName: 'nonceBitmap', args: [p.from, p.nonce >> 8n] }))
    }
  })

  it('writes lowercase hex whatever the casing of its input', () => {
    const a = { ...randomAuthorization(), from: '0xABCDEF0123456789ABCDEF0123456789ABCDEF01' as Address }
    expect(balanceOfCalldata(a.from)).toBe(balanceOfCalldata(a.from.toLowerCase() as Address))
    expect(balanceOfCalldata(a.from)).toMatch(/^0x[0-9a-f]+$/)
  })

  it('refuses input out of shape instead of encoding something else', () => {
    const a = randomAuthorization()
    expect(() => balanceOfCalldata('0x1234' as Address)).toThrow(/20-byte address/)
    expect(() => authorizationStateCalldata(a.from, '0x12' as Hex)).toThrow(/32 bytes/)
    expect(() => transferWithAuthorizationVrsCalldata({ ...a, value: UINT256_MAX + 1n }, 27, a.nonce, a.nonce)).toThrow(/uint256/)
    expect(() => transferWithAuthorizationVrsCalldata({ ...a, value: -1n }, 27, a.nonce, a.nonce)).toThrow(/uint256/)
    expect(() => transferWithAuthorizationVrsCalldata(a, 256, a.nonce, a.nonce)).toThrow(/uint8/)
    expect(() => transferWithAuthorizationBytesCalldata(a, '0x123' as Hex)).toThrow(/hex bytes/)
    const p = { token: a.from, amount: 1n, nonce: 1n, deadline: 1n, from: a.from, to: a.to, validAfter: 0n, signature: a.nonce }
    expect(() => exactProxySettleCalldata({ ...p, amount: UINT256_MAX + 1n })).toThrow(/uint256/)
    expect(() => exactProxySettleCalldata({ ...p, token: '0x12' as Address })).toThrow(/20-byte address/)
    expect(() => uptoProxySettleCalldata({ ...p, facilitator: a.to }, -1n)).toThrow(/uint256/)
    expect(() => uptoProxySettleCalldata({ ...p, facilitator: a.to, signature: '0xzz' as Hex }, 1n)).toThrow(/hex bytes/)
  })

  it('reads 200 random aggregate3 answers as viem does', () => {
    const outputs = multicall3Abi[0].outputs
    for (let i = 0; i < 200; i++) {
      const results = Array.from({ length: pick([0, 1, 3, 7]) }, () => ({ success: pick([true, false]), returnData: randomData() }))
      const data = encodeAbiParameters(outputs, [results])
      const viem = decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data })
      expect(decodeAggregate3Result(data, results.length)).toEqual(viem)
      expect(decodeAggregate3Result(data, results.length)).toEqual(results)
      // Hex digits in either case are read the same, and come back lowercase as viem gives them.
      expect(decodeAggregate3Result(data.toUpperCase().replace('0X', '0x') as Hex, results.length)).toEqual(viem)
    }
  })

  it('refuses an aggregate3 answer that is not one: truncated, pointing past its end, a bool of 2, another number of results', () => {
    const data = encodeAbiParameters(multicall3Abi[0].outputs, [[{ success: true, returnData: random(40) as Hex }]])
    const word = (n: bigint) => n.toString(16).padStart(64, '0')
    const at = (hex: Hex, index: number, value: string) => `0x${hex.slice(2, 2 + index * 64)}${value}${hex.slice(2 + (index + 1) * 64)}` as Hex
    // Layout: [0] array offset, [1] count, [2] tuple offset, [3] success, [4] bytes offset, [5] length, [6..7] bytes.
    expect(decodeAggregate3Result(data, 1)).toHaveLength(1)
    expect(() => decodeAggregate3Result(data, 3)).toThrow(/has 1 results for 3 calls/)
    expect(() => decodeAggregate3Result(encodeAbiParameters(multicall3Abi[0].outputs, [[]]), 3)).toThrow(/has 0 results for 3 calls/)
    expect(() => decodeAggregate3Result('0x', 1)).toThrow(/ends before/)
    expect(() => decodeAggregate3Result('0x12345' as Hex, 1)).toThrow(/not hex bytes/)
    expect(() => decodeAggregate3Result(data.slice(0, -64) as Hex, 1)).toThrow(/runs past its end/)
    const size = BigInt((data.length - 2) / 2)
    expect(() => decodeAggregate3Result(at(data, 0, word(size + 1n)), 1)).toThrow(/points past its end/)
    expect(() => decodeAggregate3Result(at(data, 1, word(2n ** 200n)), 1)).toThrow(/out-of-range word/)
    expect(() => decodeAggregate3Result(at(data, 3, word(2n)), 1)).toThrow(/neither 0 nor 1/)
    expect(() => decodeAggregate3Result(at(data, 5, word(200n)), 1)).toThrow(/runs past its end/)
  })
})
