/**
 * The keccak of the hot paths: its WebAssembly build (hash-wasm) must answer
 * exactly as viem's, for bytes and hex of every length a digest, an address or
 * a transaction has and around the 136-byte block boundaries, and the EIP-55
 * checksum built on it as viem's `checksumAddress`.
 */
import { randomBytes } from 'node:crypto'
import { bytesToHex, checksumAddress, keccak256 as viemKeccak } from 'viem'
import { beforeAll, describe, expect, it } from 'vitest'
import { checksummed, keccak256, keccakBackend, loadKeccak } from '../../src/evm/crypto/keccak.js'

describe('keccak256', () => {
  beforeAll(async () => {
    await loadKeccak()
  })

  it('runs on hash-wasm once loaded (it is installed as an optional dependency)', () => {
    expect(keccakBackend()).toBe('hash-wasm')
  })

  it('answers as viem does for bytes and hex of 0 to 700 bytes, the block boundaries included', () => {
    for (let length = 0; length <= 700; length++) {
      const data = new Uint8Array(randomBytes(length))
      const hex = bytesToHex(data)
      expect(keccak256(data)).toBe(viemKeccak(data))
      expect(keccak256(hex)).toBe(viemKeccak(hex))
      expect(keccak256(data, 'bytes')).toEqual(viemKeccak(data, 'bytes'))
    }
  })

  it('gives one answer however calls interleave with other inputs (one shared hasher)', () => {
    const inputs = Array.from({ length: 50 }, (_, i) => new Uint8Array(randomBytes(i * 13)))
    const first = inputs.map((data) => keccak256(data))
    const again = [...inputs].reverse().map((data) => keccak256(data)).reverse()
    expect(again).toEqual(first)
    expect(first).toEqual(inputs.map((data) => viemKeccak(data)))
  })

  it('refuses a string that is not hex (viem would hash something for it)', () => {
    for (const bad of ['0xzz', '0x1g', '0x12 ', 'abcd', '0XAB', '']) expect(() => keccak256(bad as `0x${string}`)).toThrow()
  })

  it('checksums 1,000 random addresses as viem checksumAddress does', () => {
    for (let i = 0; i < 1_000; i++) {
      const address = new Uint8Array(randomBytes(20))
      expect(checksummed(address)).toBe(checksumAddress(bytesToHex(address)))
    }
  })
})
