import type { PaymentContext } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { VerifyResponse } from '../../schemas/messages.js'
import { bytesOfBase64 } from '../codec/wire-transaction.js'
import { decodeTokenAccount, epochOfClock, type EncodedAccount, multipleAccountsSchema, parseResult } from '../rpc/answers.js'
import type { RpcOutcome } from '../rpc/solana-rpc.js'
import { SVM_REASON } from '../reasons.js'
import { judgeToken2022Mint, readToken2022Mint } from '../rules/mint-extensions.js'
import type { CheckedPayment } from '../rules/transaction-rules.js'
import { invalid } from './invalid.js'
import type { NetworkRuntime } from './runtime.js'

/**
 * Judges a Token-2022 payment's mint (read in verify's batch): its extensions, and, where the operator
 * allows transfer fees, that what reaches payTo after the fee is the required amount.
 */
export function mintProblem(ctx: PaymentContext, runtime: NetworkRuntime, payment: CheckedPayment, outcome: RpcOutcome | undefined, readsEpoch: boolean): VerifyResponse | undefined {
  const payer = payment.payer
  const [mintAccount, clockAccount] = parseResult(multipleAccountsSchema, outcome, 'getMultipleAccounts').value
  if (!mintAccount || mintAccount.owner !== payment.tokenProgram) {
    return invalid(SVM_REASON.mintAccountInvalid, `mint ${payment.mint} does not exist under the transfer's token program`, payer)
  }
  const mint = readToken2022Mint(bytesOfBase64(mintAccount.data[0]))
  if (!mint) return invalid(SVM_REASON.mintUnparseable, `mint ${payment.mint} is not a Token-2022 mint this facilitator can read`, payer)
  let epoch: bigint | undefined
  if (readsEpoch) {
    epoch = epochOfClock(clockAccount)
    if (epoch === undefined) throw new FacilitatorError('rpc_error', 'the Solana RPC answered the Clock sysvar in an unknown shape')
  }
  const verdict = judgeToken2022Mint(mint, { amount: payment.amount, allowed: runtime.allowedMintExtensions, ...(epoch === undefined ? {} : { epoch }) })
  if (!verdict.ok) return invalid(verdict.reason, `mint ${payment.mint}: ${verdict.message}`, payer)
  if (verdict.received !== ctx.amount) {
    // Only reachable where transfer fees are allowed: elsewhere the rules require the exact amount and a fee refuses the mint.
    return mint.transferFee
      ? invalid(SVM_REASON.amountAfterFeeMismatch, `payTo would receive ${verdict.received} of the ${payment.amount} moved (the mint's transfer fee is withheld); the requirements ask for ${ctx.amount}`, payer)
      : invalid(SVM_REASON.amountMismatch, `the transfer moves ${payment.amount}, the requirements ask for exactly ${ctx.amount} (the mint charges no transfer fee)`, payer)
  }
  return undefined
}

/** Reads the transfer's accounts after a failed simulation: a missing or unfunded one is the likely cause. */
export async function accountProblem(ctx: PaymentContext, runtime: NetworkRuntime, payment: CheckedPayment): Promise<VerifyResponse | undefined> {
  const payer = payment.payer
  let accounts: (EncodedAccount | null)[]
  try {
    const [accountsOutcome] = await runtime.rpc.request(
      [{ method: 'getMultipleAccounts', params: [[payment.mint, payment.source, payment.destination], { encoding: 'base64', commitment: 'confirmed' }] }],
      ctx.signal,
    )
    accounts = parseResult(multipleAccountsSchema, accountsOutcome, 'getMultipleAccounts').value
  } catch (error) {
    // The verdict is known already (the simulation failed): a failed read only loses the detail.
    if (error instanceof FacilitatorError) return undefined
    throw error
  }
  const [mintAccount, sourceAccount, destinationAccount] = accounts
  if (!mintAccount || mintAccount.owner !== payment.tokenProgram) {
    return invalid(SVM_REASON.mintAccountInvalid, `mint ${payment.mint} does not exist under the transfer's token program`, payer)
  }
  const source = decodeTokenAccount(sourceAccount, payment)
  if (!source) return invalid(SVM_REASON.sourceAccountMissing, `source token account ${payment.source} does not exist or does not hold this mint`, payer)
  const destination = decodeTokenAccount(destinationAccount, payment)
  if (!destination) {
    return invalid(SVM_REASON.destinationAccountMissing, `destination token account ${payment.destination} does not exist; the facilitator does not create accounts`, payer)
  }
  if (source.amount < payment.amount) {
    return invalid(SVM_REASON.insufficientFunds, `the source token account holds ${source.amount}, the payment needs ${payment.amount}`, payer)
  }
  return undefined
}
