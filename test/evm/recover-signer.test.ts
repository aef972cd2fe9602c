/**
 * The fast signer recovery (native or WebAssembly libsecp256k1) must answer
 * exactly what viem answers, for real signatures and for every kind of
 * malformed one, or a payment could be accepted or refused differently
 * depending on the install. Every installed backend is held to it.
 */
import { bytesToHex, checksumAddress, hashTypedData, numberToHex, serializeSignature, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, sign } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { recoverAuthorizationSigner, recoveryBackend, recoverWith, recoverWithViem } from '../../src/evm/crypto/recover-signer.js'
import { loadSecp256k1Backends, type Secp256k1Name } from '../../src/evm/crypto/secp256k1-backend.js'
import { authorizationTypedData, hashAuthorization } from '../../src/evm/codec/typed-data.js'

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const random32 = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
const word = (value: bigint): string => numberToHex(value, { size: 32 }).slice(2)
const vByte = (v: number): string => v.toString(16).padStart(2, '0')

describe('recoverAuthorizationSigner', () => {
  it('uses native secp256k1 when installed, before tiny-secp256k1 (both are here)', async () => {
    expect((await loadSecp256k1Backends()).map((backend) => backend.name)).toEqual(['secp256k1', 'tiny-secp256k1'])
    expect(await recoveryBackend()).toBe('secp256k1')
    const key = generatePrivateKey()
    const digest = random32()
    expect(await recoverAuthorizationSigner(digest, serializeSignature(await sign({ hash: digest, privateKey: key })))).toBe(privateKeyToAccount(key).address)
  })
})

describe.each(['secp256k1', 'tiny-secp256k1'] as Secp256k1Name[])('recovery on %s', (name) => {
  const recover = async (digest: Hex, signature: Hex) => {
    const backend = (await loadSecp256k1Backends()).find((candidate) => candidate.name === name)
    expect(backend, `${name} is installed`).toBeDefined()
    return recoverWith(backend, digest, signature)
  }
  async function expectSameAnswer(digest: Hex, signature: Hex): Promise<string | undefined> {
    const expected = await recoverWithViem(digest, signature)
    const actual = await recover(digest, signature)
    expect(actual, `digest ${digest} signature ${signature}`).toBe(expected)
    return expected
  }

  it('recovers the signer of 200 random signatures exactly as viem does, for v in {0, 1, 27, 28}', async () => {
    for (let i = 0; i < 200; i++) {
      const key = generatePrivateKey()
      const digest = random32()
      const { r, s, yParity = 0 } = await sign({ hash: digest, privateKey: key })
      const address = privateKeyToAccount(key).address
      const body: Hex = `0x${r.slice(2)}${s.slice(2)}`
      const forms: Hex[] = [
        serializeSignature({ r, s, yParity }),
        `0x${body.slice(2)}${vByte(yParity)}`,
        `0x${body.slice(2)}${vByte(yParity + 27)}`,
        `0x${body.slice(2)}${vByte(1 - yParity)}`,
      ]
      for (const form of forms) await expectSameAnswer(digest, form)
      expect(await recover(digest, forms[0]!)).toBe(address)
      // Upper-case hex is still the same signature.
      expect(await recover(digest, `0x${forms[0]!.slice(2).toUpperCase()}`)).toBe(address)
    }
  })

  it('treats high-s signatures as viem does (recovered, the token decides)', async () => {
    for (let i = 0; i < 100; i++) {
      const key = generatePrivateKey()
      const digest = random32()
      const { r, s, yParity = 0 } = await sign({ hash: digest, privateKey: key })
      const highS = N - BigInt(s)
      // (r, n - s) with the flipped parity recovers the same key.
      const flipped: Hex = `0x${r.slice(2)}${word(highS)}${vByte(28 - yParity)}`
      expect(await expectSameAnswer(digest, flipped)).toBe(privateKeyToAccount(key).address)
      await expectSameAnswer(digest, `0x${r.slice(2)}${word(highS)}${vByte(27 + yParity)}`)
    }
  })

  it('refuses what viem refuses: bad v, zero or out-of-range r and s, r off the curve, wrong lengths', async () => {
    const digest = random32()
    const { r, s } = await sign({ hash: digest, privateKey: generatePrivateKey() })
    const cases: Hex[] = []
    for (const v of [2, 3, 26, 29, 35, 36, 0xff]) cases.push(`0x${r.slice(2)}${s.slice(2)}${vByte(v)}`)
    // A v byte that is not hex (parseInt would read "1g" as 1).
    cases.push(`0x${r.slice(2)}${s.slice(2)}1g` as Hex)
    for (const bad of [0n, N, N + 1n, (1n << 256n) - 1n]) {
      cases.push(`0x${word(bad)}${s.slice(2)}1b`, `0x${r.slice(2)}${word(bad)}1b`)
    }
    // EIP-2098 compact (64 bytes) and other lengths never belong to a plain account here.
    cases.push(`0x${r.slice(2)}${s.slice(2)}`, `0x${r.slice(2)}${s.slice(2)}1b00`, '0x', '0x1b')
    for (const signature of cases) {
      expect(await expectSameAnswer(digest, signature)).toBeUndefined()
    }
  })

  it('agrees with viem on 1,000 random byte strings (most recover some key, some no point)', async () => {
    let recovered = 0
    for (let i = 0; i < 1_000; i++) {
      const v = [0, 1, 27, 28][i % 4]!
      const signature: Hex = `0x${random32().slice(2)}${random32().slice(2)}${vByte(v)}`
      if ((await expectSameAnswer(random32(), signature)) !== undefined) recovered++
    }
    // About half of random x values are on the curve: both backends must hit the same ones.
    expect(recovered).toBeGreaterThan(250)
    expect(recovered).toBeLessThan(750)
  })
})

