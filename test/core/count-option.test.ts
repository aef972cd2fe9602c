/**
 * Count options (requests in flight, transactions per batch) are whole numbers from 1 to a bound;
 * each adapter refuses anything else when it is built, naming the option.
 */
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { countOption } from '../../src/core/count-option.js'
import { exactEvm } from '../../src/evm/evm-schemes.js'
import { createHttpRpcTransport } from '../../src/svm/rpc/solana-rpc.js'

const BAD = [0, -1, 1.5, 1_001, Number.NaN, Number.POSITIVE_INFINITY]

describe('countOption', () => {
  it('gives the value, or the fallback when none is given', () => {
    expect(countOption(undefined, 8, 1_000, 'x')).toBe(8)
    expect(countOption(1, 8, 1_000, 'x')).toBe(1)
    expect(countOption(1_000, 8, 1_000, 'x')).toBe(1_000)
  })

  it('refuses anything but an integer from 1 to the bound, as misconfigured, naming the option', () => {
    for (const value of BAD) {
      expect(() => countOption(value, 8, 1_000, 'the option')).toThrow(expect.objectContaining({ code: 'misconfigured', message: 'the option must be an integer from 1 to 1000' }))
    }
  })

  it('is applied to maxRpcRequestsInFlight of exactEvm and of the Solana transport', () => {
    const evm = (maxRpcRequestsInFlight: number) =>
      exactEvm({ networks: [{ network: 'base-sepolia', rpcUrls: ['http://127.0.0.1:1'] }], signers: [privateKeyToAccount(generatePrivateKey())], maxRpcRequestsInFlight })
    const svm = (maxInFlight: number) => createHttpRpcTransport({ urls: ['http://127.0.0.1:1'], maxInFlight })
    for (const value of BAD) {
      expect(() => evm(value)).toThrow(expect.objectContaining({ code: 'misconfigured', message: expect.stringContaining('exactEvm: maxRpcRequestsInFlight') }))
      expect(() => svm(value)).toThrow(expect.objectContaining({ code: 'misconfigured', message: expect.stringContaining('maxRpcRequestsInFlight of a Solana network') }))
    }
    expect(() => evm(1_000)).not.toThrow()
    expect(() => svm(1)).not.toThrow()
  })
})
