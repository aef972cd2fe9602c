import * as z from 'zod'
import { encodeFunctionData, isAddress, type Address, type Hex } from 'viem'
import type { PaymentContext } from '../../core/adapter.js'
import { formatIssuePath } from '../../schemas/parse-request.js'
import { address, uint256 } from '../exact/authorization.js'
import { admitAsset, payeeCreditOf, type AdmittedAsset, type AssetAdmission, type PayeeCredit } from '../asset-policy.js'
import { PAYEE_PROBE_GAS, payeeRejection, probePayeeCredit } from '../chain/payee-probe.js'
import { isMagicValue } from '../exact/check-chain-state.js'
import { sameAddress, unwrapErc6492 } from '../exact/prepare-payment.js'
import { aggregate3Calldata, allowanceCalldata, balanceOfCalldata, decodeAggregate3Result, exactProxySettleCalldata, isValidSignatureCalldata, nonceBitmapCalldata, PERMIT2_GETTER_CALLDATA, type Aggregate3Call, type Aggregate3Result } from '../codec/calldata.js'
import type { NetworkRuntime } from '../chain/network-runtime.js'
import { gasSponsoringPermit, permitDeadlineRejection, type Eip2612Permit } from './eip2612-extension.js'
import { eip2612NoncesAbi, exactPermit2ProxyAbi, PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY } from '../codec/permit2-abi.js'
import { EVM_REJECTION, PERMIT2_REJECTION, type Rejection } from '../reasons.js'
import { recoverAuthorizationSigner } from '../crypto/recover-signer.js'
import { hashPermit2Witness, type Permit2WitnessMessage } from '../codec/permit2-typed-data.js'
import { toRpcFault } from '../chain/rpc-fault.js'
import { feeFields, nodeRefusal, quantity, simulateAtLimit, unfundedSigner, type SettlementSender } from '../chain/settlement-simulation.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'


/** The inner payload of an `exact` payment through Permit2, as the official `@x402/evm` client sends it. */
export const permit2PayloadSchema = z.object({
  // Permit2 takes a 65-byte (or 64-byte compact) signature from an account without code, any bytes for ERC-1271.
  signature: z.string().regex(/^0x([0-9a-fA-F]{2}){1,16384}$/, 'must be hex signature bytes'),
  permit2Authorization: z.object({
    from: address,
    permitted: z.object({ token: address, amount: uint256 }),
    spender: address,
    nonce: uint256,
    deadline: uint256,
    witness: z.object({ to: address, validAfter: uint256 }),
  }),
})

/** The signed fields (see Permit2WitnessMessage), with the signature and the owner they came from. */
export interface Permit2Payload extends Permit2WitnessMessage {
  readonly signature: Hex
  readonly from: Address
}

/** Validates the untrusted inner payload; a bad shape is an `invalid_payload` rejection naming the field. */
export function parsePermit2Payload(raw: unknown): Permit2Payload | Rejection {
  const parsed = permit2PayloadSchema.safeParse(raw)
  if (!parsed.success) return payloadShapeRejection(parsed.error, 'a Permit2 authorization and signature')
  return permit2PayloadOf(parsed.data)
}

/** A schema-checked hex string, typed as viem's. */
const hex = (value: string): Hex => `0x${value.slice(2)}`

/** A payload that failed its schema, as `invalid_payload` naming the first field at fault. */
export function payloadShapeRejection(error: z.ZodError, expected: string): Rejection {
  const issue = error.issues[0]
  const path = formatIssuePath(['paymentPayload', 'payload', ...(issue?.path ?? [])])
  return { reason: EVM_REJECTION.invalidPayload, message: `${path}: ${issue?.message ?? 'is invalid'} (expected ${expected})` }
}

/**
 * A Permit2 payload that passed its schema (or a schema extending it), its addresses' checksums
 * checked (`witnessAddresses`: those a wider witness adds), as the adapter reads it.
 */
export function permit2PayloadOf(data: z.infer<typeof permit2PayloadSchema>, witnessAddresses: readonly (readonly [string, string])[] = []): Permit2Payload | Rejection {
  const { signature, permit2Authorization: a } = data
  for (const [field, value] of [['from', a.from], ['permitted.token', a.permitted.token], ['spender', a.spender], ['witness.to', a.witness.to], ...witnessAddresses] as const) {
    if (!isAddress(value, { strict: true })) {
      return { reason: EVM_REJECTION.invalidPayload, message: `paymentPayload.payload.permit2Authorization.${field} is not a valid address (wrong checksum)` }
    }
  }
  return {
    signature: hex(signature),
    from: hex(a.from),
    token: hex(a.permitted.token),
    amount: a.permitted.amount,
    spender: hex(a.spender),
    nonce: a.nonce,
    deadline: a.deadline,
    to: hex(a.witness.to),
    validAfter: a.witness.validAfter,
  }
}

