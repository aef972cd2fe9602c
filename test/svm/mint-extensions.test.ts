/**
 * Security issue #20 (Solana, part 2): Token-2022 mints whose extensions can
 * short payTo, take the tokens back or block the transfer are refused, each
 * with its own code, unless the operator allows the extension. Mints are made
 * by the real Token-2022 program on LiteSVM; the parser reads their bytes.
 */
import { AccountRole, type Address, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createFacilitator, FacilitatorError, SOLANA_DEVNET } from '../../src/index.js'
import { exactSvm, type ExactSvmNetworkConfig, SVM_REASON } from '../../src/svm/index.js'
import {
  EXTENSION_TYPE,
  judgeToken2022Mint,
  type MintExtensionName,
  readToken2022Mint,
  type Token2022Mint,
  transferFeeOf,
} from '../../src/svm/rules/mint-extensions.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'
import {
  createMint,
  createPaymentScenario,
  execute,
  fundedSigner,
  lamportsOf,
  type PaymentScenario,
  scenarioPaymentBody,
  startSolanaTestRpc,
  TOKEN_2022_PROGRAM,
  tokenBalance,
} from '../support/svm-fixtures.js'
import {
  defaultAccountStateExtension,
  metadataPointerExtension,
  type MintExtensionInit,
  mintCloseAuthorityExtension,
  nonTransferableExtension,
  pausableExtension,
  permanentDelegateExtension,
  transferFeeExtension,
  transferHookExtension,
} from '../support/token-2022-extensions.js'

const TEN_PERCENT = transferFeeExtension({ basisPoints: 1_000, maximumFee: 10n ** 12n })

let chain: LiteSvmRpc
let authority: KeyPairSigner
let someone: Address

beforeAll(async () => {
  chain = await startSolanaTestRpc()
  authority = await fundedSigner(chain.svm)
  someone = (await generateKeyPairSigner()).address
})
afterAll(async () => {
  await chain?.close()
})

/** The raw account data of a new Token-2022 mint with `extensions`, made by the program itself. */
async function mintBytes(extensions: readonly MintExtensionInit[], freezeAuthority?: Address): Promise<{ mint: Address; data: Uint8Array }> {
  const mint = await createMint(chain.svm, { payer: authority, authority: authority.address, tokenProgram: TOKEN_2022_PROGRAM, extensions, ...(freezeAuthority ? { freezeAuthority } : {}) })
  const account = chain.svm.getAccount(mint)
  if (!account.exists) throw new Error('the mint was not created')
  return { mint, data: new Uint8Array(account.data) }
}

const judge = (mint: Token2022Mint, amount: bigint, allowed: readonly MintExtensionName[] = [], epoch?: bigint) =>
  judgeToken2022Mint(mint, { amount, allowed: new Set(allowed), ...(epoch === undefined ? {} : { epoch }) })

