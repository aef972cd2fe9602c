import * as z from 'zod'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { encodeBase58 } from '../codec/base58.js'
import { bytesOfBase64 } from '../codec/wire-transaction.js'
import { type RpcOutcome, resultOf } from './solana-rpc.js'

/** An account as `getMultipleAccounts` (and a simulation's `accounts`) answer it in base64. */
export const encodedAccountSchema = z.looseObject({
  data: z.tuple([z.string(), z.literal('base64')]),
  owner: z.string(),
})
export type EncodedAccount = z.infer<typeof encodedAccountSchema>
export const multipleAccountsSchema = z.looseObject({ value: z.array(encodedAccountSchema.nullable()) })
export const simulationSchema = z.looseObject({
  // `accounts` is read on its own (see sourceBalanceOf): an odd shape there loses the spend figure, not the verdict.
  value: z.looseObject({ err: z.unknown().nullish(), logs: z.array(z.string()).nullish(), accounts: z.unknown() }),
})
const simulatedAccountsSchema = z.array(encodedAccountSchema.nullable())

/** The Clock sysvar, read beside a Token-2022 mint when transfer fees are allowed: the epoch picks the fee schedule. */
export const CLOCK_SYSVAR = 'SysvarC1ock11111111111111111111111111111111'
const SYSVAR_OWNER = 'Sysvar1111111111111111111111111111111111111'
/** Clock layout: slot, epoch start timestamp, epoch (u64 LE at 16), leader schedule epoch, unix timestamp. */
const CLOCK_EPOCH_OFFSET = 16

/** The epoch of a Clock sysvar account; `undefined` when the account is not one. */
export function epochOfClock(account: EncodedAccount | null | undefined): bigint | undefined {
  const clock = account && account.owner === SYSVAR_OWNER ? bytesOfBase64(account.data[0]) : undefined
  if (!clock || clock.length < CLOCK_EPOCH_OFFSET + 8) return undefined
  return Buffer.from(clock.buffer, clock.byteOffset, clock.byteLength).readBigUInt64LE(CLOCK_EPOCH_OFFSET)
}

/** The result of one outcome in `schema`'s shape, or a thrown `rpc_error` naming the method. */
export function parseResult<T extends z.ZodType>(schema: T, outcome: RpcOutcome | undefined, method: string): z.infer<T> {
  const parsed = schema.safeParse(resultOf(outcome, method))
  if (!parsed.success) throw new FacilitatorError('rpc_error', `the Solana RPC answered ${method} in an unknown shape`)
  return parsed.data
}

/** Byte layout of an SPL token account (Token-2022 shares it and appends extensions). */
const TOKEN_ACCOUNT_SIZE = 165
const TOKEN_ACCOUNT_AMOUNT_OFFSET = 64

/** The amount of a token account of `mint` under `tokenProgram`; `undefined` when the account is not one. */
export function decodeTokenAccount(account: EncodedAccount | null | undefined, expected: { readonly mint: string; readonly tokenProgram: string }): { amount: bigint } | undefined {
  if (!account || account.owner !== expected.tokenProgram) return undefined
  // Only the mint and the amount matter: read them in place rather than decoding (and base58-encoding) every field.
  const data = Buffer.from(account.data[0], 'base64')
  if (data.length < TOKEN_ACCOUNT_SIZE) return undefined
  const mint = encodeBase58(data.subarray(0, 32))
  return mint === expected.mint ? { amount: data.readBigUInt64LE(TOKEN_ACCOUNT_AMOUNT_OFFSET) } : undefined
}

/**
 * The source's token balance after the simulated transfer, from the simulation's `accounts`
 * (`undefined` when the node left them out or answered an odd shape).
 */
export function sourceBalanceOf(accounts: unknown, expected: { readonly mint: string; readonly tokenProgram: string }): bigint | undefined {
  const parsed = simulatedAccountsSchema.safeParse(accounts)
  return parsed.success ? decodeTokenAccount(parsed.data[0], expected)?.amount : undefined
}

/**
 * Why a node's answer to sendTransaction proves the bytes can never land: a signature that does not
 * verify (-32003) or a transaction that does not sanitize. `undefined` for anything else (accepted,
 * or a refusal that proves nothing: another node may have the bytes).
 */
export function finalRefusalOf(outcome: RpcOutcome | undefined): string | undefined {
  if (!outcome || outcome.ok) return undefined
  const { code, message } = outcome.error
  if (code === -32003 || /signature verification fail|SignatureFailure|sanitiz/i.test(message)) {
    return `the node refused the transaction for good: ${message.slice(0, 200)}`
  }
  return undefined
}

/** A short text of a Solana TransactionError (`"BlockhashNotFound"`, `{"InstructionError":[2,{"Custom":1}]}`). */
export function describeTransactionError(err: unknown): string {
  if (typeof err === 'string') return err
  try {
    return JSON.stringify(err, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)).slice(0, 300)
  } catch {
    return 'unknown error'
  }
}