/** A Permit2 payment that passed the offline checks. */
export interface PreparedPermit2 {
  readonly payload: Permit2Payload
  readonly payer: Address
  /** The token, admitted by the network's asset policy (see admitAsset). */
  readonly asset: AdmittedAsset
  /**
   * A token outside the known table: what the proxy call must credit `payTo` (exact: the amount;
   * upto: the amount charged), proven by verify's simulation and by settle's before it sends.
   */
  readonly payee?: PayeeCredit
  /** The EIP-712 digest Permit2 checks. */
  readonly digest: Hex
  /** The signature recovers to the payer; otherwise only its wallet's ERC-1271 answer can prove it. */
  readonly recovered: boolean
  /** Calldata of the proxy call (`settle`, or `settleWithPermit` with a permit) that settle sends and verify simulates. */
  readonly settleCalldata: Hex
  /** The proxy called (the spender); the exact proxy when absent. */
  readonly proxy?: Address
  /** The payer's EIP-2612 permit to Permit2 (`eip2612GasSponsoring`), run by the proxy before the transfer. */
  readonly permit2612?: Eip2612Permit
  /**
   * The signature came in an ERC-6492 envelope (unwrapped in `payload.signature`, which Permit2
   * receives): the payer is a smart wallet a factory deploys, and the chain check refuses it while
   * the wallet has no code (see checkPermit2State).
   */
  readonly deployment?: { readonly factory: Address; readonly data: Hex }
}

export interface Permit2Options {
  readonly settleMarginSeconds: number
  readonly nowSeconds: () => bigint
  /** Lower-cased allowed ERC-6492 factories (the EIP-3009 path's allow-list). */
  readonly erc6492Factories: ReadonlySet<string>
}

/**
 * The signature Permit2 receives: an ERC-6492 envelope unwrapped (its factory on the allow-list, as
 * for EIP-3009 payments; Permit2 itself knows no envelope and would hand the wallet the whole
 * bytes), any other signature as it came.
 */
function permit2SignatureOf(signature: Hex, options: Permit2Options): { signature: Hex; deployment?: { factory: Address; data: Hex } } | Rejection {
  const wrapped = unwrapErc6492(signature)
  if (!wrapped) return { signature }
  if (!options.erc6492Factories.has(wrapped.factory.toLowerCase())) {
    return { reason: EVM_REJECTION.factoryNotAllowed, message: `ERC-6492 factory ${wrapped.factory} is not allowed` }
  }
  return { signature: wrapped.signature, deployment: { factory: wrapped.factory, data: wrapped.data } }
}


/**
 * The offline checks, in the official facilitator's order and with its codes: spender, recipient,
 * deadline, validAfter, amount, token, then the gas-sponsoring extension (see gasSponsoringPermit);
 * the signature is recovered here and, when it does not recover to the payer, left to the
 * wallet's ERC-1271 check.
 */
export async function preparePermit2(ctx: PaymentContext, runtime: NetworkRuntime, options: Permit2Options, payload: Permit2Payload | Rejection): Promise<PreparedPermit2 | Rejection> {
  if ('reason' in payload) return payload
  const admission = permit2FieldChecks(ctx, runtime, payload, options, { proxy: X402_EXACT_PERMIT2_PROXY, scheme: 'exact', amount: ctx.amount, amountName: 'the required amount' })
  if ('reason' in admission) return admission
  const signed = await signedPermit(ctx, payload, options, admission, payload.amount, (p) => hashPermit2Witness(runtime.chainId, p))
  if ('reason' in signed) return signed
  return { ...signed, settleCalldata: exactSettleCalldata(signed.payload, signed.permit2612) }
}

/**
 * The checks after the fields, the same for exact and upto: the gas-sponsoring permit, the ERC-6492
 * envelope (unwrapped: Permit2 gets the inner signature), the digest (`digestOf`: the witness's
 * typed data) and whether the signature recovers to the payer (a wallet's is proven on chain).
 * `admission` is the asset policy's answer (see permit2FieldChecks), `charged` what the proxy call
 * moves to `payTo` (a token outside the known table must be proven to credit exactly that).
 */