describe('reading and judging real Token-2022 mints', () => {
  test('a mint without extensions passes with the whole amount', async () => {
    const mint = readToken2022Mint((await mintBytes([])).data)!
    expect(mint).toEqual({ decimals: 6, extensionTypes: [] })
    expect(judge(mint, 1_000n)).toEqual({ ok: true, received: 1_000n })
  })

  test('harmless extensions pass: mint close authority, metadata pointer', async () => {
    const mint = readToken2022Mint((await mintBytes([mintCloseAuthorityExtension(someone), metadataPointerExtension({ authority: someone, metadata: someone })])).data)!
    expect(mint.extensionTypes).toEqual([EXTENSION_TYPE.MintCloseAuthority, EXTENSION_TYPE.MetadataPointer])
    expect(judge(mint, 1_000n)).toEqual({ ok: true, received: 1_000n })
  })

  test.each([
    ['transfer fee (10 %)', () => [TEN_PERCENT], undefined, 'transferFee', SVM_REASON.mintTransferFee],
    ['permanent delegate', () => [permanentDelegateExtension(someone)], undefined, 'permanentDelegate', SVM_REASON.mintPermanentDelegate],
    ['pausable', () => [pausableExtension(someone)], undefined, 'pausable', SVM_REASON.mintPausable],
    ['default account state frozen', () => [defaultAccountStateExtension(2)], () => someone, 'defaultAccountStateFrozen', SVM_REASON.mintDefaultAccountStateFrozen],
    ['transfer hook', () => [transferHookExtension({ authority: someone, program: someone })], undefined, 'transferHook', SVM_REASON.mintTransferHook],
  ] as const)('%s: refused with its own code, accepted when the operator allows it', async (_name, extensions, freeze, name, code) => {
    const mint = readToken2022Mint((await mintBytes(extensions(), freeze?.())).data)!
    const refused = judge(mint, 1_000n)
    expect(refused).toMatchObject({ ok: false, reason: code })
    expect(refused.ok === false && refused.message).toBeTruthy()
    // Every other allowance leaves it refused.
    const others = (['transferFee', 'permanentDelegate', 'pausable', 'defaultAccountStateFrozen', 'transferHook'] as const).filter((other) => other !== name)
    expect(judge(mint, 1_000n, others, 0n)).toMatchObject({ ok: false, reason: code })
    expect(judge(mint, 1_000n, [name], 0n)).toEqual({ ok: true, received: name === 'transferFee' ? 900n : 1_000n })
  })

  test('inert settings pass: a zero fee (even with an authority that can raise it later), an initialized default state', async () => {
    // (A hook with neither authority nor program cannot be made: the program refuses to initialize one.)
    for (const extension of [transferFeeExtension({ basisPoints: 0, maximumFee: 0n, authority: someone }), defaultAccountStateExtension(1)]) {
      const mint = readToken2022Mint((await mintBytes([extension])).data)!
      expect(judge(mint, 1_000n)).toEqual({ ok: true, received: 1_000n })
    }
  })

  test('a non-transferable mint is refused, whatever is allowed', async () => {
    const mint = readToken2022Mint((await mintBytes([nonTransferableExtension()])).data)!
    expect(judge(mint, 1n, ['transferFee', 'permanentDelegate', 'pausable', 'defaultAccountStateFrozen', 'transferHook'], 0n)).toMatchObject({
      ok: false,
      reason: SVM_REASON.mintNonTransferable,
    })
  })

  test('a paused mint is refused even where pausable mints are allowed', async () => {
    const pauser = await fundedSigner(chain.svm)
    const { mint, data } = await mintBytes([pausableExtension(pauser.address)])
    expect(readToken2022Mint(data)!.pausable).toEqual({ authority: true, paused: false })
    await execute(chain.svm, pauser, [
      { programAddress: TOKEN_2022_PROGRAM, accounts: [{ address: mint, role: AccountRole.WRITABLE }, { address: pauser.address, role: AccountRole.READONLY_SIGNER, signer: pauser } as never], data: Uint8Array.from([44, 1]) },
    ])
    const account = chain.svm.getAccount(mint)
    const paused = readToken2022Mint(new Uint8Array(account.exists ? account.data : []))!
    expect(paused.pausable).toEqual({ authority: true, paused: true })
    expect(judge(paused, 1_000n, ['pausable'])).toMatchObject({ ok: false, reason: SVM_REASON.mintPausable })
  })
})

