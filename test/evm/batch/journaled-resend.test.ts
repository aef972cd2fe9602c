/**
 * A batch-settlement transaction journaled by a process whose send never reached the node, then a
 * new process on the same store and key (evmSchemes with batchSettlement), on anvil: the new
 * process's first nonce read (an exact settle's) re-sends the journaled deposit at its nonce before
 * handing out the next one, and the deposit's retried settle answers that transaction, as for every
 * EVM settle.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { createFacilitator } from '../../../src/facilitator/facilitator.js'
import { evmSchemes } from '../../../src/evm/evm-schemes.js'
import { batchSettlementAbi } from '../../../src/evm/batch/abi.js'
import { channelId } from '../../../src/evm/batch/codec.js'
import { BATCH_SETTLEMENT_ADDRESS } from '../../../src/evm/batch/constants.js'
import { signExactEvmPayment } from '../../../src/evm/exact/sign-payment.js'
import { createMemoryStore } from '../../../src/stores/memory-store.js'
import { installBatchSettlement } from '../../support/batch-settlement-contracts.js'
import { channelConfig, erc3009DepositAuthorization, signVoucher } from '../../support/batch-settlement-signing.js'
import { startEvmFixture, type EvmFixture } from '../../support/evm-fixture.js'
import { installPermit2 } from '../../support/permit2-contracts.js'

let world: EvmFixture
let proxy: Server
let rpc: string
/** While set, transactions sent through the proxy are lost (HTTP 502, never forwarded). */
let losingSends = false
const authorizer = privateKeyToAccount(generatePrivateKey())
const receiver = privateKeyToAccount(generatePrivateKey()).address

beforeAll(async () => {
  world = await startEvmFixture({ signerCount: 1 })
  await installPermit2(world.node)
  await installBatchSettlement(world.node)
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString()
      if (losingSends && body.includes('eth_sendRawTransaction')) {
        res.writeHead(502).end('bad gateway')
        return
      }
      const answer = await fetch(world.node.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text())
    })
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  rpc = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
}, 120_000)
afterAll(async () => {
  proxy?.close()
  await world?.stop()
})

const requirements = () => ({
  scheme: 'batch-settlement',
  network: 'eip155:84532' as const,
  amount: '1000',
  asset: world.token.address,
  payTo: receiver,
  maxTimeoutSeconds: 3600,
  extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: world.token.name, version: world.token.version },
})
const wrap = (payload: unknown) => ({ x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements(), payload }, paymentRequirements: requirements() })

describe('a journaled batch-settlement transaction after a restart', () => {
  it('is re-sent at its nonce by the next process before that nonce goes to an exact settle, and its retried settle answers it', async () => {
    const store = createMemoryStore()
    const facilitatorOn = () => {
      const config = world.adapterConfig({ receiptTimeoutMs: 10_000, rebroadcastIntervalMs: 0 })
      return createFacilitator({ store, settlement: { leaseMs: 1_000 }, schemes: evmSchemes({ ...config, networks: config.networks.map((n) => ({ ...n, rpcUrls: [rpc] })) }, { batchSettlement: { receiverAuthorizer: authorizer } }) })
    }
    const payer = await world.newPayer(1_000_000n)
    const config = channelConfig({ payer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: world.token.address, salt: generatePrivateKey() })
    const id = channelId(config, 84532)
    const deposit = wrap({
      type: 'deposit',
      channelConfig: config,
      voucher: { channelId: id, maxClaimableAmount: '1000', signature: await signVoucher(payer, 84532, id, 1000n) },
      deposit: { amount: '10000', authorization: { erc3009Authorization: await erc3009DepositAuthorization(payer, world.token, 84532, config, 10_000n) } },
    })
    const signer = world.signers[0]!.address
    const nonce = await world.node.publicClient.getTransactionCount({ address: signer })

    // The first process journals the deposit, and its sends never reach the node.
    const first = facilitatorOn()
    losingSends = true
    let lost
    try {
      lost = await first.settle(deposit)
    } finally {
      losingSends = false
    }
    // Journaled, then unanswered: the transaction is named, its outcome unknown.
    expect(lost).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) })
    expect(await world.node.publicClient.getTransactionCount({ address: signer, blockTag: 'pending' })).toBe(nonce)

    // A new process on the same store: its first settle of the key (an exact payment) re-sends the deposit first.
    const second = facilitatorOn()
    const exactRequirements = world.requirementsV2()
    const exact = await second.settle({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: await world.newPayer(), requirements: exactRequirements }), paymentRequirements: exactRequirements })
    expect(exact).toMatchObject({ success: true })
    expect((await world.node.publicClient.getTransaction({ hash: exact.transaction as Hex })).nonce).toBe(nonce + 1)
    expect((await world.node.publicClient.getTransaction({ hash: lost.transaction as Hex })).nonce).toBe(nonce)
    expect(await world.node.publicClient.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'channels', args: [id] })).toEqual([10_000n, 0n])

    // The deposit's retry answers the journaled transaction: nothing is sent again.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const retried = await second.settle(deposit)
    expect(retried).toMatchObject({ success: true, amount: '10000', transaction: lost.transaction })
    expect(await world.node.publicClient.getTransactionCount({ address: signer })).toBe(nonce + 2)
  }, 60_000)
})