export async function signedPermit<P extends Permit2Payload>(
  ctx: PaymentContext,
  payload: P,
  options: Permit2Options,
  admission: AssetAdmission,
  charged: bigint,
  digestOf: (signed: P) => Hex,
): Promise<(Omit<PreparedPermit2, 'settleCalldata' | 'proxy'> & { readonly payload: P }) | Rejection> {
  const permit2612 = sponsoringPermitOf(ctx, payload, options)
  if (permit2612 && 'reason' in permit2612) return permit2612
  const unwrapped = permit2SignatureOf(payload.signature, options)
  if ('reason' in unwrapped) return unwrapped
  const { deployment } = unwrapped
  const signed: P = deployment ? { ...payload, signature: unwrapped.signature } : payload
  const digest = digestOf(signed)
  // A wallet's signature (an ERC-6492 envelope's inner one) is proven by the wallet alone.
  const signer = deployment ? undefined : await recoverPermit2Signer(digest, signed.signature)
  const payee = payeeCreditOf(admission, signed.from, signed.to, charged)
  return {
    payload: signed,
    payer: signed.from,
    asset: admission.asset,
    ...(payee ? { payee } : {}),
    digest,
    recovered: signer !== undefined && sameAddress(signer, signed.from),
    ...(deployment ? { deployment } : {}),
    ...(permit2612 ? { permit2612 } : {}),
  }
}

/** The extension's permit for this Permit2 authorization (see gasSponsoringPermit), checked now. */
function sponsoringPermitOf(ctx: PaymentContext, payload: Permit2Payload, options: Permit2Options): Eip2612Permit | Rejection | undefined {
  return gasSponsoringPermit(ctx, {
    payer: payload.from,
    asset: ctx.asset,
    permittedAmount: payload.amount,
    nowSeconds: options.nowSeconds(),
    settleMarginSeconds: options.settleMarginSeconds,
  })
}

/** The proxy's struct of an EIP-2612 permit. */
export const permit2612Arg = (permit: Eip2612Permit) => ({ value: permit.value, deadline: permit.deadline, r: permit.r, s: permit.s, v: permit.v })

/** Calldata of the exact proxy's `settle`, or `settleWithPermit` when the payment carries an EIP-2612 permit. */
export function exactSettleCalldata(payload: Permit2Payload, permit2612?: Eip2612Permit): Hex {
  // The common shape is written word by word (see calldata.ts); the rarer one with a permit goes through viem.
  if (!permit2612) return exactProxySettleCalldata(payload)
  const permit = { permitted: { token: payload.token, amount: payload.amount }, nonce: payload.nonce, deadline: payload.deadline }
  const witness = { to: payload.to, validAfter: payload.validAfter }
  return encodeFunctionData({ abi: exactPermit2ProxyAbi, functionName: 'settleWithPermit', args: [permit2612Arg(permit2612), permit, payload.from, witness, payload.signature] })
}

/** Settle's clock check of a verified payment: the Permit2 window, and the deadline of its EIP-2612 permit. */
export function preparedWindow(payment: PreparedPermit2, options: Permit2Options): Rejection | undefined {
  const window = permit2Window(payment.payload, options)
  if (window || !payment.permit2612) return window
  return permitDeadlineRejection(payment.permit2612.deadline, options.nowSeconds(), options.settleMarginSeconds)
}

const S_MASK = (1n << 255n) - 1n

/**
 * The key that signed a Permit2 digest, as Permit2's SignatureVerification reads a signature for an
 * account without code: 65 bytes (r, s, v), or 64 bytes in the compact form of EIP-2098 (r, vs, the
 * parity in the top bit of s); `undefined` for any other length (left to the wallet's ERC-1271 check).
 * The signature settle sends is the payer's own bytes, which Permit2 takes in either form.
 */
async function recoverPermit2Signer(digest: Hex, signature: Hex): Promise<Address | undefined> {
  if (signature.length === 132) return recoverAuthorizationSigner(digest, signature)
  if (signature.length !== 130) return undefined
  const vs = BigInt(`0x${signature.slice(66, 130)}`)
  const s = (vs & S_MASK).toString(16).padStart(64, '0')
  const v = vs >> 255n === 0n ? '1b' : '1c'
  return recoverAuthorizationSigner(digest, `0x${signature.slice(2, 66)}${s}${v}`)
}

