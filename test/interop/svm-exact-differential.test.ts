/**
 * Differential test of Solana `exact` verify: the same requests go to our facilitator (exactSvm) and
 * to the official one (@x402/svm's ExactSvmScheme, v2 and v1, under @x402/core's x402Facilitator) on
 * one LiteSVM RPC, both with the same fee payer so a transaction is valid for either. What a client
 * sees is compared: isValid, invalidReason, payer (or, where a side refuses the request outright, the
 * error). Payloads come from the official clients and, for hostile ones, from our test builder.
 * Where the answers differ on purpose the case states both and why.
 */
import {
  type Address,
  createSolanaRpc,
  generateKeyPairSigner,
  getBase64Decoder,
  getBase64Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
  type Instruction,
  type SignatureBytes,
} from '@solana/kit'
import { getTransferSolInstruction } from '@solana-program/system'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { toFacilitatorSvmSigner } from '@x402/svm'
import { ExactSvmScheme as OfficialClientScheme } from '@x402/svm/exact/client'
import { registerExactSvmScheme } from '@x402/svm/exact/facilitator'
import { createPaymentHeader } from 'x402/client'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { createFacilitator, FacilitatorError, SOLANA_DEVNET } from '../../src/index.js'
import { exactSvm, SVM_REASON } from '../../src/svm/index.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import { createPaymentScenario, MEMO_PROGRAM, type PaymentScenario, scenarioRequirements, startSolanaTestRpc, tokenBalance } from '../support/svm-fixtures.js'
import { buildTransaction, paymentInstructions } from '../support/svm-transactions.js'

const AMOUNT = 1_000n
const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dNTYC'

/** What a client sees: a verify answer, or the request refused (ours: the error code; theirs: a thrown message). */
type Answer = { isValid: boolean; invalidReason?: string; payer?: string } | { refused: string }
type Body = { x402Version: number; paymentPayload: Record<string, unknown>; paymentRequirements: Record<string, unknown> }

let chain: LiteSvmRpc
let s: PaymentScenario
/** The same payer and fee payer, with another mint. */
let other: PaymentScenario
let ours: ReturnType<typeof createFacilitator>
let official: x402Facilitator
const table: string[] = []

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  s = await createPaymentScenario(chain.svm)
  other = await createPaymentScenario(chain.svm, { feePayer: s.feePayer, payer: s.payer })
  ours = createFacilitator({ schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer] })] })
  // The official facilitator as it is deployed: v2 and v1 exact on Solana devnet, sharing one settlement cache.
  const signer = toFacilitatorSvmSigner(s.feePayer, { [SOLANA_DEVNET]: createSolanaRpc(chain.url), 'solana-devnet': createSolanaRpc(chain.url) } as never)
  official = registerExactSvmScheme(new x402Facilitator(), { signer, networks: SOLANA_DEVNET } as never)
}, 60_000)

afterAll(async () => {
  if (table.length) console.log(['| case | ours | official |', '|---|---|---|', ...table].join('\n'))
  await ours?.close()
  await chain?.close()
})

async function ourAnswer(body: Body): Promise<Answer> {
  try {
    const { isValid, invalidReason, payer } = await ours.verify(body)
    return { isValid, ...(invalidReason === undefined ? {} : { invalidReason }), ...(payer ? { payer } : {}) }
  } catch (error) {
    if (error instanceof FacilitatorError) return { refused: error.code }
    throw error
  }
}

async function theirAnswer(body: Body): Promise<Answer> {
  try {
    const { isValid, invalidReason, payer } = await official.verify(body.paymentPayload as unknown as OfficialPayload, body.paymentRequirements as unknown as OfficialRequirements)
    return { isValid, ...(invalidReason === undefined ? {} : { invalidReason }), ...(payer ? { payer } : {}) }
  } catch (error) {
    return { refused: (error as Error).message }
  }
}

/** Both answers for one body, recorded in the table printed after the run. */
async function both(name: string, body: Body): Promise<{ ours: Answer; theirs: Answer }> {
  const answers = { ours: await ourAnswer(body), theirs: await theirAnswer(body) }
  table.push(`| ${name} | ${JSON.stringify(answers.ours)} | ${JSON.stringify(answers.theirs)} |`)
  return answers
}