describe('transfer-fee schedules', () => {
  const schedule = (basisPoints: number, maximumFee: bigint, epoch = 0n) => ({ epoch, maximumFee, basisPoints })
  const feeMint = (older: ReturnType<typeof schedule>, newer: ReturnType<typeof schedule>): Token2022Mint => ({
    decimals: 6,
    extensionTypes: [EXTENSION_TYPE.TransferFeeConfig],
    transferFee: { older, newer },
  })

  test('the fee is ceil(amount x bps / 10,000), capped at the maximum', () => {
    expect(transferFeeOf(schedule(1_000, 10n ** 12n), 10_000n)).toBe(1_000n)
    expect(transferFeeOf(schedule(1_000, 10n ** 12n), 1n)).toBe(1n)
    expect(transferFeeOf(schedule(1, 10n ** 12n), 10_001n)).toBe(2n)
    expect(transferFeeOf(schedule(1_000, 50n), 10_000n)).toBe(50n)
    expect(transferFeeOf(schedule(0, 10n ** 12n), 10_000n)).toBe(0n)
    expect(transferFeeOf(schedule(10_000, 0n), 10_000n)).toBe(0n)
  })

  test('refused when either schedule charges this amount (the authority can switch them); a cap of 0 charges nothing', () => {
    expect(judge(feeMint(schedule(0, 0n), schedule(100, 10n, 7n)), 1_000n)).toMatchObject({ ok: false, reason: SVM_REASON.mintTransferFee })
    expect(judge(feeMint(schedule(100, 10n), schedule(0, 0n, 7n)), 1_000n)).toMatchObject({ ok: false, reason: SVM_REASON.mintTransferFee })
    expect(judge(feeMint(schedule(100, 0n), schedule(0, 0n, 7n)), 1_000n)).toEqual({ ok: true, received: 1_000n })
  })

  test('allowed: the schedule in force at the epoch decides what reaches payTo', () => {
    const mint = feeMint(schedule(100, 10n ** 12n), schedule(1_000, 10n ** 12n, 7n))
    expect(judge(mint, 10_000n, ['transferFee'], 6n)).toEqual({ ok: true, received: 9_900n })
    expect(judge(mint, 10_000n, ['transferFee'], 7n)).toEqual({ ok: true, received: 9_000n })
  })
})

describe('mint data Token-2022 would not load, or could not be judged', () => {
  let closeAuthorityMint: Uint8Array
  let feeMintData: Uint8Array
  beforeAll(async () => {
    closeAuthorityMint = (await mintBytes([mintCloseAuthorityExtension(someone)])).data
    feeMintData = (await mintBytes([TEN_PERCENT])).data
  })
  const edited = (data: Uint8Array, edit: (copy: Uint8Array) => void) => {
    const copy = Uint8Array.from(data)
    edit(copy)
    return copy
  }

  test('truncated, padded with non-zero bytes, of another account type, uninitialized, multisig-sized or short: unreadable', () => {
    expect(readToken2022Mint(closeAuthorityMint)).toBeDefined()
    expect(readToken2022Mint(feeMintData.subarray(0, feeMintData.length - 3))).toBeUndefined()
    expect(readToken2022Mint(edited(closeAuthorityMint, (d) => (d[100] = 1)))).toBeUndefined()
    expect(readToken2022Mint(edited(closeAuthorityMint, (d) => (d[165] = 2)))).toBeUndefined()
    expect(readToken2022Mint(edited(closeAuthorityMint, (d) => (d[45] = 0)))).toBeUndefined()
    expect(readToken2022Mint(new Uint8Array(355).fill(1, 45, 46))).toBeUndefined()
    expect(readToken2022Mint(closeAuthorityMint.subarray(0, 120))).toBeUndefined()
    expect(readToken2022Mint(closeAuthorityMint.subarray(0, 81))).toBeUndefined()
    // A token-account extension (ImmutableOwner) inside a mint, or a known extension of the wrong size.
    expect(readToken2022Mint(edited(closeAuthorityMint, (d) => (d[166] = EXTENSION_TYPE.ImmutableOwner)))).toBeUndefined()
    expect(readToken2022Mint(edited(closeAuthorityMint, (d) => (d[166] = EXTENSION_TYPE.PermanentDelegate)))).toBeDefined()
    expect(readToken2022Mint(edited(closeAuthorityMint, (d) => (d[166] = EXTENSION_TYPE.Pausable)))).toBeUndefined()
  })

  test('an extension type this version does not know is refused with its own code', () => {
    const mint = readToken2022Mint(edited(closeAuthorityMint, (d) => (d[166] = 200)))!
    expect(mint.extensionTypes).toEqual([200])
    expect(judge(mint, 1_000n)).toMatchObject({ ok: false, reason: SVM_REASON.mintExtensionUnknown })
  })
})