/** What a Permit2 payment of one scheme must name: the scheme's proxy as spender, and the amount it permits. */
export interface Permit2Expectation {
  readonly proxy: Address
  readonly scheme: 'exact' | 'upto'
  /** The amount `permitted.amount` must equal (exact: the price; upto: the maximum), and how messages name it. */
  readonly amount: bigint
  readonly amountName: string
}

/**
 * The offline field checks of both Permit2 schemes (and so of the EIP-2612 sponsoring path): the
 * requirements' addresses, the asset policy (see admitAsset: the same rule and code as for EIP-3009
 * payments), then in the official facilitator's order spender, recipient, the clock (see
 * permit2Window), amount, token. Answers the policy's admission of the asset when all pass.
 */
export function permit2FieldChecks(
  ctx: PaymentContext,
  runtime: NetworkRuntime,
  payload: Permit2Payload,
  options: Permit2Options,
  expected: Permit2Expectation,
): AssetAdmission | Rejection {
  if (!isAddress(ctx.asset, { strict: true }) || !isAddress(ctx.payTo, { strict: true })) {
    return { reason: EVM_REJECTION.invalidRequirements, message: 'paymentRequirements.asset and payTo must be valid EVM addresses' }
  }
  const admission = admitAsset(runtime, ctx.asset)
  if ('reason' in admission) return admission
  if (!sameAddress(payload.spender, expected.proxy)) {
    return { reason: PERMIT2_REJECTION.spender, message: `permit2Authorization.spender must be the x402 ${expected.scheme} Permit2 proxy ${expected.proxy}` }
  }
  if (!sameAddress(payload.to, ctx.payTo)) {
    return { reason: PERMIT2_REJECTION.recipientMismatch, message: 'permit2Authorization.witness.to differs from paymentRequirements.payTo' }
  }
  const window = permit2Window(payload, options)
  if (window) return window
  // Exact equality: a larger permit would let the proxy move more than the price (upto: than the maximum).
  if (payload.amount !== expected.amount) {
    return { reason: PERMIT2_REJECTION.amountMismatch, message: `permit2Authorization.permitted.amount ${payload.amount} differs from ${expected.amountName} ${expected.amount}` }
  }
  if (!sameAddress(payload.token, ctx.asset)) {
    return { reason: PERMIT2_REJECTION.tokenMismatch, message: 'permit2Authorization.permitted.token differs from paymentRequirements.asset' }
  }
  return admission
}

/**
 * The checks whose answer changes with time (the official order puts the clock between recipient
 * and amount; settle re-runs the clock alone, see preparedWindow).
 */
export function permit2Window(payload: Permit2Payload, options: Permit2Options): Rejection | undefined {
  const now = options.nowSeconds()
  if (payload.deadline < now + BigInt(options.settleMarginSeconds)) {
    return { reason: PERMIT2_REJECTION.deadlineExpired, message: `permit2Authorization.deadline ${payload.deadline} has passed or leaves less than ${options.settleMarginSeconds} s to settle` }
  }
  if (payload.validAfter > now) {
    return { reason: PERMIT2_REJECTION.notYetValid, message: `permit2Authorization.witness.validAfter ${payload.validAfter} is in the future` }
  }
  return undefined
}

/** What the chain said about a prepared Permit2 payment. */
export interface Permit2Verdict {
  readonly rejection: Rejection | undefined
  /**
   * What the proxy can move from the payer: its balance, capped by its allowance to Permit2 as it
   * will stand when the transfer runs (the permit's value when its nonce is the token's current one,
   * since EIP-2612 `permit` sets the allowance). Held against payments racing from the same payer.
   */
  readonly balance: bigint | undefined
  /**
   * The payment carries an EIP-2612 permit but the payer's allowance to Permit2 already covers it:
   * settle must then call plain `settle`. `settleWithPermit` would set the allowance down to the
   * permit's value, and another payment of this payer verified against the larger allowance would
   * revert at the facilitator's cost.
   */
  readonly permitUnneeded?: boolean
}

// Gas for Multicall3 and its reads (a wallet's ERC-1271 check may take more: it fails alone).
const READS_GAS = 200_000n

