/**
 * The WebAssembly transaction signer must produce exactly viem's bytes: the
 * transaction hash is recorded before broadcast, and a different signature
 * would be a different transaction.
 */
import { bytesToHex, parseTransaction, recoverTransactionAddress, type Hex, type TransactionSerializable } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { privateKeySigner } from '../../src/evm/index.js'
import { loadTinySecp256k1 } from '../../src/evm/secp256k1-wasm.js'

const random = (bytes: number) => bytesToHex(crypto.getRandomValues(new Uint8Array(bytes)))
const randomBig = (bytes: number) => BigInt(random(bytes))

function randomTransaction(type: 'eip1559' | 'legacy' | 'eip2930'): TransactionSerializable {
  const common = { chainId: 1 + Number(randomBig(2)), nonce: Number(randomBig(3)), to: random(20) as Hex, data: random(1 + Number(randomBig(1))) as Hex, gas: randomBig(3), value: randomBig(2) }
  if (type === 'legacy') return { ...common, type, gasPrice: randomBig(5) }
  if (type === 'eip2930') return { ...common, type, gasPrice: randomBig(5), accessList: [] }
  return { ...common, type, maxFeePerGas: randomBig(5), maxPriorityFeePerGas: randomBig(3) }
}

describe('privateKeySigner', () => {
  it('runs on tiny-secp256k1 here (the optional dependency is installed)', async () => {
    expect(await loadTinySecp256k1()).toBeDefined()
  })

  it('signs 100 random EIP-1559 and legacy transactions byte for byte as viem does', async () => {
    for (let i = 0; i < 100; i++) {
      const key = generatePrivateKey()
      const transaction = randomTransaction(i % 2 ? 'legacy' : 'eip1559')
      const ours = await privateKeySigner(key).signTransaction(transaction)
      expect(ours).toBe(await privateKeyToAccount(key).signTransaction(transaction))
      expect(await recoverTransactionAddress({ serializedTransaction: ours as never })).toBe(privateKeyToAccount(key).address)
    }
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

  it('refuses a malformed key when it is made, not when it signs', () => {
    expect(() => privateKeySigner('0x1234')).toThrow()
  })
})
