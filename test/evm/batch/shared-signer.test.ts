/**
 * One gas key for exact and batch-settlement in one facilitator (evmSchemes with batchSettlement),
 * on anvil: exact payments, channel deposits and a claim settled concurrently, interleaved, all land
 * from that key with consecutive nonces and no nonce error, because both adapters take nonces from
 * the same counter and send through the same lane.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { createFacilitator, type Facilitator } from '../../../src/facilitator/facilitator.js'
import { evmSchemes } from '../../../src/evm/evm-schemes.js'
import { batchSettlementAbi } from '../../../src/evm/batch/abi.js'
import { channelId } from '../../../src/evm/batch/codec.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/evm/batch/constants.js'
import { signExactEvmPayment } from '../../../src/evm/exact/sign-payment.js'
import { installBatchSettlement } from '../../support/batch-settlement-contracts.js'
import { channelConfig, erc3009DepositAuthorization, signVoucher } from '../../support/batch-settlement-signing.js'
import { tokenBalance } from '../../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../../support/evm-fixture.js'
import { installPermit2 } from '../../support/permit2-contracts.js'

let world: EvmFixture
let facilitator: Facilitator
let proxy: Server
/** Transactions sent through the proxy, and the node's nonce refusals of them. */
const sends = { raw: 0, nonceRefusals: 0 }

/** Forwards JSON-RPC to anvil, counting eth_sendRawTransaction entries (single or batched) and nonce refusals. */
async function countingProxy(upstream: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString()
      sends.raw += body.split('"eth_sendRawTransaction"').length - 1
      const answer = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      const text = await answer.text()
      sends.nonceRefusals += text.split(/nonce too low|nonce too high|already used/i).length - 1
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}
const authorizer = privateKeyToAccount(generatePrivateKey())
const receiver = privateKeyToAccount(generatePrivateKey()).address

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 1 })
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  proxy = await countingProxy(world.node.rpcUrl)
  const rpc = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  const config = world.adapterConfig({ receiptTimeoutMs: 20_000 })
  facilitator = createFacilitator({ schemes: evmSchemes({ ...config, networks: config.networks.map((n) => ({ ...n, rpcUrls: [rpc] })) }, { batchSettlement: { receiverAuthorizer: authorizer } }) })
}, 120_000)
afterAll(async () => {
  proxy?.close()
  await world?.stop()
})

const batchRequirements = () => ({
  scheme: 'batch-settlement',
  network: 'eip155:84532' as const,
  amount: '1000',
  asset: world.token.address,
  payTo: receiver,
  maxTimeoutSeconds: 3600,
  extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: world.token.name, version: world.token.version },
})
const wrap = (payload: unknown) => ({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: batchRequirements(), payload }, paymentRequirements: batchRequirements() })

async function exactPayment() {
  const requirements = world.requirementsV2()
  const paymentPayload = await signExactEvmPayment({ signer: await world.newPayer(), requirements })
  return { x402Version: 2, paymentPayload, paymentRequirements: requirements }
}

async function deposit(amount = 10_000n) {
  const payer = await world.newPayer(1_000_000n)
  const config = channelConfig({ payer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: world.token.address, salt: generatePrivateKey() })
  const id = channelId(config, 84532)
  const body = wrap({
    type: 'deposit',
    channelConfig: config,
    voucher: { channelId: id, maxClaimableAmount: '1000', signature: await signVoucher(payer, 84532, id, 1000n) },
    deposit: { amount: amount.toString(), authorization: { erc3009Authorization: await erc3009DepositAuthorization(payer, world.token, 84532, config, amount) } },
  })
  return { payer, config, id, body }
}

async function inTurn<T>(count: number, make: () => Promise<T>): Promise<T[]> {
  const made: T[] = []
  for (let i = 0; i < count; i++) made.push(await make())
  return made
}

async function channelOnChain(id: Hex): Promise<readonly [bigint, bigint]> {
  return world.node.publicClient.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'channels', args: [id] })
}

describe('one signer for exact and batch-settlement', () => {
  it('lists both kinds with the one signer', async () => {
    const { kinds, signers } = await facilitator.supported()
    expect(kinds.map((k) => k.scheme)).toEqual(expect.arrayContaining(['exact', 'upto', 'batch-settlement']))
    expect(signers['eip155:*']).toEqual([world.signers[0]!.address])
  })

  it('settles exact payments, deposits and a claim concurrently from one key: all land, nonces consecutive, no nonce error', async () => {
    const signer = world.signers[0]!.address
    sends.raw = 0
    const before = await world.node.publicClient.getTransactionCount({ address: signer })
    // Payers funded one after the other: the deployer's own transactions need consecutive nonces.
    const exact = await inTurn(8, exactPayment)
    const deposits = await inTurn(8, deposit)
    // Interleaved: exact, deposit, exact, deposit, ...
    const bodies = exact.flatMap((e, i) => [e, deposits[i]!.body])
    const answers = await Promise.all(bodies.map((body) => facilitator.settle(body)))
    expect(answers.map((a) => a.errorReason ?? 'success')).toEqual(bodies.map(() => 'success'))
    for (const d of deposits) expect(await channelOnChain(d.id)).toEqual([10_000n, 0n])
    expect(await tokenBalance(world.node, world.token, world.payTo)).toBeGreaterThanOrEqual(8n * BigInt(world.requirementsV2().amount))

    // A claim over the new channels, racing more exact payments on the same key.
    const claims = await Promise.all(deposits.map(async (d) => ({ voucher: { channel: d.config, maxClaimableAmount: '3000' }, signature: await signVoucher(d.payer, 84532, d.id, 3000n), totalClaimed: '3000' })))
    const more = await inTurn(4, exactPayment)
    const second = await Promise.all([facilitator.settle(wrap({ type: 'claim', claims })), ...more.map((body) => facilitator.settle(body))])
    expect(second.map((a) => a.errorReason ?? 'success')).toEqual(second.map(() => 'success'))
    for (const d of deposits) expect(await channelOnChain(d.id)).toEqual([10_000n, 3000n])

    // Every transaction came from the one key, each with the next nonce: 8 + 8 + 1 + 4.
    expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(before + 21)
    const hashes = [...answers, ...second].map((a) => a.transaction as Hex)
    const sent = await Promise.all(hashes.map((hash) => world.node.publicClient.getTransaction({ hash })))
    expect(sent.every((tx) => tx.from.toLowerCase() === signer.toLowerCase())).toBe(true)
    expect(sent.map((tx) => tx.nonce).sort((a, b) => a - b)).toEqual(Array.from({ length: 21 }, (_, i) => before + i))
    // Each sent once: no nonce refused, none signed again.
    expect(sends).toEqual({ raw: 21, nonceRefusals: 0 })
  }, 120_000)
})
