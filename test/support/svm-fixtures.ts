/**
 * Solana fixtures on LiteSVM: funded signers, a real SPL (or Token-2022) mint,
 * associated token accounts with balances, and a ready payment scenario behind
 * the loopback JSON-RPC of `litesvm-rpc.ts`. Shared by the adapter tests, the
 * end-to-end tests with the official x402 clients, the benchmark and the demo.
 *
 * @example
 * const chain = await startSolanaTestRpc()
 * const scenario = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM_ADDRESS })
 * // pay scenario.amount of scenario.mint from scenario.payer to scenario.payTo, fees by scenario.feePayer
 * await chain.close()
 */
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  type Instruction,
  type KeyPairSigner,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit'
import { getCreateAccountInstruction } from '@solana-program/system'
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeMint2Instruction,
  getMintToCheckedInstruction,
  getTokenDecoder,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token'
import { FailedTransactionMetadata, LiteSVM } from 'litesvm'
import { SOLANA_DEVNET } from '../../src/networks/networks.js'
import { buildExactSvmTransaction } from '../../src/svm/exact/build-transaction.js'
import { type LiteSvmRpc, type LiteSvmRpcOptions, startLiteSvmRpc } from './litesvm-rpc.js'
import { type MintExtensionInit, mintSpaceWith } from './token-2022-extensions.js'

// The program ids the adapter knows, under the names the tests use (LiteSVM runs the real programs at
// these addresses, so a wrong id would fail every token-2022 and memo test).
import { LIGHTHOUSE_PROGRAM_ADDRESS, MEMO_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS } from '../../src/svm/rules/transaction-rules.js'
export const TOKEN_2022_PROGRAM = TOKEN_2022_PROGRAM_ADDRESS
export const LIGHTHOUSE_PROGRAM = LIGHTHOUSE_PROGRAM_ADDRESS
export const MEMO_PROGRAM = MEMO_PROGRAM_ADDRESS
const ONE_SOL = 1_000_000_000n

/** A loopback Solana RPC over a fresh LiteSVM. Alias of `startLiteSvmRpc` under the name the team uses. */
export function startSolanaTestRpc(options: LiteSvmRpcOptions = {}): Promise<LiteSvmRpc> {
  return startLiteSvmRpc(options)
}

/** A new key pair with `sol` SOL on the chain. */
export async function fundedSigner(svm: LiteSVM, sol = 10n): Promise<KeyPairSigner> {
  const signer = await generateKeyPairSigner()
  svm.airdrop(signer.address, lamports(sol * ONE_SOL))
  return signer
}

/** Signs `instructions` with the signers they name, `payer` paying fees, and executes them; throws on failure. */
export async function execute(svm: LiteSVM, payer: KeyPairSigner, instructions: readonly Instruction[]): Promise<void> {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: svm.latestBlockhash(), lastValidBlockHeight: 1_000_000n }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  )
  const result = svm.sendTransaction(await signTransactionMessageWithSigners(message))
  if (result instanceof FailedTransactionMetadata) throw new Error(`setup transaction failed: ${result.toString()}`)
  // Setup transactions must not collide with the next identical one: give each a fresh blockhash.
  svm.expireBlockhash()
}

/**
 * Creates and initializes a mint owned by `tokenProgram`; `authority` may mint (and freeze, with
 * `freezeAuthority`). Token-2022 `extensions` are initialized before the mint, in order.
 */
export async function createMint(
  svm: LiteSVM,
  options: {
    payer: KeyPairSigner
    authority: Address
    decimals?: number
    tokenProgram?: Address
    freezeAuthority?: Address
    extensions?: readonly MintExtensionInit[]
  },
): Promise<Address> {
  const mint = await generateKeyPairSigner()
  const programAddress = options.tokenProgram ?? TOKEN_PROGRAM_ADDRESS
  const extensions = options.extensions ?? []
  const space = BigInt(mintSpaceWith(extensions))
  await execute(svm, options.payer, [
    getCreateAccountInstruction({
      payer: options.payer,
      newAccount: mint,
      lamports: lamports(svm.minimumBalanceForRentExemption(space)),
      space,
      programAddress,
    }),
    ...extensions.map(
      (extension): Instruction => ({ programAddress, accounts: [{ address: mint.address, role: AccountRole.WRITABLE }], data: extension.data }),
    ),
    getInitializeMint2Instruction(
      { mint: mint.address, decimals: options.decimals ?? 6, mintAuthority: options.authority, freezeAuthority: options.freezeAuthority ?? null },
      { programAddress },
    ),
  ])
  return mint.address
}

/** Creates the associated token account of `owner` for `mint` (idempotent) and returns its address. */
export async function createTokenAccount(
  svm: LiteSVM,
  options: { payer: KeyPairSigner; owner: Address; mint: Address; tokenProgram?: Address },
): Promise<Address> {
  const tokenProgram = options.tokenProgram ?? TOKEN_PROGRAM_ADDRESS
  const [ata] = await findAssociatedTokenPda({ mint: options.mint, owner: options.owner, tokenProgram })
  await execute(svm, options.payer, [
    getCreateAssociatedTokenIdempotentInstruction({ payer: options.payer, ata, owner: options.owner, mint: options.mint, tokenProgram }),
  ])
  return ata
}

/** Mints `amount` to a token account. */
export async function mintTo(
  svm: LiteSVM,
  options: { payer: KeyPairSigner; authority: KeyPairSigner; mint: Address; account: Address; amount: bigint; decimals?: number; tokenProgram?: Address },
): Promise<void> {
  await execute(svm, options.payer, [
    getMintToCheckedInstruction(
      { mint: options.mint, token: options.account, mintAuthority: options.authority, amount: options.amount, decimals: options.decimals ?? 6 },
      { programAddress: options.tokenProgram ?? TOKEN_PROGRAM_ADDRESS },
    ),
  ])
}

