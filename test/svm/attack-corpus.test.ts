/**
 * Fee-payer drain attempts against the Solana `exact` adapter. Every malicious
 * transaction must be rejected by verify with its own code, and settle must
 * refuse it too: the fee payer's lamports (and the payer's tokens) never move.
 */
import {
  AccountRole,
  type Address,
  type Blockhash,
  createKeyPairSignerFromPrivateKeyBytes,
  createNoopSigner,
  generateKeyPairSigner,
  getAddressEncoder,
  getBase58Decoder,
  getBase64Decoder,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  type Instruction,
  lamports,
  type TransactionMessageBytes,
} from '@solana/kit'
import { getRequestHeapFrameInstruction, getSetComputeUnitLimitInstruction, getSetComputeUnitPriceInstruction } from '@solana-program/compute-budget'
import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system'
import {
  AuthorityType,
  findAssociatedTokenPda,
  getApproveInstruction,
  getCloseAccountInstruction,
  getCreateAssociatedTokenInstruction,
  getSetAuthorityInstruction,
  getTransferCheckedInstruction,
  getTransferInstruction,
} from '@solana-program/token'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createFacilitator, SOLANA_DEVNET } from '../../src/index.js'
import { exactSvm, SVM_REASON } from '../../src/svm/index.js'
import { readWireTransaction } from '../../src/svm/codec/wire-transaction.js'
import { forgeSmallOrderSignature } from '../support/ed25519-forgery.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import {
  createMint,
  createPaymentScenario,
  createTokenAccount,
  fundedSigner,
  lamportsOf,
  MEMO_PROGRAM,
  mintTo,
  type PaymentScenario,
  startSolanaTestRpc,
  tokenBalance,
} from '../support/svm-fixtures.js'
import { buildTransaction, paymentInstructions } from '../support/svm-transactions.js'

const AMOUNT = 1_000n

interface Attack {
  name: string
  code: string
  /** The base64 transaction. */
  build: () => Promise<string>
  /** Requirements' extra beyond feePayer. */
  extra?: Record<string, unknown>
  /** The required amount. @default AMOUNT */
  amount?: bigint
  /** The required asset (mint). @default the scenario's mint */
  asset?: () => Address
  /** The required payTo. @default the scenario's payTo */
  payTo?: () => Address
}

let chain: LiteSvmRpc
let s: PaymentScenario
let otherFeePayer: Awaited<ReturnType<typeof fundedSigner>>
let blockhash: Blockhash
let otherMint: Address
/** An address no account lives at, used as a mint. */
let missingMint: Address
let attacker: Address

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  s = await createPaymentScenario(chain.svm)
  otherFeePayer = await fundedSigner(chain.svm)
  attacker = (await generateKeyPairSigner()).address
  // A second mint the payer holds, for the wrong-mint attack (and an ATA of payTo for it).
  missingMint = (await generateKeyPairSigner()).address
  otherMint = await createMint(chain.svm, { payer: s.authority, authority: s.authority.address, decimals: s.decimals })
  const otherAta = await createTokenAccount(chain.svm, { payer: s.authority, owner: s.payer.address, mint: otherMint })
  await createTokenAccount(chain.svm, { payer: s.authority, owner: s.payTo, mint: otherMint })
  await mintTo(chain.svm, { payer: s.authority, authority: s.authority, mint: otherMint, account: otherAta, amount: 10_000n })
  blockhash = chain.svm.latestBlockhash()
})
afterAll(async () => {
  await chain?.close()
})

function facilitatorFor() {
  return createFacilitator({
    schemes: [
      exactSvm({
        networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, feePayer: s.feePayer.address }],
        feePayers: [s.feePayer, otherFeePayer],
        pollIntervalMs: 5,
        confirmTimeoutMs: 2_000,
      }),
    ],
  })
}

function body(transaction: string, extra: Record<string, unknown> = {}, amount = AMOUNT, asset: Address = s.mint, payTo: Address = s.payTo) {
  const requirements = {
    scheme: 'exact',
    network: SOLANA_DEVNET,
    amount: amount.toString(),
    asset,
    payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: s.feePayer.address, ...extra },
  }
  return { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements }
}