describe('hashAuthorization', () => {
  const randomAddress = (): Hex => bytesToHex(crypto.getRandomValues(new Uint8Array(20)))
  const randomUint = (bytes: number): bigint => BigInt(bytesToHex(crypto.getRandomValues(new Uint8Array(bytes))))

  it('gives the digest viem gives for 1,000 random authorizations and domains', () => {
    for (let i = 0; i < 1_000; i++) {
      const domain = {
        name: i % 7 === 0 ? '' : i % 5 === 0 ? 'Ünïcødé 🪙 Token' : `Token ${i}`,
        version: String(i % 3),
        chainId: [1, 8453, 84532, 0, Number.MAX_SAFE_INTEGER][i % 5]!,
        verifyingContract: i % 2 ? randomAddress() : checksumAddress(randomAddress()),
      }
      const message = {
        from: i % 3 ? checksumAddress(randomAddress()) : randomAddress(),
        to: randomAddress(),
        value: i % 11 === 0 ? (1n << 256n) - 1n : randomUint((i % 32) + 1),
        validAfter: i % 4 === 0 ? 0n : randomUint(4),
        validBefore: randomUint(8),
        nonce: random32(),
      }
      expect(hashAuthorization(domain, message)).toBe(hashTypedData(authorizationTypedData(domain, message)))
    }
  })

  it('keeps domain separators apart: one contract under other names, versions and chains, asked in turn', () => {
    const contract = randomAddress()
    const domains = [
      { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: contract },
      { name: 'USDC', version: '2', chainId: 8453, verifyingContract: contract },
      { name: 'USD Coin', version: '1', chainId: 8453, verifyingContract: contract },
      { name: 'USD Coin', version: '2', chainId: 84532, verifyingContract: contract },
      // Two domains whose fields would run together if the cache key were joined with a separator.
      { name: 'USD\nCoin', version: '2', chainId: 8453, verifyingContract: contract },
      { name: 'USD', version: 'Coin\n2', chainId: 8453, verifyingContract: contract },
    ]
    const message = { from: randomAddress(), to: randomAddress(), value: 1_000n, validAfter: 0n, validBefore: 2n ** 40n, nonce: random32() }
    const digests = new Set<string>()
    for (let round = 0; round < 3; round++) {
      for (const domain of domains) {
        const digest = hashAuthorization(domain, message)
        expect(digest).toBe(hashTypedData(authorizationTypedData(domain, message)))
        digests.add(digest)
      }
    }
    expect(digests.size).toBe(domains.length)
  })

  it('defers to viem, errors included, outside the EIP-3009 layout', () => {
    const domain = { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: randomAddress() }
    const message = { from: randomAddress(), to: randomAddress(), value: 1n, validAfter: 0n, validBefore: 1n, nonce: random32() }
    expect(() => hashAuthorization(domain, { ...message, value: 1n << 256n })).toThrow()
    expect(() => hashAuthorization(domain, { ...message, value: -1n })).toThrow()
    expect(() => hashAuthorization(domain, { ...message, from: '0x1234' })).toThrow()
    expect(() => hashAuthorization(domain, { ...message, nonce: '0x12' })).toThrow()
    // An upper-cased address fails its checksum: viem refuses it, and so do we.
    const shouted = `0x${randomAddress().slice(2).toUpperCase()}` as Hex
    expect(() => hashTypedData(authorizationTypedData(domain, { ...message, from: shouted }))).toThrow()
    expect(() => hashAuthorization(domain, { ...message, from: shouted })).toThrow()
  })
})