function v2Body(transaction: string, requirements: Record<string, unknown> = scenarioRequirements(s, AMOUNT)): Body {
  return { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements }
}

/** A v2 body paid by the official @x402/svm client. */
async function officialBody(requirements: Record<string, unknown> = scenarioRequirements(s, AMOUNT)): Promise<Body> {
  const client = new x402Client().setSpendControls(false).register(SOLANA_DEVNET, new OfficialClientScheme(s.payer, { rpcUrl: chain.url }))
  const paymentPayload = await client.createPaymentPayload({ x402Version: 2, resource: { url: 'http://localhost/paid' }, accepts: [requirements] } as never)
  return { x402Version: 2, paymentPayload: paymentPayload as unknown as Record<string, unknown>, paymentRequirements: requirements }
}

async function blockhash() {
  return (await createSolanaRpc(chain.url).getLatestBlockhash().send()).value.blockhash
}

/** A transaction of our test builder: the usual payment instructions (and `extra` after them), fee payer slot empty. */
async function built(options: Parameters<typeof paymentInstructions>[1] & { feePayer?: Address; extra?: Instruction[] }): Promise<string> {
  const instructions = [...(await paymentInstructions(s, options)), ...(options.extra ?? [])]
  return buildTransaction({ feePayer: options.feePayer ?? s.feePayer.address, blockhash: await blockhash(), instructions })
}

/** The transaction with the payer's signature replaced (null = the slot left empty). */
function withPayerSignature(wire: string, signature: Uint8Array | null): string {
  const transaction = getTransactionDecoder().decode(getBase64Encoder().encode(wire))
  const signatures = { ...transaction.signatures, [s.payer.address]: signature as SignatureBytes | null }
  return getBase64Decoder().decode(getTransactionEncoder().encode({ ...transaction, signatures }))
}

