/**
 * The native Ed25519 paths must answer exactly what @solana/kit answers: the
 * fee payer's signature is the transaction id, and a signature checked
 * differently would accept or refuse payments depending on the path.
 */
import {
  createKeyPairSignerFromPrivateKeyBytes,
  generateKeyPairSigner,
  getAddressDecoder,
  signBytes,
  type TransactionPartialSigner,
} from '@solana/kit'
import { describe, expect, it } from 'vitest'
import { createEd25519Verifier, feePayerSigning } from '../../src/svm/crypto/ed25519.js'

const messageOf = (text: string) => new TextEncoder().encode(text)
/** A transaction whose one signer slot is `signer`'s (kit signs only listed signers). */
const transactionOf = (signer: string, messageBytes: Uint8Array) =>
  ({ messageBytes, signatures: { [signer]: null }, lifetimeConstraint: { blockhash: '11111111111111111111111111111111', lastValidBlockHeight: 0n } }) as never

describe('feePayerSigning', () => {
  it('signs as kit does for a KeyPairSigner, without calling its signTransactions', async () => {
    const signer = await createKeyPairSignerFromPrivateKeyBytes(crypto.getRandomValues(new Uint8Array(32)))
    let kitCalls = 0
    const watched = { ...signer, signTransactions: (...args: Parameters<typeof signer.signTransactions>) => (kitCalls++, signer.signTransactions(...args)) }
    const signing = feePayerSigning(watched)
    for (const text of ['a payment', '', 'x'.repeat(1_000)]) {
      const transaction = transactionOf(signer.address, messageOf(text))
      const ours = await signing(transaction)
      const [kits] = await signer.signTransactions([transaction])
      expect(Object.keys(ours)).toEqual([signer.address])
      expect(Buffer.from(ours[signer.address]!)).toEqual(Buffer.from(kits![signer.address]!))
    }
    expect(kitCalls).toBe(0)
  })

  it('falls back to signTransactions when the signer holds no key, or a key that is not its address', async () => {
    const real = await generateKeyPairSigner()
    const other = await generateKeyPairSigner()
    let calls = 0
    const remote: TransactionPartialSigner = { address: real.address, signTransactions: (txs) => (calls++, real.signTransactions(txs)) }
    // Claims real's address but holds other's key: signing with that key would produce a wrong transaction id.
    const mislabeled = { ...other, address: real.address, signTransactions: (txs: never) => (calls++, real.signTransactions(txs)) }
    for (const signer of [remote, mislabeled]) {
      const signatures = await feePayerSigning(signer)(transactionOf(real.address, messageOf('pay')))
      expect(Buffer.from(signatures[real.address]!)).toEqual(Buffer.from(await signBytes(real.keyPair.privateKey, messageOf('pay'))))
    }
    expect(calls).toBe(2)
  })
})

describe('createEd25519Verifier', () => {
  it('accepts the signer\'s signature and refuses a changed message, another key, a short or a flipped signature', async () => {
    const verify = createEd25519Verifier()
    const signer = await generateKeyPairSigner()
    const stranger = await generateKeyPairSigner()
    const message = messageOf('transfer 1000')
    const signature = await signBytes(signer.keyPair.privateKey, message)
    expect(verify(signer.address, message, signature)).toBe(true)
    // A second check of the same payer uses the kept key and answers the same.
    expect(verify(signer.address, message, signature)).toBe(true)
    expect(verify(signer.address, messageOf('transfer 1001'), signature)).toBe(false)
    expect(verify(stranger.address, message, signature)).toBe(false)
    expect(verify(signer.address, message, signature.slice(0, 63))).toBe(false)
    const flipped = new Uint8Array(signature)
    flipped[10]! ^= 1
    expect(verify(signer.address, message, flipped)).toBe(false)
  })

  it('refuses an address that is not a curve point, every time', () => {
    const verify = createEd25519Verifier()
    // 32 bytes that decode as no Ed25519 point (y = 2^255 - 1 is out of range).
    const notAPoint = Uint8Array.from({ length: 32 }, (_, i) => (i === 31 ? 0x7f : 0xff))
    const address = getAddressDecoder().decode(notAPoint)
    expect(verify(address, messageOf('x'), new Uint8Array(64))).toBe(false)
    expect(verify(address, messageOf('x'), new Uint8Array(64))).toBe(false)
  })
})

