/**
 * Security issue #20 (Solana, part 1): the payer's Ed25519 signature is checked
 * as strictly as the Solana runtime checks it, and a send the node refuses for a
 * bad signature ends the settlement at once. The small-order points are derived
 * here with plain curve arithmetic, independently of the constants in the source.
 */
import { createPublicKey, generateKeyPairSync, sign, verify as opensslVerify } from 'node:crypto'
import {
  createKeyPairSignerFromPrivateKeyBytes,
  getAddressDecoder,
  getAddressEncoder,
  getBase64Decoder,
  getBase64Encoder,
  getTransactionDecoder,
  type Transaction,
} from '@solana/kit'
import { FailedTransactionMetadata } from 'litesvm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createFacilitator, SOLANA_DEVNET } from '../../src/index.js'
import { createEd25519Verifier } from '../../src/svm/crypto/ed25519.js'
import {
  isCanonicalEd25519Point,
  isCanonicalEd25519Scalar,
  isSmallOrderEd25519Point,
  isStrictEd25519PublicKey,
  isStrictEd25519SignatureEncoding,
} from '../../src/svm/crypto/ed25519-strict.js'
import { createHttpRpcTransport, exactSvm, type ExactSvmConfig, SVM_REASON, type SvmRpcTransport } from '../../src/svm/index.js'
import { readWireTransaction } from '../../src/svm/codec/wire-transaction.js'
import { bigIntToLittleEndian, ED25519_GROUP_ORDER, forgeSmallOrderSignature, IDENTITY_POINT, littleEndianToBigInt } from '../support/ed25519-forgery.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, lamportsOf, type PaymentScenario, scenarioPaymentBody, startSolanaTestRpc, tokenBalance } from '../support/svm-fixtures.js'

// Edwards25519 over BigInt, enough to find the torsion subgroup.
const P = 2n ** 255n - 19n
const mod = (a: bigint) => ((a % P) + P) % P
const pow = (base: bigint, exponent: bigint) => {
  let result = 1n
  let b = mod(base)
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % P
    b = (b * b) % P
  }
  return result
}
const inverse = (a: bigint) => pow(a, P - 2n)
const D = mod(-121665n * inverse(121666n))
type Point = readonly [bigint, bigint]
const add = ([x1, y1]: Point, [x2, y2]: Point): Point => {
  const t = (D * x1 * x2 * y1 * y2) % P
  return [mod((x1 * y2 + x2 * y1) * inverse(1n + t)), mod((y1 * y2 + x1 * x2) * inverse(1n - t))]
}
const multiply = (point: Point, scalar: bigint): Point => {
  let result: Point = [0n, 1n]
  let addend = point
  for (let k = scalar; k > 0n; k >>= 1n) {
    if (k & 1n) result = add(result, addend)
    addend = add(addend, addend)
  }
  return result
}
const xOf = (y: bigint): bigint | undefined => {
  const x2 = mod((y * y - 1n) * inverse(D * y * y + 1n))
  let x = pow(x2, (P + 3n) / 8n)
  if (mod(x * x - x2) !== 0n) x = mod(x * pow(2n, (P - 1n) / 4n))
  return mod(x * x - x2) === 0n ? x : undefined
}
const isIdentity = ([x, y]: Point) => x === 0n && y === 1n

/** The eight points of small order: the multiples of a point of order 8, found as [L]Q for a random Q. */
function torsionPoints(): Point[] {
  for (let y = 2n; ; y++) {
    const x = xOf(y)
    if (x === undefined) continue
    const t = multiply([x, y], ED25519_GROUP_ORDER)
    let order = 1
    for (let q = t; !isIdentity(q); q = add(q, t)) order++
    if (order !== 8) continue
    const points: Point[] = []
    for (let i = 0, q: Point = [0n, 1n]; i < 8; i++, q = add(q, t)) points.push(q)
    return points
  }
}

/** Every 32-byte encoding that decodes to a point of small order: canonical, sign bit on x = 0, and y + p. */
function smallOrderEncodings(): Uint8Array[] {
  const encodings: Uint8Array[] = []
  const encode = (y: bigint, sign: bigint) => bigIntToLittleEndian(y | (sign << 255n), 32)
  for (const [x, y] of torsionPoints()) {
    encodings.push(encode(y, x & 1n))
    if (x === 0n) encodings.push(encode(y, 1n))
    if (y + P < 2n ** 255n) {
      encodings.push(encode(y + P, x & 1n))
      if (x === 0n) encodings.push(encode(y + P, 1n))
    }
  }
  return encodings
}

const addressOf = (bytes: Uint8Array) => getAddressDecoder().decode(bytes)
const publicKeyOf = (bytes: Uint8Array) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(bytes).toString('base64url') }, format: 'jwk' })