describe('Solana exact verify, ours against the official facilitator', () => {
  test('valid payment of the official client: both accept, same payer', async () => {
    const { ours, theirs } = await both('valid payment', await officialBody())
    expect(ours).toEqual({ isValid: true, payer: s.payer.address })
    expect(theirs).toEqual(ours)
  })

  test('amount below and above the requirements: both amount_mismatch, same payer', async () => {
    for (const amount of [AMOUNT - 1n, AMOUNT + 1n]) {
      const { ours, theirs } = await both(`amount ${amount} for ${AMOUNT}`, v2Body(await built({ amount })))
      expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.amountMismatch, payer: s.payer.address })
      expect(theirs).toEqual(ours)
    }
  })

  test('wrong destination (the ATA of another owner): both recipient_mismatch', async () => {
    const stranger = (await generateKeyPairSigner()).address
    const { ours, theirs } = await both('wrong destination', v2Body(await built({ amount: AMOUNT, payTo: stranger })))
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.recipientMismatch, payer: s.payer.address })
    expect(theirs).toEqual(ours)
  })

  test('wrong mint: both mint_mismatch', async () => {
    const { ours, theirs } = await both('wrong mint', v2Body(await built({ amount: AMOUNT, mint: other.mint })))
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.mintMismatch, payer: s.payer.address })
    expect(theirs).toEqual(ours)
  })

  test('fee payer not ours, named in extra.feePayer too: both fee_payer_not_managed, no payer', async () => {
    const stranger = (await generateKeyPairSigner()).address
    const requirements = { ...scenarioRequirements(s, AMOUNT), extra: { feePayer: stranger } }
    const { ours, theirs } = await both('fee payer not ours (and extra.feePayer)', v2Body(await built({ amount: AMOUNT, feePayer: stranger }), requirements))
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.feePayerNotManaged })
    expect(theirs).toEqual(ours)
  })

  test('fee payer not ours while extra.feePayer names ours: both fee_payer_mismatch, no payer', async () => {
    const stranger = (await generateKeyPairSigner()).address
    const { ours, theirs } = await both('fee payer not ours (extra.feePayer ours)', v2Body(await built({ amount: AMOUNT, feePayer: stranger })))
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.feePayerMismatch })
    expect(theirs).toEqual(ours)
  })

  test('payer without the funds: ours insufficient_funds, the official a failed simulation', async () => {
    const { ours, theirs } = await both('payer without funds', await officialBody(scenarioRequirements(s, s.balance + 1n)))
    // Ours reads the source balance before simulating and answers with x402's own code for it; the official only sees the simulation fail.
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.insufficientFunds, payer: s.payer.address })
    expect(theirs).toEqual({ isValid: false, invalidReason: SVM_REASON.simulationFailed, payer: s.payer.address })
  })

  test('payer signature missing or forged: both signature_invalid; ours names the payer the transfer claims', async () => {
    const good = await built({ amount: AMOUNT })
    for (const [name, signature] of [['missing', null], ['forged', crypto.getRandomValues(new Uint8Array(64))]] as const) {
      const { ours, theirs } = await both(`payer signature ${name}`, v2Body(withPayerSignature(good, signature)))
      // Ours checks the signature after reading the transfer (as our tests of strict signatures assert); the official stops before it and names no payer.
      expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.signatureInvalid, payer: s.payer.address })
      expect(theirs).toEqual({ isValid: false, invalidReason: SVM_REASON.signatureInvalid })
    }
  })

  test('an extra instruction (System transfer from the payer): both refuse, each with its own rule', async () => {
    const extra = [getTransferSolInstruction({ source: s.payer, destination: s.payTo, amount: 1n })]
    const { ours, theirs } = await both('extra instruction (SOL transfer)', v2Body(await built({ amount: AMOUNT, extra })))
    // Ours allows programs, not positions (any order of limit, price, transfer, memo, Lighthouse), and names the program outside the allowlist.
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.programNotAllowed })
    expect(theirs).toEqual({ isValid: false, invalidReason: 'invalid_exact_svm_payload_unknown_fourth_instruction', payer: s.payer.address })
  })

  test('a memo after the transfer: both accept; a required memo that differs: both memo_mismatch', async () => {
    const memo = (text: string): Instruction => ({ programAddress: MEMO_PROGRAM, accounts: [], data: new TextEncoder().encode(text) })
    const free = await both('extra memo instruction', v2Body(await built({ amount: AMOUNT, extra: [memo('order-1')] })))
    expect(free.ours).toEqual({ isValid: true, payer: s.payer.address })
    expect(free.theirs).toEqual(free.ours)
    const requirements = scenarioRequirements(s, AMOUNT, { memo: 'order-2' })
    const wrong = await both('required memo differs', v2Body(await built({ amount: AMOUNT, extra: [memo('order-1')] }), requirements))
    expect(wrong.ours).toEqual({ isValid: false, invalidReason: SVM_REASON.memoMismatch, payer: s.payer.address })
    expect(wrong.theirs).toEqual(wrong.ours)
  })

  test('settle of a valid payment, each side its own: both succeed on chain with the same answer shape', async () => {
    const before = tokenBalance(chain.svm, s.payToAta)
    const mine = await officialBody()
    const theirsBody = await officialBody()
    const ourSettle = await ours.settle(mine)
    const theirSettle = await official.settle(theirsBody.paymentPayload as unknown as OfficialPayload, theirsBody.paymentRequirements as unknown as OfficialRequirements)
    table.push(`| settle, valid payment | ${JSON.stringify(ourSettle)} | ${JSON.stringify(theirSettle)} |`)
    const shape = (r: { success: boolean; network: string; payer?: string; transaction: string }) => ({ success: r.success, network: r.network, payer: r.payer, signed: /^[1-9A-HJ-NP-Za-km-z]{64,88}$/.test(r.transaction) })
    expect(shape(ourSettle)).toEqual({ success: true, network: SOLANA_DEVNET, payer: s.payer.address, signed: true })
    expect(shape(theirSettle)).toEqual(shape(ourSettle))
    expect(tokenBalance(chain.svm, s.payToAta)).toBe(before + 2n * AMOUNT)
  })

  test('wrong network and wrong scheme: ours answers invalid, the official throws (no facilitator registered)', async () => {
    const good = await built({ amount: AMOUNT })
    const mainnet = await both('wrong network', v2Body(good, { ...scenarioRequirements(s, AMOUNT), network: SOLANA_MAINNET }))
    // Our core answers every well-formed request with a verdict; the official's x402Facilitator throws, which its server turns into an error response.
    expect(mainnet.ours).toEqual({ isValid: false, invalidReason: 'invalid_network' })
    expect(mainnet.theirs).toEqual({ refused: `No facilitator registered for scheme: exact and network: ${SOLANA_MAINNET}` })
    const upto = await both('wrong scheme', v2Body(good, { ...scenarioRequirements(s, AMOUNT), scheme: 'upto' }))
    expect(upto.ours).toEqual({ isValid: false, invalidReason: 'unsupported_scheme' })
    expect(upto.theirs).toEqual({ refused: `No facilitator registered for scheme: upto and network: ${SOLANA_DEVNET}` })
  })

  test('no transaction to decode (not base64, not a transaction, empty, not a string, missing): both could_not_be_decoded', async () => {
    const requirements = scenarioRequirements(s, AMOUNT)
    const payloads: [string, Record<string, unknown>][] = [
      ['malformed base64', { transaction: '%%% not base64 %%%' }],
      ['base64 of no transaction', { transaction: Buffer.from('hello, solana').toString('base64') }],
      ['empty transaction', { transaction: '' }],
      ['transaction not a string', { transaction: 42 }],
      ['payload without transaction', { tx: await built({ amount: AMOUNT }) }],
    ]
    // The official logs each decoding error to the console; kept out of the test output.
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      for (const [name, payload] of payloads) {
        const { ours, theirs } = await both(name, { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload }, paymentRequirements: requirements })
        expect(ours, name).toEqual({ isValid: false, invalidReason: SVM_REASON.undecodable })
        expect(theirs, name).toEqual(ours)
      }
    } finally {
      quiet.mockRestore()
    }
  })

  test('a transaction string longer than any Solana transaction: ours refuses it undecoded', async () => {
    const { ours, theirs } = await both('transaction over 4096 base64 chars', v2Body('A'.repeat(5000)))
    // Ours does not decode more than a Solana transaction can be (1232 bytes); the official decodes the zeros into a message whose fee payer is not ours.
    expect(ours).toEqual({ isValid: false, invalidReason: SVM_REASON.undecodable })
    expect(theirs).toEqual({ isValid: false, invalidReason: SVM_REASON.feePayerMismatch })
  })

  test('v1 body of the official v1 client: both accept, same payer', async () => {
    const requirementsV1 = { scheme: 'exact', network: 'solana-devnet', maxAmountRequired: AMOUNT.toString(), asset: s.mint, payTo: s.payTo, resource: 'http://localhost/paid', description: 'paid', mimeType: 'application/json', maxTimeoutSeconds: 60, extra: { feePayer: s.feePayer.address } }
    const header = await createPaymentHeader(s.payer as never, 1, requirementsV1 as never, { svmConfig: { rpcUrl: chain.url } })
    const { ours, theirs } = await both('v1 body', { x402Version: 1, paymentPayload: JSON.parse(Buffer.from(header, 'base64').toString('utf8')), paymentRequirements: requirementsV1 })
    expect(ours).toEqual({ isValid: true, payer: s.payer.address })
    expect(theirs).toEqual(ours)
  })

  test('payload.accepted differs from the requirements: ours accepted_requirements_mismatch, the official judges the requirements', async () => {
    const body = await officialBody()
    const { ours, theirs } = await both('payload.accepted differs (amount)', { ...body, paymentRequirements: { ...body.paymentRequirements, amount: '999' } })
    // Our core refuses a payload signed for other terms than those being verified (DESIGN.md); the official ignores accepted and compares the transfer to the requirements.
    expect(ours).toEqual({ isValid: false, invalidReason: 'accepted_requirements_mismatch' })
    expect(theirs).toEqual({ isValid: false, invalidReason: SVM_REASON.amountMismatch, payer: s.payer.address })
  })
})