describe('verify and settle Token-2022 payments on LiteSVM', () => {
  let plain: PaymentScenario
  let tenPercent: PaymentScenario
  let delegated: PaymentScenario
  beforeAll(async () => {
    plain = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM })
    tenPercent = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM, mintExtensions: [TEN_PERCENT] })
    delegated = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM, mintExtensions: [permanentDelegateExtension(someone)] })
  })

  const facilitatorFor = (s: PaymentScenario, network: Partial<ExactSvmNetworkConfig> = {}) =>
    createFacilitator({
      schemes: [exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, ...network }], feePayers: [s.feePayer], pollIntervalMs: 5, confirmTimeoutMs: 2_000 })],
    })

  /** A body whose transfer moves `moved` while the requirements ask for `required`. */
  async function bodyMoving(s: PaymentScenario, moved: bigint, required: bigint) {
    const body = await scenarioPaymentBody(chain.url, s, moved)
    body.paymentRequirements.amount = required.toString()
    body.paymentPayload.accepted.amount = required.toString()
    return body
  }

  /** Verify then settle a payment that must be refused with `code`: one request (none when the static rules refuse it), nothing sent, nobody's balance moves. */
  async function expectRefused(f: ReturnType<typeof facilitatorFor>, s: PaymentScenario, body: Awaited<ReturnType<typeof bodyMoving>>, code: string, requests = 1) {
    const before = { feePayer: lamportsOf(chain.svm, s.feePayer.address), payer: tokenBalance(chain.svm, s.payerAta), payTo: tokenBalance(chain.svm, s.payToAta) }
    chain.resetStats()
    const verdict = await f.verify(body)
    expect(verdict).toMatchObject({ isValid: false, invalidReason: code, payer: s.payer.address })
    expect(verdict.invalidMessage).toBeTruthy()
    expect(chain.stats.requests).toBe(requests)
    const settled = await f.settle(body)
    expect(settled).toMatchObject({ success: false, errorReason: code, transaction: '' })
    expect(chain.stats.calls.sendTransaction ?? 0).toBe(0)
    expect({ feePayer: lamportsOf(chain.svm, s.feePayer.address), payer: tokenBalance(chain.svm, s.payerAta), payTo: tokenBalance(chain.svm, s.payToAta) }).toEqual(before)
  }

  test('a 10 % transfer-fee mint is refused: one request (mint read in the batch), nothing sent', async () => {
    const f = facilitatorFor(tenPercent)
    await expectRefused(f, tenPercent, await bodyMoving(tenPercent, 10_000n, 10_000n), SVM_REASON.mintTransferFee)
    // The verify above read the mint only, in the batch of the replay check and the simulation.
    const body = await bodyMoving(tenPercent, 10_000n, 10_000n)
    chain.resetStats()
    await f.verify(body)
    expect(chain.stats.calls).toEqual({ getSignatureStatuses: 1, simulateTransaction: 1, getMultipleAccounts: 1 })
  })

  test('a permanent-delegate mint is refused; allowed, it settles', async () => {
    await expectRefused(facilitatorFor(delegated), delegated, await bodyMoving(delegated, 5_000n, 5_000n), SVM_REASON.mintPermanentDelegate)
    const allowed = facilitatorFor(delegated, { allowedMintExtensions: ['permanentDelegate'] })
    const body = await bodyMoving(delegated, 5_000n, 5_000n)
    expect(await allowed.verify(body)).toEqual({ isValid: true, payer: delegated.payer.address })
    expect((await allowed.settle(body)).success).toBe(true)
  })

  test('transfer fees allowed: only a payment that leaves payTo exactly the required amount after the fee passes', async () => {
    const f = facilitatorFor(tenPercent, { allowedMintExtensions: ['transferFee'] })
    // Moving the required 9,000 leaves payTo 8,100; moving less than required is refused by the static rules.
    await expectRefused(f, tenPercent, await bodyMoving(tenPercent, 9_000n, 9_000n), SVM_REASON.amountAfterFeeMismatch)
    await expectRefused(f, tenPercent, await bodyMoving(tenPercent, 8_999n, 9_000n), SVM_REASON.amountMismatch, 0)
    // 10,000 minus its 10 % fee is exactly 9,000.
    const body = await bodyMoving(tenPercent, 10_000n, 9_000n)
    const before = { payer: tokenBalance(chain.svm, tenPercent.payerAta), payTo: tokenBalance(chain.svm, tenPercent.payToAta) }
    chain.resetStats()
    expect(await f.verify(body)).toEqual({ isValid: true, payer: tenPercent.payer.address })
    expect(chain.stats.requests).toBe(1)
    // The mint and the Clock sysvar (whose epoch picks the fee schedule) in one call of the same batch.
    expect(chain.stats.calls).toEqual({ getSignatureStatuses: 1, simulateTransaction: 1, getMultipleAccounts: 1 })
    expect((await f.settle(body)).success).toBe(true)
    expect(tokenBalance(chain.svm, tenPercent.payToAta)).toBe(before.payTo + 9_000n)
    expect(tokenBalance(chain.svm, tenPercent.payerAta)).toBe(before.payer - 10_000n)
  })

  test('transfer fees allowed: the fee schedule of the current epoch (Clock sysvar) decides', async () => {
    const feeAuthority = await fundedSigner(chain.svm)
    const s = await createPaymentScenario(chain.svm, {
      tokenProgram: TOKEN_2022_PROGRAM,
      mintExtensions: [transferFeeExtension({ basisPoints: 0, maximumFee: 0n, authority: feeAuthority.address })],
    })
    const clock = chain.svm.getClock()
    const epoch = clock.epoch
    // SetTransferFee (26/5) to 10 %: it takes effect two epochs later; the older (zero) fee stays in force until then.
    await execute(chain.svm, feeAuthority, [
      {
        programAddress: TOKEN_2022_PROGRAM,
        accounts: [{ address: s.mint, role: AccountRole.WRITABLE }, { address: feeAuthority.address, role: AccountRole.READONLY_SIGNER, signer: feeAuthority } as never],
        data: Uint8Array.from([26, 5, 0xe8, 0x03, ...new Uint8Array(8).fill(0xff)]),
      },
    ])
    // Refused where fees are not allowed: the authority has switched to a non-zero fee.
    await expectRefused(facilitatorFor(s), s, await bodyMoving(s, 1_000n, 1_000n), SVM_REASON.mintTransferFee)
    const f = facilitatorFor(s, { allowedMintExtensions: ['transferFee'] })
    try {
      expect(await f.verify(await bodyMoving(s, 1_000n, 1_000n))).toEqual({ isValid: true, payer: s.payer.address })
      clock.epoch = epoch + 2n
      chain.svm.setClock(clock)
      expect(await f.verify(await bodyMoving(s, 1_000n, 1_000n))).toMatchObject({ isValid: false, invalidReason: SVM_REASON.amountAfterFeeMismatch })
      const body = await bodyMoving(s, 1_000n, 900n)
      expect(await f.verify(body)).toEqual({ isValid: true, payer: s.payer.address })
      const payToBefore = tokenBalance(chain.svm, s.payToAta)
      expect((await f.settle(body)).success).toBe(true)
      expect(tokenBalance(chain.svm, s.payToAta)).toBe(payToBefore + 900n)
    } finally {
      clock.epoch = epoch
      chain.svm.setClock(clock)
    }
  })

  test('a Token-2022 mint without extensions verifies in one request and settles', async () => {
    const f = facilitatorFor(plain)
    const body = await bodyMoving(plain, 4_321n, 4_321n)
    const before = tokenBalance(chain.svm, plain.payToAta)
    chain.resetStats()
    expect(await f.verify(body)).toEqual({ isValid: true, payer: plain.payer.address })
    expect(chain.stats.requests).toBe(1)
    expect((await f.settle(body)).success).toBe(true)
    expect(tokenBalance(chain.svm, plain.payToAta)).toBe(before + 4_321n)
  })

  test('allowedMintExtensions outside the allowable names is a configuration error', () => {
    expect(() =>
      exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url, allowedMintExtensions: ['nonTransferable' as never] }], feePayers: [plain.feePayer] }),
    ).toThrow(FacilitatorError)
  })
})