describe('strict Ed25519 encodings', () => {
  test('the group order is L', () => {
    const l = bigIntToLittleEndian(ED25519_GROUP_ORDER, 32)
    expect(isCanonicalEd25519Scalar(l)).toBe(false)
    expect(isCanonicalEd25519Scalar(bigIntToLittleEndian(ED25519_GROUP_ORDER - 1n, 32))).toBe(true)
  })

  test('every encoding of the eight small-order points (14 in all) is refused as a key and as R', () => {
    const encodings = smallOrderEncodings()
    expect(encodings).toHaveLength(14)
    expect(new Set(encodings.map((e) => Buffer.from(e).toString('hex'))).size).toBe(14)
    const someS = bigIntToLittleEndian(12345n, 32)
    for (const encoding of encodings) {
      expect(isStrictEd25519PublicKey(encoding)).toBe(false)
      expect(isStrictEd25519SignatureEncoding(Uint8Array.from([...encoding, ...someS]))).toBe(false)
      // The canonical ones by the blacklist itself, the others (y >= p) by the canonical check.
      expect(isSmallOrderEd25519Point(encoding) || !isCanonicalEd25519Point(encoding)).toBe(true)
    }
  })

  test('a small-order key: OpenSSL accepts R = identity, S = 0 for any message under it; the verifier refuses', () => {
    const message = new TextEncoder().encode('pay 1000 to anyone')
    const signature = Uint8Array.from([...IDENTITY_POINT, ...new Uint8Array(32)])
    expect(opensslVerify(null, message, publicKeyOf(IDENTITY_POINT), signature)).toBe(true)
    expect(createEd25519Verifier()(addressOf(IDENTITY_POINT), message, signature)).toBe(false)
  })

  test('R with y >= p (non-canonical, not of small order) is refused', () => {
    for (let offset = 2n; offset < 19n; offset++) {
      const r = bigIntToLittleEndian(P + offset, 32)
      expect(isCanonicalEd25519Point(r)).toBe(false)
      expect(isStrictEd25519SignatureEncoding(Uint8Array.from([...r, ...new Uint8Array(32)]))).toBe(false)
    }
    // p - 1 is canonical (it is the order-2 point, refused as small-order), p itself is not.
    expect(isCanonicalEd25519Point(bigIntToLittleEndian(P - 1n, 32))).toBe(true)
    expect(isCanonicalEd25519Point(bigIntToLittleEndian(P, 32))).toBe(false)
  })

  test('S >= L is refused, also as S + L of a real signature; a normal signature still verifies', async () => {
    const verifier = createEd25519Verifier()
    for (let i = 0; i < 50; i++) {
      const { publicKey, privateKey } = generateKeyPairSync('ed25519')
      const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'))
      const message = crypto.getRandomValues(new Uint8Array(100 + i))
      const signature = new Uint8Array(sign(null, message, privateKey))
      expect(verifier(addressOf(raw), message, signature)).toBe(true)
      const malleated = Uint8Array.from([...signature.subarray(0, 32), ...bigIntToLittleEndian(littleEndianToBigInt(signature.subarray(32)) + ED25519_GROUP_ORDER, 32)])
      expect(isCanonicalEd25519Scalar(malleated.subarray(32))).toBe(false)
      expect(verifier(addressOf(raw), message, malleated)).toBe(false)
    }
    for (const s of [ED25519_GROUP_ORDER, ED25519_GROUP_ORDER + 1n, 2n ** 256n - 1n]) expect(isCanonicalEd25519Scalar(bigIntToLittleEndian(s, 32))).toBe(false)
  })
})

let chain: LiteSvmRpc
let s: PaymentScenario
/** The payer's RFC 8032 private key: the forgery needs its secret scalar. */
let seed: Uint8Array

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  seed = crypto.getRandomValues(new Uint8Array(32))
  s = await createPaymentScenario(chain.svm, { payer: await createKeyPairSignerFromPrivateKeyBytes(seed) })
})
afterAll(async () => {
  await chain?.close()
})

const config = (overrides: Partial<ExactSvmConfig> = {}): ExactSvmConfig => ({
  networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }],
  feePayers: [s.feePayer],
  pollIntervalMs: 10,
  confirmTimeoutMs: 20_000,
  rebroadcastIntervalMs: 50,
  ...overrides,
})