const fp = () => s.feePayer.address
const fpSigner = () => createNoopSigner(fp())
const valid = () => paymentInstructions(s, { amount: AMOUNT })
const withExtra = async (...extra: Instruction[]) => [...(await valid()), ...extra]
const memoIx = (text: string, accounts: Instruction['accounts'] = []): Instruction => ({
  programAddress: MEMO_PROGRAM,
  accounts,
  data: new TextEncoder().encode(text),
})
const tx = async (instructions: readonly Instruction[], feePayer = fp()) => buildTransaction({ feePayer, blockhash, instructions })
const feePayerAta = async () => (await findAssociatedTokenPda({ mint: s.mint, owner: fp(), tokenProgram: s.tokenProgram }))[0]

const attacks: Attack[] = [
  {
    name: 'System transfer of SOL from the fee payer',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => tx(await withExtra(getTransferSolInstruction({ source: fpSigner(), destination: attacker, amount: 1_000_000_000n }))),
  },
  {
    name: 'CloseAccount of the fee payer token account to the attacker',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => tx(await withExtra(getCloseAccountInstruction({ account: await feePayerAta(), destination: attacker, owner: fp() }))),
  },
  {
    name: 'CloseAccount paying rent to the fee payer (fee payer as destination)',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => tx(await withExtra(getCloseAccountInstruction({ account: attacker, destination: fp(), owner: s.payer }))),
  },
  {
    name: 'Approve of the fee payer token account to the attacker',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => tx(await withExtra(getApproveInstruction({ source: await feePayerAta(), delegate: attacker, owner: fp(), amount: 1n << 60n }))),
  },
  {
    name: 'SetAuthority handing the fee payer account to the attacker',
    code: SVM_REASON.feePayerInInstruction,
    build: async () =>
      tx(
        await withExtra(
          getSetAuthorityInstruction({ owned: await feePayerAta(), owner: fp(), authorityType: AuthorityType.AccountOwner, newAuthority: attacker }),
        ),
      ),
  },
  {
    name: 'CreateAccount funded by the fee payer',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => {
      const account = await generateKeyPairSigner()
      return tx(await withExtra(getCreateAccountInstruction({ payer: fpSigner(), newAccount: account, lamports: lamports(10_000_000n), space: 0n, programAddress: attacker })))
    },
  },
  {
    name: 'create-ATA of payTo funded by the fee payer',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => {
      const newOwner = (await generateKeyPairSigner()).address
      const [ata] = await findAssociatedTokenPda({ mint: s.mint, owner: newOwner, tokenProgram: s.tokenProgram })
      return tx(await withExtra(getCreateAssociatedTokenInstruction({ payer: fpSigner(), ata, owner: newOwner, mint: s.mint, tokenProgram: s.tokenProgram })))
    },
  },
  {
    name: 'the fee payer as the transfer authority (pays from its own token account)',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => {
      const [destination] = await findAssociatedTokenPda({ mint: s.mint, owner: s.payTo, tokenProgram: s.tokenProgram })
      return tx([
        getSetComputeUnitLimitInstruction({ units: 20_000 }),
        getTransferCheckedInstruction({ source: await feePayerAta(), mint: s.mint, destination, authority: fpSigner(), amount: AMOUNT, decimals: s.decimals }),
        memoIx('only the fee payer signs', [{ address: s.payer.address, role: AccountRole.READONLY_SIGNER }]),
      ])
    },
  },
  {
    name: 'the fee payer as a read-only account of a memo',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => tx(await withExtra(memoIx('hi', [{ address: fp(), role: AccountRole.READONLY }]))),
  },
  {
    name: 'a fee payer that is not ours while extra.feePayer names ours',
    code: SVM_REASON.feePayerMismatch,
    build: async () => tx(await valid(), attacker),
  },
  {
    name: 'our other fee payer while extra.feePayer names the first',
    code: SVM_REASON.feePayerMismatch,
    build: async () => tx(await valid(), otherFeePayer.address),
  },
  {
    name: 'a System transfer from the payer (program outside the allowlist)',
    code: SVM_REASON.programNotAllowed,
    build: async () => tx(await withExtra(getTransferSolInstruction({ source: s.payer, destination: attacker, amount: 1n }))),
  },
  {
    name: 'duplicate compute-unit limit instructions',
    code: SVM_REASON.duplicateComputeLimit,
    build: async () => tx([getSetComputeUnitLimitInstruction({ units: 10_000 }), ...(await valid())]),
  },
  {
    name: 'duplicate compute-unit price instructions',
    code: SVM_REASON.duplicateComputePrice,
    build: async () => tx([getSetComputeUnitPriceInstruction({ microLamports: 2n }), ...(await valid())]),
  },
  {
    name: 'a RequestHeapFrame compute-budget instruction',
    code: SVM_REASON.computeBudgetNotAllowed,
    build: async () => tx(await withExtra(getRequestHeapFrameInstruction({ bytes: 256 * 1024 }))),
  },
  {
    name: 'a compute-unit limit instruction with a byte after the units (the runtime refuses it, the fee payer would not)',
    code: SVM_REASON.computeBudgetNotAllowed,
    build: async () => {
      const [limit, ...rest] = await valid()
      return tx([{ ...limit!, data: Uint8Array.from([...limit!.data!, 0]) }, ...rest])
    },
  },
  {
    name: 'a TransferChecked with bytes after the decimals',
    code: SVM_REASON.noTransfer,
    build: async () => {
      const ixs = await valid()
      const transfer = ixs[2]!
      ixs[2] = { ...transfer, data: Uint8Array.from([...transfer.data!, 1, 2, 3]) }
      return tx(ixs)
    },
  },
  {
    name: 'a compute-unit limit above the cap',
    code: SVM_REASON.computeLimitTooHigh,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, units: 1_400_000 })),
  },
  {
    name: 'a compute-unit price above the cap',
    code: SVM_REASON.computePriceTooHigh,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, microLamports: 50_000_000n })),
  },
  {
    name: 'huge limit x price, each under its own cap (priority fee drain)',
    code: SVM_REASON.priorityFeeTooHigh,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, units: 200_000, microLamports: 4_000_000n })),
  },
  {
    name: 'an address lookup table',
    code: SVM_REASON.addressLookupTable,
    build: async () => {
      const lookupTable = (await generateKeyPairSigner()).address
      const [destination] = await findAssociatedTokenPda({ mint: s.mint, owner: s.payTo, tokenProgram: s.tokenProgram })
      return buildTransaction({ feePayer: fp(), blockhash, instructions: await valid(), lookupTables: { [lookupTable]: [destination] } })
    },
  },
  {
    name: 'an extra signer (memo signed by a third key)',
    code: SVM_REASON.excessiveSigners,
    build: async () => {
      const third = await generateKeyPairSigner()
      return tx(await withExtra(memoIx('extra', [{ address: third.address, role: AccountRole.READONLY_SIGNER, signer: third } as never])))
    },
  },
  {
    name: 'the wrong mint',
    code: SVM_REASON.mintMismatch,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, mint: otherMint })),
  },
  {
    name: 'the wrong destination (attacker ATA instead of ATA(payTo))',
    code: SVM_REASON.recipientMismatch,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, payTo: attacker })),
  },
  {
    name: 'underpayment',
    code: SVM_REASON.amountMismatch,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT - 1n })),
  },
  {
    name: 'a plain Transfer instead of TransferChecked',
    code: SVM_REASON.tokenInstructionNotAllowed,
    build: async () => {
      const [destination] = await findAssociatedTokenPda({ mint: s.mint, owner: s.payTo, tokenProgram: s.tokenProgram })
      return tx([getSetComputeUnitLimitInstruction({ units: 20_000 }), getTransferInstruction({ source: s.payerAta, destination, authority: s.payer, amount: AMOUNT })])
    },
  },
  {
    name: 'two TransferChecked instructions',
    code: SVM_REASON.multipleTransfers,
    build: async () => {
      const ixs = await valid()
      return tx([...ixs, ...(await paymentInstructions(s, { amount: 1n })).slice(2)])
    },
  },
  {
    name: 'no transfer at all',
    code: SVM_REASON.noTransfer,
    build: async () => tx([getSetComputeUnitLimitInstruction({ units: 20_000 }), memoIx('no pay', [{ address: s.payer.address, role: AccountRole.READONLY_SIGNER, signer: s.payer } as never])]),
  },
  {
    name: 'a memo differing from extra.memo',
    code: SVM_REASON.memoMismatch,
    extra: { memo: 'order-42' },
    build: async () => tx(await withExtra(memoIx('order-43'))),
  },
  {
    name: 'a destination token account that does not exist (fee payer would fund it)',
    code: SVM_REASON.destinationAccountMissing,
    build: async () => tx(await valid()),
    // payTo is swapped for a wallet without an ATA below.
  },
  {
    name: 'a source token account that does not exist',
    code: SVM_REASON.sourceAccountMissing,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, payer: await generateKeyPairSigner() })),
  },
  {
    name: 'a mint that does not exist (requirements and transfer agree on it)',
    code: SVM_REASON.mintAccountInvalid,
    asset: () => missingMint,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, mint: missingMint })),
  },
  {
    name: 'more than the payer holds',
    code: SVM_REASON.insufficientFunds,
    amount: 1_000_000_000n + 1n,
    build: async () => tx(await paymentInstructions(s, { amount: s.balance + 1n })),
  },
  {
    name: 'a tampered transaction whose payer signature no longer verifies',
    code: SVM_REASON.signatureInvalid,
    build: async () => {
      const wire = new Uint8Array(getBase64Encoder().encode(await tx(await withExtra(memoIx('aaaa')))))
      // Flip one byte of the memo text: the message changes, the signatures do not.
      const index = wire.lastIndexOf('a'.charCodeAt(0))
      wire[index] = 'b'.charCodeAt(0)
      return getBase64Decoder().decode(wire)
    },
  },
  {
    name: 'a payer signature forged with a small-order R (OpenSSL accepts it, the runtime does not)',
    code: SVM_REASON.signatureInvalid,
    build: async () => {
      // A payer whose secret is known: the forgery needs its scalar. Verify refuses before any account is read.
      const seed = crypto.getRandomValues(new Uint8Array(32))
      const forger = await createKeyPairSignerFromPrivateKeyBytes(seed)
      const wire = new Uint8Array(getBase64Encoder().encode(await tx(await paymentInstructions(s, { amount: AMOUNT, payer: forger }))))
      const parsed = readWireTransaction(wire)!
      wire.set(forgeSmallOrderSignature(seed, new Uint8Array(getAddressEncoder().encode(forger.address)), parsed.messageBytes), parsed.signatureOffsets[1]!)
      return getBase64Decoder().decode(wire)
    },
  },
  {
    name: 'a payment to oneself (payTo is the payer: source and destination are one account)',
    code: SVM_REASON.transferToSelf,
    payTo: () => s.payer.address,
    build: async () => tx(await paymentInstructions(s, { amount: AMOUNT, payTo: s.payer.address })),
  },
  {
    name: 'an unknown (expired) blockhash',
    code: SVM_REASON.blockhashExpired,
    build: async () => buildTransaction({ feePayer: fp(), blockhash: getBase58Decoder().decode(new Uint8Array(32).fill(7)) as Blockhash, instructions: await valid() }),
  },
  {
    name: 'combination: lookup table + System drain + fee payer as authority',
    code: SVM_REASON.addressLookupTable,
    build: async () => {
      const lookupTable = (await generateKeyPairSigner()).address
      const [destination] = await findAssociatedTokenPda({ mint: s.mint, owner: s.payTo, tokenProgram: s.tokenProgram })
      return buildTransaction({
        feePayer: fp(),
        blockhash,
        instructions: await withExtra(getTransferSolInstruction({ source: fpSigner(), destination: attacker, amount: 1_000_000n })),
        lookupTables: { [lookupTable]: [destination, attacker] },
      })
    },
  },
  {
    name: 'combination: duplicate limit + over-cap price + fee-payer-funded account',
    code: SVM_REASON.feePayerInInstruction,
    build: async () => {
      const account = await generateKeyPairSigner()
      return tx([
        getSetComputeUnitLimitInstruction({ units: 1_400_000 }),
        ...(await paymentInstructions(s, { amount: AMOUNT, microLamports: 100_000_000n })),
        getCreateAccountInstruction({ payer: fpSigner(), newAccount: account, lamports: lamports(1_000_000n), space: 0n, programAddress: attacker }),
      ])
    },
  },
  {
    name: 'an instruction naming an account index the message does not list',
    code: SVM_REASON.undecodable,
    build: async () => {
      const transaction = getTransactionDecoder().decode(getBase64Encoder().encode(await tx(await withExtra(memoIx('index')))))
      const compiled = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes)
      if (compiled.version !== 0 && compiled.version !== 'legacy') throw new Error('the builder makes v0 messages')
      const last = compiled.instructions[compiled.instructions.length - 1]!
      const instructions = [...compiled.instructions.slice(0, -1), { ...last, accountIndices: [200] }]
      const messageBytes = getCompiledTransactionMessageEncoder().encode({ ...compiled, instructions }) as TransactionMessageBytes
      return getBase64EncodedWireTransaction({ messageBytes, signatures: transaction.signatures })
    },
  },
  {
    name: 'garbage instead of a transaction',
    code: SVM_REASON.undecodable,
    build: async () => Buffer.from('not a solana transaction at all').toString('base64'),
  },
]

