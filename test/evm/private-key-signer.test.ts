/**
 * The libsecp256k1 transaction signer (native or WebAssembly) must produce
 * exactly viem's bytes: the transaction hash is recorded before broadcast, and
 * a different signature would be a different transaction.
 */
import { bytesToHex, parseTransaction, recoverTransactionAddress, type Hex, type TransactionSerializable, type TransactionSerializableEIP1559 } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { privateKeySigner } from '../../src/evm/index.js'
import { signerOn } from '../../src/evm/crypto/private-key-signer.js'
import { loadSecp256k1, loadSecp256k1Backends } from '../../src/evm/crypto/secp256k1-backend.js'

const random = (bytes: number) => bytesToHex(crypto.getRandomValues(new Uint8Array(bytes)))
const randomBig = (bytes: number) => BigInt(random(bytes))

function randomTransaction(type: 'eip1559' | 'legacy' | 'eip2930'): TransactionSerializable {
  const common = { chainId: 1 + Number(randomBig(2)), nonce: Number(randomBig(3)), to: random(20) as Hex, data: random(1 + Number(randomBig(1))) as Hex, gas: randomBig(3), value: randomBig(2) }
  if (type === 'legacy') return { ...common, type, gasPrice: randomBig(5) }
  if (type === 'eip2930') return { ...common, type, gasPrice: randomBig(5), accessList: [] }
  return { ...common, type, maxFeePerGas: randomBig(5), maxPriorityFeePerGas: randomBig(3) }
}

describe('privateKeySigner', () => {
  it('runs on native secp256k1 here (installed, and preferred to tiny-secp256k1)', async () => {
    expect((await loadSecp256k1())?.name).toBe('secp256k1')
  })

  it.each(['secp256k1', 'tiny-secp256k1'])('on %s, signs 100 random EIP-1559 and legacy transactions byte for byte as viem does', async (name) => {
    const backend = (await loadSecp256k1Backends()).find((candidate) => candidate.name === name)
    expect(backend, `${name} is installed`).toBeDefined()
    for (let i = 0; i < 100; i++) {
      const key = generatePrivateKey()
      const transaction = randomTransaction(i % 2 ? 'legacy' : 'eip1559')
      const ours = await signerOn(key, async () => backend).signTransaction(transaction)
      expect(ours).toBe(await privateKeyToAccount(key).signTransaction(transaction))
      expect(await recoverTransactionAddress({ serializedTransaction: ours as never })).toBe(privateKeyToAccount(key).address)
    }
  })

  it('signs through the default backend what viem signs', async () => {
    const key = generatePrivateKey()
    const transaction = randomTransaction('eip1559')
    expect(await privateKeySigner(key).signTransaction(transaction)).toBe(await privateKeyToAccount(key).signTransaction(transaction))
  })

  it('hands other transaction types to viem, and has the key\'s address', async () => {
    const key = generatePrivateKey()
    const signer = privateKeySigner(key)
    expect(signer.address).toBe(privateKeyToAccount(key).address)
    const transaction = randomTransaction('eip2930')
    const signed = await signer.signTransaction(transaction)
    expect(signed).toBe(await privateKeyToAccount(key).signTransaction(transaction))
    expect(parseTransaction(signed).type).toBe('eip2930')
  })

  it('signs as viem does EIP-1559 transactions beyond a settlement\'s shape: an access list, input for data, a signature already on it', async () => {
    const key = generatePrivateKey()
    const base = randomTransaction('eip1559') as TransactionSerializableEIP1559
    const unusual = [
      { ...base, accessList: [{ address: random(20) as Hex, storageKeys: [random(32) as Hex] }] },
      { ...base, data: undefined, input: random(40) as Hex },
      // viem's serializer writes a signature it finds on the transaction into the bytes it signs.
      { ...base, r: random(32) as Hex, s: random(32) as Hex, yParity: 1 },
    ] as TransactionSerializable[]
    for (const transaction of unusual) {
      expect(await privateKeySigner(key).signTransaction(transaction)).toBe(await privateKeyToAccount(key).signTransaction(transaction))
    }
  })

  it('refuses a malformed key when it is made, not when it signs, as misconfigured, never quoting the key', () => {
    const refusal = (key: unknown) => {
      try {
        privateKeySigner(key as `0x${string}`)
      } catch (error) {
        return error as { code?: string; message: string }
      }
      throw new Error('accepted')
    }
    expect(refusal(undefined)).toMatchObject({ code: 'misconfigured', message: expect.stringMatching(/no private key was given/) })
    expect(refusal('')).toMatchObject({ code: 'misconfigured' })
    expect(refusal('0x1234')).toMatchObject({ code: 'misconfigured', message: expect.stringMatching(/64 hex digits \(6 characters\)/) })
    const bare = 'ab'.repeat(32)
    expect(refusal(bare).message).toMatch(/add the 0x prefix/)
    expect(refusal(bare).message).not.toContain(bare)
    // 64 hex digits, but not a key of the curve (zero).
    const zero = `0x${'0'.repeat(64)}`
    expect(refusal(zero)).toMatchObject({ code: 'misconfigured', message: expect.stringMatching(/not a valid secp256k1 key/) })
    expect(refusal(zero).message).not.toContain('0'.repeat(64))
  })
})