describe('a payer signature forged with a small-order R', () => {
  test('OpenSSL accepts it and LiteSVM refuses it; verify and settle refuse it and nothing is sent', async () => {
    const body = await scenarioPaymentBody(chain.url, s, 1_000n)
    const wire = new Uint8Array(getBase64Encoder().encode(body.paymentPayload.payload.transaction))
    const parsed = readWireTransaction(wire)!
    const payerKey = new Uint8Array(getAddressEncoder().encode(s.payer.address))
    const forged = forgeSmallOrderSignature(seed, payerKey, parsed.messageBytes)
    // The payer signs second: the fee payer's slot comes first.
    wire.set(forged, parsed.signatureOffsets[1]!)
    body.paymentPayload.payload.transaction = getBase64Decoder().decode(wire)

    // OpenSSL alone would have accepted it under the payer's real key.
    expect(opensslVerify(null, parsed.messageBytes, publicKeyOf(payerKey), forged)).toBe(true)

    const feePayerBefore = lamportsOf(chain.svm, s.feePayer.address)
    const tokensBefore = tokenBalance(chain.svm, s.payerAta)
    const f = createFacilitator({ schemes: [exactSvm(config())] })
    chain.resetStats()
    const verdict = await f.verify(body)
    expect(verdict).toMatchObject({ isValid: false, invalidReason: SVM_REASON.signatureInvalid, payer: s.payer.address })
    expect(verdict.invalidMessage).toBeTruthy()
    // verify's one batch went out beside the check; settle checks first and makes no RPC call.
    expect(chain.stats.requests).toBeLessThanOrEqual(1)
    const afterVerify = chain.stats.requests
    const settled = await f.settle(body)
    expect(settled).toMatchObject({ success: false, errorReason: SVM_REASON.signatureInvalid, transaction: '' })
    expect(chain.stats.requests).toBe(afterVerify)
    expect(chain.stats.calls.sendTransaction ?? 0).toBe(0)

    // The runtime refuses the same transaction co-signed by the fee payer, and charges nothing for it.
    const transaction = getTransactionDecoder().decode(wire)
    const [feePayerSignature] = await s.feePayer.signTransactions([transaction as never])
    const coSigned: Transaction = { ...transaction, signatures: { ...transaction.signatures, ...feePayerSignature } }
    const outcome = chain.svm.sendTransaction(coSigned as never)
    expect(outcome).toBeInstanceOf(FailedTransactionMetadata)
    expect((outcome as FailedTransactionMetadata).toString()).toMatch(/SignatureFailure/)

    expect(lamportsOf(chain.svm, s.feePayer.address)).toBe(feePayerBefore)
    expect(tokenBalance(chain.svm, s.payerAta)).toBe(tokensBefore)
  })
})

/** The node's answer to sendTransaction replaced by `error`; everything else goes to the chain. Counts sends. */
function refusingSends(error: { code: number; message: string }) {
  const counter = { sends: 0 }
  const rpc = (network: { urls: readonly string[] }): SvmRpcTransport => {
    const inner = createHttpRpcTransport({ urls: network.urls })
    return {
      request: async (calls, signal) => {
        if (!calls.some((call) => call.method === 'sendTransaction')) return inner.request(calls, signal)
        counter.sends += 1
        return calls.map(() => ({ ok: false as const, error }))
      },
    }
  }
  return { counter, rpc }
}

describe('a send refused for a bad signature is final', () => {
  test.each([
    ['JSON-RPC -32003', { code: -32003, message: 'Transaction signature verification failure' }],
    ['a sanitize failure', { code: -32602, message: 'invalid transaction: Transaction failed to sanitize accounts offsets correctly' }],
  ])('%s: settle answers at once with the code and the transaction id, sends once, and a second settle sends nothing', async (_name, error) => {
    const { counter, rpc } = refusingSends(error)
    const f = createFacilitator({ schemes: [exactSvm(config({ rpc }))] })
    const body = await scenarioPaymentBody(chain.url, s, 2_000n)
    const feePayerBefore = lamportsOf(chain.svm, s.feePayer.address)
    const started = performance.now()
    const settled = await f.settle(body)
    const elapsed = performance.now() - started
    expect(settled).toMatchObject({ success: false, errorReason: SVM_REASON.signatureInvalid, payer: s.payer.address })
    expect(settled.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/)
    expect(settled.errorMessage).toContain(error.message)
    expect(counter.sends).toBe(1)
    // No rebroadcast and no wait for the blockhash: far below one confirmation bound (20 s).
    expect(elapsed).toBeLessThan(2_000)
    expect(lamportsOf(chain.svm, s.feePayer.address)).toBe(feePayerBefore)

    // The failure is recorded: settling again answers it without sending.
    expect(await f.settle(body)).toMatchObject({ success: false, errorReason: SVM_REASON.signatureInvalid, transaction: settled.transaction })
    expect(counter.sends).toBe(1)
  })

  test('another refusal proves nothing: the bytes are offered again until the bound, which answers pending', async () => {
    const { counter, rpc } = refusingSends({ code: -32005, message: 'Node is behind by 42 slots' })
    const f = createFacilitator({ schemes: [exactSvm(config({ rpc, confirmTimeoutMs: 400 }))] })
    const body = await scenarioPaymentBody(chain.url, s, 3_000n)
    const settled = await f.settle(body)
    expect(settled).toMatchObject({ success: false, errorReason: 'settlement_pending' })
    expect(counter.sends).toBeGreaterThan(1)
  })
})