describe('attack corpus', () => {
  test('has at least 20 distinct malicious transactions', () => {
    expect(attacks.length).toBeGreaterThanOrEqual(20)
    expect(new Set(attacks.map((a) => a.code)).size).toBeGreaterThanOrEqual(20)
  })

  test.each(attacks.map((attack) => [attack.name, attack] as const))('rejects %s', async (_name, attack) => {
    const facilitator = facilitatorFor()
    const transaction = await attack.build()
    let request = body(transaction, attack.extra, attack.amount, attack.asset?.(), attack.payTo?.())
    if (attack.code === SVM_REASON.destinationAccountMissing) {
      // A fresh recipient with no token account: paying it would make someone create the ATA.
      const stranger = (await generateKeyPairSigner()).address
      const [destination] = await findAssociatedTokenPda({ mint: s.mint, owner: stranger, tokenProgram: s.tokenProgram })
      const [source] = await findAssociatedTokenPda({ mint: s.mint, owner: s.payer.address, tokenProgram: s.tokenProgram })
      const ixs = await valid()
      ixs[2] = getTransferCheckedInstruction({ source, mint: s.mint, destination, authority: s.payer, amount: AMOUNT, decimals: s.decimals })
      request = body(await tx(ixs))
      request.paymentRequirements.payTo = stranger
      request.paymentPayload.accepted.payTo = stranger
    }
    const feePayerBefore = lamportsOf(chain.svm, fp())
    const otherBefore = lamportsOf(chain.svm, otherFeePayer.address)
    const tokensBefore = tokenBalance(chain.svm, s.payerAta)

    const verdict = await facilitator.verify(request)
    expect(verdict.isValid).toBe(false)
    expect(verdict.invalidReason).toBe(attack.code)
    expect(verdict.invalidMessage).toBeTruthy()

    const settled = await facilitator.settle(request)
    expect(settled.success).toBe(false)
    expect(settled.errorReason).toBe(attack.code)
    expect(settled.transaction).toBe('')

    expect(lamportsOf(chain.svm, fp())).toBe(feePayerBefore)
    expect(lamportsOf(chain.svm, otherFeePayer.address)).toBe(otherBefore)
    expect(tokenBalance(chain.svm, s.payerAta)).toBe(tokensBefore)
  })

  test('rejects a replay of a settled transaction, also through another facilitator with its own store', async () => {
    const transaction = await tx(await withExtra(memoIx('replay-me')))
    const first = await facilitatorFor().settle(body(transaction))
    expect(first.success).toBe(true)

    const feePayerBefore = lamportsOf(chain.svm, fp())
    const tokensBefore = tokenBalance(chain.svm, s.payerAta)
    const other = facilitatorFor()
    const verdict = await other.verify(body(transaction))
    expect(verdict).toMatchObject({ isValid: false, invalidReason: SVM_REASON.alreadyProcessed })
    const again = await other.settle(body(transaction))
    expect(again).toMatchObject({ success: false, errorReason: SVM_REASON.alreadyProcessed })
    expect(lamportsOf(chain.svm, fp())).toBe(feePayerBefore)
    expect(tokenBalance(chain.svm, s.payerAta)).toBe(tokensBefore)
  })
})