/**
 * The chain state of a Permit2 payment in one HTTP round trip: a Multicall3 `eth_call` (the token's
 * balance and allowance to Permit2, Permit2's nonce bit, the proxy's code, and, for a signature that
 * does not recover to the payer, the wallet's ERC-1271 answer) and, in the same JSON-RPC batch, an
 * `eth_call` of the exact proxy call settle sends (`settleWithPermit` with an EIP-2612 permit), run
 * as its sender with its fees and with `maxSettlementGas` as its gas limit, the limit settle sends
 * it with (not an `eth_estimateGas`: on anvil an estimate costs the node ten times a call, and the
 * proxy call's price is bounded by the same cap either way). For an ERC-6492 signature the wallet's
 * code is read in the same batch. Reads come first in the answer: they name why a simulation
 * reverts (the official codes), and a spent nonce gets its own code. With an EIP-2612 permit the
 * read also takes the token's `nonces(payer)`, and a low allowance is only a rejection when the
 * simulation (which runs the permit) fails. For a token outside the known table, a third call in the
 * batch proves that the proxy call credits `payTo` with exactly the amount (see probePayeeCredit).
 */
export async function checkPermit2State(runtime: NetworkRuntime, payment: PreparedPermit2, sender: SettlementSender, maxSettlementGas: bigint): Promise<Permit2Verdict> {
  const { payer, asset, payload } = payment
  const proxy = payment.proxy ?? X402_EXACT_PERMIT2_PROXY
  const calls: Aggregate3Call[] = [
    { target: asset, allowFailure: true, callData: balanceOfCalldata(payer) },
    { target: asset, allowFailure: true, callData: allowanceCalldata(payer, PERMIT2_ADDRESS) },
    { target: PERMIT2_ADDRESS, allowFailure: true, callData: nonceBitmapCalldata(payer, payload.nonce >> 8n) },
    { target: proxy, allowFailure: true, callData: PERMIT2_GETTER_CALLDATA },
  ]
  const walletIndex = payment.recovered ? -1 : calls.push({ target: payer, allowFailure: true, callData: isValidSignatureCalldata(payment.digest, payload.signature) }) - 1
  const permitNonceIndex = payment.permit2612 ? calls.push({ target: asset, allowFailure: true, callData: encodeFunctionData({ abi: eip2612NoncesAbi, functionName: 'nonces', args: [payer] }) }) - 1 : -1
  // Issued in the same tick: the transport sends both as one JSON-RPC batch.
  const multicall = runtime.client.request({
    method: 'eth_call',
    params: [{ from: sender.from, to: runtime.multicall3, data: aggregate3Calldata(calls), gas: quantity(READS_GAS), ...feeFields(sender.fees) }, 'latest'],
  })
  const simulation = simulateAtLimit(runtime, sender, { to: proxy, data: payment.settleCalldata }, maxSettlementGas)
  // A token outside the known table: the same proxy call, run as its sender between two reads of payTo's
  // balance (see probePayeeCredit), in the same batch. A known token's verify sends nothing more.
  const credit = payment.payee ? probePayeeCredit(runtime, sender, [{ to: proxy, data: payment.settleCalldata }], payment.payee, maxSettlementGas + PAYEE_PROBE_GAS) : undefined
  // An ERC-6492 signature: whether the wallet has code, read from the node in the same batch.
  const codeRead = payment.deployment
    ? runtime.client.request({ method: 'eth_getCode', params: [payer, 'latest'] }).then(
        (code) => ({ code }),
        (error: unknown) => ({ fault: toRpcFault(error, 'reading the payer wallet') }),
      )
    : undefined
  let raw: Hex
  try {
    raw = await multicall
  } catch (error) {
    await simulation
    await codeRead
    if (nodeRefusal(error) === 'unfunded') throw unfundedSigner(runtime, sender.from, error)
    throw toRpcFault(error, 'reading the Permit2 payment state')
  }
  if (raw === '0x') throw new FacilitatorError('misconfigured', `Multicall3 is not deployed at ${runtime.multicall3} on ${runtime.network.caip2}`)
  let results: Aggregate3Result[]
  try {
    results = decodeAggregate3Result(raw, calls.length)
  } catch (error) {
    throw new FacilitatorError('rpc_error', 'reading the Permit2 payment state: the RPC answered with data that is not an aggregate3 result', { cause: error })
  }
  const word = (index: number): bigint | undefined => {
    const result = results[index]!
    return result.success && result.returnData.length >= 66 ? BigInt(result.returnData.slice(0, 66)) : undefined
  }
  const balance = word(0)
  const allowance = word(1)
  const bitmap = word(2)
  const { permit2612 } = payment
  const tokenNonce = permitNonceIndex < 0 ? undefined : word(permitNonceIndex)
  // EIP-2612 permit sets the allowance: with the token's current nonce it will stand at the permit's value.
  // An allowance that covers the payment makes the permit unneeded: settle skips it (see permitUnneeded).
  const permitUnneeded = permit2612 !== undefined && allowance !== undefined && allowance >= payload.amount
  const permitApplies = permit2612 !== undefined && !permitUnneeded && tokenNonce === permit2612.nonce
  const spendable = allowance === undefined ? undefined : permitApplies ? permit2612.value : allowance
  const movable = balance === undefined || spendable === undefined ? balance : balance < spendable ? balance : spendable
  const verdict = (rejection: Rejection | undefined): Permit2Verdict => ({ rejection, balance: movable, ...(permitUnneeded ? { permitUnneeded } : {}) })
  const outcome = await simulation
  if ('fault' in outcome) throw outcome.fault
  const wallet = await codeRead
  if (wallet && 'fault' in wallet) throw wallet.fault
  if (balance === undefined || allowance === undefined) {
    return verdict({ reason: PERMIT2_REJECTION.assetNotDeployed, message: `asset ${asset} does not answer balanceOf and allowance (no ERC-20 contract there)` })
  }
  if (wallet && (wallet.code === undefined || wallet.code === '0x')) {
    // Unlike an EIP-3009 payment, deploying it would not help: approve (to Permit2) must come from the wallet itself.
    return verdict({
      reason: EVM_REJECTION.undeployedWallet,
      message: `the payer's smart wallet ${payer} is not deployed (an ERC-6492 signature): a wallet without code cannot have approved Permit2, so this Permit2 payment could not settle; deploy the wallet and approve Permit2 from it first`,
    })
  }
  if (walletIndex >= 0 && !isMagicValue(results[walletIndex]!)) {
    return verdict({ reason: PERMIT2_REJECTION.signature, message: 'the signature is not valid for the payer (neither its key nor its ERC-1271 wallet signed this permit)' })
  }
  if (word(3) === undefined) {
    return verdict({ reason: PERMIT2_REJECTION.proxyNotDeployed, message: `the x402 Permit2 proxy is not deployed at ${proxy} on ${runtime.network.caip2}` })
  }
  if (bitmap === undefined) {
    return verdict({ reason: PERMIT2_REJECTION.proxyNotDeployed, message: `Permit2 is not deployed at ${PERMIT2_ADDRESS} on ${runtime.network.caip2}` })
  }
  if ((bitmap >> (payload.nonce & 0xffn)) & 1n) {
    return verdict({ reason: PERMIT2_REJECTION.nonceUsed, message: 'this Permit2 nonce has already been used (the payment was settled, or the payer invalidated it)' })
  }
  if (balance < payload.amount) {
    return verdict({ reason: PERMIT2_REJECTION.insufficientBalance, message: `the payer's balance ${balance} is below ${payload.amount}` })
  }
  // With a permit the simulation runs it: a low allowance only matters when the simulation fails.
  if (allowance < payload.amount && !(permit2612 && !('rejection' in outcome))) {
    if (!permit2612) {
      return verdict({ reason: PERMIT2_REJECTION.allowanceRequired, message: `the payer's allowance to Permit2 (${allowance}) is below ${payload.amount}: the payer must approve Permit2 first` })
    }
    const why =
      tokenNonce === undefined
        ? 'the token does not answer nonces(owner): it has no EIP-2612 permit'
        : tokenNonce !== permit2612.nonce
          ? `the permit was signed for token nonce ${permit2612.nonce}, the payer's current nonce is ${tokenNonce} (used or not yet reached)`
          : 'the token refused the permit (its signature is not the payer\'s for this token\'s domain)'
    return verdict({ reason: PERMIT2_REJECTION.allowanceRequired, message: `the payer's allowance to Permit2 (${allowance}) is below ${payload.amount} and the eip2612GasSponsoring permit would not raise it: ${why}` })
  }
  if ('staleFees' in outcome) throw new FacilitatorError('rpc_error', 'simulating the Permit2 settlement: the node found the fee quote below its base fee; retry')
  if ('rejection' in outcome) {
    const { rejection } = outcome
    return verdict(rejection.reason === EVM_REJECTION.simulationFailed ? { reason: PERMIT2_REJECTION.simulationFailed, message: rejection.message } : rejection)
  }
  if (credit) {
    const refused = payeeRejection(await credit)
    if (refused) return verdict(refused)
  }
  // The proxy call ran at maxSettlementGas, the limit settle sends it with.
  return verdict(undefined)
}

