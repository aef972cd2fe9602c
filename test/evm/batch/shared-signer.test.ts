/**
 * One gas key for exact and batch-settlement in one facilitator (evmSchemes with batchSettlement),
 * on anvil: exact payments, channel deposits and a claim settled concurrently, interleaved, all land
 * from that key with consecutive nonces and no nonce error, because both adapters take nonces from
 * the same counter and send through the same lane.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { signExactEvmPayment } from '../../../src/evm/exact/sign-payment.js'
import { signVoucher } from '../../support/batch-settlement-signing.js'
import { batchChannel, batchRequest, batchRequirements, channelOnChain, depositPayload, evmSchemesThrough, newBatchReceiver, startBatchWorld } from '../../support/batch-world.js'
import { tokenBalance } from '../../support/evm-contracts.js'
import type { EvmFixture } from '../../support/evm-fixture.js'
import { startFaultProxy, type FaultProxy } from '../../support/fault-proxy.js'

let world: EvmFixture
let facilitator: Facilitator
/** Forwards JSON-RPC to anvil: its `methods` count the eth_sendRawTransaction entries (single or batched). */
let proxy: FaultProxy
/** The node's nonce refusals in the answers the proxy relayed. */
let nonceRefusals = 0
const to = newBatchReceiver()

beforeAll(async () => {
  world = await startBatchWorld({ signerCount: 1 })
  proxy = await startFaultProxy(world.node.rpcUrl, { onAnswer: (text) => (nonceRefusals += text.split(/nonce too low|nonce too high|already used/i).length - 1) })
  facilitator = createFacilitator({ schemes: evmSchemesThrough(world, proxy.url, to.authorizer, { receiptTimeoutMs: 20_000 }) })
}, 120_000)
afterAll(async () => {
  await proxy?.close()
  await world?.stop()
})

const wrap = (payload: unknown) => batchRequest(batchRequirements(world, to), payload)

/** eth_sendRawTransaction calls that reached the proxy since `from` (an index into its `methods`). */
const rawSendsSince = (from: number) => proxy.methods.slice(from).filter((m) => m === 'eth_sendRawTransaction').length

async function exactPayment() {
  const requirements = world.requirementsV2()
  const paymentPayload = await signExactEvmPayment({ signer: await world.newPayer(), requirements })
  return { x402Version: 2, paymentPayload, paymentRequirements: requirements }
}

async function deposit(amount = 10_000n) {
  const payer = await world.newPayer(1_000_000n)
  const { config, id } = batchChannel(world, to, payer.address)
  const body = wrap(await depositPayload(world, payer, config, amount))
  return { payer, config, id, body }
}

async function inTurn<T>(count: number, make: () => Promise<T>): Promise<T[]> {
  const made: T[] = []
  for (let i = 0; i < count; i++) made.push(await make())
  return made
}

describe('one signer for exact and batch-settlement', () => {
  it('lists both kinds with the one signer', async () => {
    const { kinds, signers } = await facilitator.supported()
    expect(kinds.map((k) => k.scheme)).toEqual(expect.arrayContaining(['exact', 'upto', 'batch-settlement']))
    expect(signers['eip155:*']).toEqual([world.signers[0]!.address])
  })

  it('settles exact payments, deposits and a claim concurrently from one key: all land, nonces consecutive, no nonce error', async () => {
    const signer = world.signers[0]!.address
    const sentFrom = proxy.methods.length
    const before = await world.node.publicClient.getTransactionCount({ address: signer })
    // Payers funded one after the other: the deployer's own transactions need consecutive nonces.
    const exact = await inTurn(8, exactPayment)
    const deposits = await inTurn(8, deposit)
    // Interleaved: exact, deposit, exact, deposit, ...
    const bodies = exact.flatMap((e, i) => [e, deposits[i]!.body])
    const answers = await Promise.all(bodies.map((body) => facilitator.settle(body)))
    expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(bodies.map(() => 'success'))
    for (const d of deposits) expect(await channelOnChain(world, d.id)).toEqual([10_000n, 0n])
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBeGreaterThanOrEqual(8n * BigInt(world.requirementsV2().amount))

    // A claim over the new channels, racing more exact payments on the same key.
    const claims = await Promise.all(deposits.map(async (d) => ({ voucher: { channel: d.config, maxClaimableAmount: '3000' }, signature: await signVoucher(d.payer, 84532, d.id, 3000n), totalClaimed: '3000' })))
    const more = await inTurn(4, exactPayment)
    const second = await Promise.all([facilitator.settle(wrap({ type: 'claim', claims })), ...more.map((body) => facilitator.settle(body))])
    expect(second.map((a) => a.errorReason ?? 'success')).toEqual(second.map(() => 'success'))
    for (const d of deposits) expect(await channelOnChain(world, d.id)).toEqual([10_000n, 3000n])

    // Every transaction came from the one key, each with the next nonce: 8 + 8 + 1 + 4.
    expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(before + 21)
    const hashes = [...answers, ...second].map((a) => a.transaction as Hex)
    const sent = await Promise.all(hashes.map((hash) => world.node.publicClient.getTransaction({ hash })))
    expect(sent.every((tx) => tx.from.toLowerCase() === signer.toLowerCase())).toBe(true)
    expect(sent.map((tx) => tx.nonce).sort((a, b) => a - b)).toEqual(Array.from({ length: 21 }, (_, i) => before + i))
    // Each sent once: no nonce refused, none signed again.
    expect({ raw: rawSendsSince(sentFrom), nonceRefusals }).toEqual({ raw: 21, nonceRefusals: 0 })
  }, 120_000)
})
