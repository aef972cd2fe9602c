/**
 * The fixed-shape Permit2 witness digests must be viem's hashTypedData, bit for bit: a payer's
 * signature is checked against them (and Permit2 checks the same digest on chain).
 */
import fc from 'fast-check'
import { bytesToHex, getAddress, hashTypedData, type Address } from 'viem'
import { beforeAll, describe, expect, it } from 'vitest'
import { keccakBackend, loadKeccak } from '../../src/evm/crypto/keccak.js'
import { hashPermit2Witness, hashUptoWitness, permit2TypedData, uptoTypedData, type UptoWitnessMessage } from '../../src/evm/codec/permit2-typed-data.js'
import { UINT256_MAX } from '../../src/evm/codec/typed-data.js'

// Lowercase and EIP-55 checksummed, as payloads carry them.
const address = fc
  .tuple(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.boolean())
  .map(([bytes, checksum]) => (checksum ? getAddress(bytesToHex(bytes)) : bytesToHex(bytes)) as Address)
const uint256 = fc.oneof(fc.constantFrom(0n, 1n, 255n, 256n, UINT256_MAX), fc.bigInt({ min: 0n, max: UINT256_MAX }), fc.bigInt({ min: 0n, max: 2n ** 64n }))
const chainId = fc.oneof(fc.constantFrom(1, 8453, 84532, 31337, 0), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }))
const message = fc.record({
  token: address,
  amount: uint256,
  spender: address,
  nonce: uint256,
  deadline: uint256,
  to: address,
  facilitator: address,
  validAfter: uint256,
}) as fc.Arbitrary<UptoWitnessMessage>

describe.each(['viem', 'hash-wasm'] as const)('Permit2 witness digests (keccak: %s)', (backend) => {
  beforeAll(async () => {
    // The viem run comes first, before anything in this file loads the WebAssembly hasher.
    if (backend === 'hash-wasm') await loadKeccak()
    expect(keccakBackend()).toBe(backend)
  })

  it('exact: Witness(address to,uint256 validAfter) digest equals viem hashTypedData on 500 random messages', () => {
    fc.assert(
      fc.property(chainId, message, (id, m) => {
        expect(hashPermit2Witness(id, m)).toBe(hashTypedData(permit2TypedData(id, m)))
      }),
      { numRuns: 500 },
    )
  })

  it('upto: Witness(address to,address facilitator,uint256 validAfter) digest equals viem hashTypedData on 500 random messages', () => {
    fc.assert(
      fc.property(chainId, message, (id, m) => {
        expect(hashUptoWitness(id, m)).toBe(hashTypedData(uptoTypedData(id, m)))
      }),
      { numRuns: 500 },
    )
  })
})

describe('Permit2 witness digests out of shape', () => {
  const m: UptoWitnessMessage = {
    token: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    amount: 1000n,
    spender: '0x402085c248EeA27D92E8b30b2C58ed07f9E20001',
    nonce: 7n,
    deadline: 1_900_000_000n,
    to: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    facilitator: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    validAfter: 0n,
  }

  it('hands a bad checksum or an out-of-range number to viem, which throws as before', () => {
    const badChecksum = { ...m, to: '0x209693bc6afc0C5328bA36FaF03C514EF312287C' as Address }
    expect(() => hashTypedData(permit2TypedData(1, badChecksum))).toThrow()
    expect(() => hashPermit2Witness(1, badChecksum)).toThrow()
    expect(() => hashUptoWitness(1, { ...m, facilitator: badChecksum.to })).toThrow()
    expect(() => hashPermit2Witness(1, { ...m, amount: UINT256_MAX + 1n })).toThrow()
    expect(() => hashUptoWitness(1, { ...m, nonce: -1n })).toThrow()
  })

  it('keeps one domain separator per chain: digests on different chains differ', () => {
    expect(hashPermit2Witness(1, m)).not.toBe(hashPermit2Witness(8453, m))
    expect(hashPermit2Witness(8453, m)).toBe(hashTypedData(permit2TypedData(8453, m)))
  })
})