/** Everything one payment needs: a payer holding tokens, a recipient with its ATA, a funded fee payer. */
export interface PaymentScenario {
  readonly mint: Address
  readonly decimals: number
  readonly tokenProgram: Address
  /** Pays: holds `balance` tokens in `payerAta` and a little SOL. */
  readonly payer: KeyPairSigner
  readonly payerAta: Address
  /** Receives: its ATA exists (the facilitator never creates it). */
  readonly payTo: Address
  readonly payToAta: Address
  /** The facilitator's fee payer, funded with SOL. */
  readonly feePayer: KeyPairSigner
  /** The mint authority, which can mint more. */
  readonly authority: KeyPairSigner
  readonly balance: bigint
}

/**
 * Sets up a mint, a payer with `balance` tokens, a recipient ATA and a fee payer.
 *
 * @example
 * const s = await createPaymentScenario(chain.svm, { tokenProgram: TOKEN_2022_PROGRAM })
 */
export async function createPaymentScenario(
  svm: LiteSVM,
  options: {
    tokenProgram?: Address
    decimals?: number
    balance?: bigint
    feePayer?: KeyPairSigner
    payer?: KeyPairSigner
    /** Token-2022 mint extensions (see `token-2022-extensions.ts`); the tokenProgram must be Token-2022. */
    mintExtensions?: readonly MintExtensionInit[]
  } = {},
): Promise<PaymentScenario> {
  const tokenProgram = options.tokenProgram ?? TOKEN_PROGRAM_ADDRESS
  const decimals = options.decimals ?? 6
  const balance = options.balance ?? 1_000_000_000n
  const authority = await fundedSigner(svm)
  const payer = options.payer ?? (await fundedSigner(svm, 1n))
  if (options.payer) svm.airdrop(payer.address, lamports(ONE_SOL))
  const payTo = (await generateKeyPairSigner()).address
  const feePayer = options.feePayer ?? (await fundedSigner(svm))
  const mint = await createMint(svm, { payer: authority, authority: authority.address, decimals, tokenProgram, extensions: options.mintExtensions ?? [] })
  const payerAta = await createTokenAccount(svm, { payer: authority, owner: payer.address, mint, tokenProgram })
  const payToAta = await createTokenAccount(svm, { payer: authority, owner: payTo, mint, tokenProgram })
  await mintTo(svm, { payer: authority, authority, mint, account: payerAta, amount: balance, decimals, tokenProgram })
  return { mint, decimals, tokenProgram, payer, payerAta, payTo, payToAta, feePayer, authority, balance }
}

/**
 * Deploys a stand-in at the Lighthouse program id (LiteSVM does not ship
 * Lighthouse): the SPL Memo program's code, which accepts any data and only
 * requires its accounts to sign. Enough to prove the facilitator lets the
 * wallet-guard program through.
 */
export function installLighthouseStandIn(svm: LiteSVM): void {
  const memo = svm.getAccount(MEMO_PROGRAM)
  if (!memo.exists) throw new Error('LiteSVM has no Memo program to copy')
  svm.addProgram(LIGHTHOUSE_PROGRAM, memo.data)
}

/** The token balance of a token account (0 when it does not exist). */
export function tokenBalance(svm: LiteSVM, account: Address): bigint {
  const data = svm.getAccount(account)
  if (!data.exists) return 0n
  return getTokenDecoder().decode(data.data).amount
}

/** The lamports of an account (0 when it does not exist). */
export function lamportsOf(svm: LiteSVM, account: Address): bigint {
  return svm.getBalance(account) ?? 0n
}

/** v2 requirements for a scenario on `solana-devnet`, naming its fee payer. */
export function scenarioRequirements(s: PaymentScenario, amount: bigint, extra: Record<string, unknown> = {}) {
  return {
    scheme: 'exact',
    network: SOLANA_DEVNET as typeof SOLANA_DEVNET,
    amount: amount.toString(),
    asset: s.mint,
    payTo: s.payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: s.feePayer.address, ...extra },
  }
}

export interface ScenarioPaymentOptions {
  /** A memo; by default a random one, so that two payments never share a signature. Pass `null` for none. */
  memo?: string | null
  extra?: Record<string, unknown>
  /** Who pays. @default the scenario's payer */
  payer?: KeyPairSigner
}

/**
 * A v2 verify/settle body for a scenario, the transaction built by our own
 * builder on the RPC's latest blockhash.
 *
 * @example
 * const body = await scenarioPaymentBody(chain.url, s, 1_000n)
 */
export async function scenarioPaymentBody(rpcUrl: string, s: PaymentScenario, amount: bigint, options: ScenarioPaymentOptions = {}) {
  const requirements = scenarioRequirements(s, amount, options.extra)
  const { value: blockhash } = await createSolanaRpc(rpcUrl).getLatestBlockhash().send()
  const memo = options.memo === undefined ? crypto.randomUUID() : options.memo
  const transaction = await buildExactSvmTransaction({
    payer: options.payer ?? s.payer,
    feePayer: s.feePayer.address,
    mint: s.mint,
    payTo: s.payTo,
    amount,
    decimals: s.decimals,
    tokenProgram: s.tokenProgram,
    blockhash,
    ...(memo === null ? {} : { memo }),
  })
  return { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: { transaction } }, paymentRequirements: requirements }
}
