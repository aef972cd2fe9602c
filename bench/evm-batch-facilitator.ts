/**
 * batch-settlement on EVM: 1,000 vouchers over 10 channels on one anvil, our facilitator
 * (`evmSchemes` with `batchSettlement`) against the official @x402/evm 2.27 `BatchSettlementEvmScheme`
 * under @x402/core's `x402Facilitator`, with our contracts at the canonical addresses
 * (test/support/batch-settlement-contracts.ts). Measured: JSON-RPC calls per voucher verify (same
 * vouchers, EOA payer authorizers, each side through its own counter), voucher verifies per second,
 * and gas per payment: the 10 deposits, one claim of the 10 channels' last vouchers and one sweep,
 * divided by the 1,000 payments, against the gas of one `exact` transferWithAuthorization settle.
 */
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload as OfficialPayload, PaymentRequirements as OfficialRequirements } from '@x402/core/types'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/facilitator'
import type { Hex } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { createFacilitator } from '../src/index.js'
import { evmSchemes, privateKeySigner } from '../src/evm/index.js'
import { signExactEvmPayment } from '../src/evm/exact/sign-payment.js'
import { ANVIL_MNEMONIC } from '../test/support/anvil.js'
import { signVoucher } from '../test/support/batch-settlement-signing.js'
import { batchChannel, batchRequest, batchRequirements, depositPayload, newBatchReceiver, startBatchWorld } from '../test/support/batch-world.js'
import { startFaultProxy, type FaultProxy } from '../test/support/fault-proxy.js'
import { ANVIL_KEY } from './evm.js'
import { officialEvmSigner } from '../test/support/official-evm-signer.js'
import { check, progress, row, runConcurrent, type Row } from './measure.js'

export const BATCH_FACILITATOR_COUNTS = {
  channels: 10,
  vouchersPerChannel: 100,
  /** Voucher verifies in flight at once (each channel's vouchers in order, channels side by side). */
  concurrency: 10,
}

const PRICE = 1000n

export async function benchEvmBatchFacilitator(): Promise<Row[]> {
  const { channels, vouchersPerChannel, concurrency } = BATCH_FACILITATOR_COUNTS
  const payments = channels * vouchersPerChannel
  const world = await startBatchWorld({ signerCount: 2 })
  /** Our side's JSON-RPC calls: its `methods` (each call of a batch). */
  let proxy: FaultProxy | undefined
  try {
    proxy = await startFaultProxy(world.node.rpcUrl)
    const ourCalls = proxy.methods
    const rpc = proxy.url
    const to = newBatchReceiver()
    const { authorizer, receiver } = to
    const ourSigner = privateKeySigner(ANVIL_KEY(1))
    check(ourSigner.address === world.signers[0]!.address, 'our facilitator key is anvil account 1')
    const ours = createFacilitator({
      schemes: evmSchemes(world.adapterConfig({ networks: [{ network: 'eip155:84532', rpcUrls: [rpc], assets: [world.knownAsset] }], signers: [ourSigner], receiptPollIntervalMs: 50 }), {
        batchSettlement: { receiverAuthorizer: authorizer },
      }),
    })
    let theirCalls = 0
    const theirAccount = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 2 })
    const official = new x402Facilitator().register('eip155:84532', new BatchSettlementEvmScheme(officialEvmSigner(theirAccount, world.node.chain, world.node.rpcUrl, () => theirCalls++)))

    const requirements = batchRequirements(world, to, { amount: PRICE.toString() })
    const body = (payload: unknown) => batchRequest(requirements, payload)
    const receipt = (hash: string) => world.node.publicClient.getTransactionReceipt({ hash: hash as Hex })

    // Ten channels, each funded for its hundred payments by a deposit settled here.
    progress(`batch: ${channels} deposits`)
    const opened = []
    let depositGas = 0n
    for (let c = 0; c < channels; c++) {
      const payer = await world.newPayer(10n ** 9n)
      const { config, id } = batchChannel(world, to, payer.address)
      const settled = await ours.settle(body(await depositPayload(world, payer, config, PRICE * BigInt(vouchersPerChannel), PRICE)))
      check(settled.success, `deposit ${c}: ${settled.errorReason}`)
      depositGas += (await receipt(settled.transaction)).gasUsed
      opened.push({ payer, config, id })
    }

    progress(`batch: signing ${payments} vouchers`)
    const vouchers: { channel: number; ceiling: bigint; body: ReturnType<typeof body> }[] = []
    for (let k = 1; k <= vouchersPerChannel; k++) {
      for (const [c, { payer, config, id }] of opened.entries()) {
        const ceiling = PRICE * BigInt(k)
        vouchers.push({ channel: c, ceiling, body: body({ type: 'voucher', channelConfig: config, voucher: { channelId: id, maxClaimableAmount: ceiling.toString(), signature: await signVoucher(payer, 84532, id, ceiling) } }) })
      }
    }

    progress(`batch: ${payments} voucher verifies, each side`)
    const verifyAll = async (verify: (b: ReturnType<typeof body>) => Promise<{ isValid: boolean; invalidReason?: string }>) => {
      let next = 0
      return runConcurrent(payments, concurrency, async () => {
        const v = vouchers[next++]!
        const answer = await verify(v.body)
        check(answer.isValid, `voucher ${v.ceiling} of channel ${v.channel}: ${answer.invalidReason}`)
      })
    }
    const ourBefore = ourCalls.length
    const ourRun = await verifyAll((b) => ours.verify(b))
    const ourPerVerify = (ourCalls.length - ourBefore) / payments
    const theirRun = await verifyAll((b) => official.verify(b.paymentPayload as unknown as OfficialPayload, b.paymentRequirements as unknown as OfficialRequirements))
    const theirPerVerify = theirCalls / payments

    // One claim of every channel's last voucher, then one sweep to the receiver.
    progress('batch: claim and sweep')
    const claims = await Promise.all(
      opened.map(async ({ payer, config, id }) => {
        const total = PRICE * BigInt(vouchersPerChannel)
        return { voucher: { channel: config, maxClaimableAmount: total.toString() }, signature: await signVoucher(payer, 84532, id, total), totalClaimed: total.toString() }
      }),
    )
    const claimed = await ours.settle(body({ type: 'claim', claims }))
    check(claimed.success, `claim: ${claimed.errorReason}`)
    const claimGas = (await receipt(claimed.transaction)).gasUsed
    const swept = await ours.settle(body({ type: 'settle', receiver, token: world.token.address }))
    check(swept.success && swept.amount === (PRICE * BigInt(payments)).toString(), `sweep: ${swept.errorReason ?? swept.amount}`)
    const sweepGas = (await receipt(swept.transaction)).gasUsed

    // The same payment through `exact`: one transferWithAuthorization.
    const exactRequirements = world.requirementsV2({ amount: PRICE.toString() })
    const exact = await ours.settle({ x402Version: 2, paymentPayload: await signExactEvmPayment({ signer: await world.newPayer(), requirements: exactRequirements }), paymentRequirements: exactRequirements })
    check(exact.success, `exact: ${exact.errorReason}`)
    const exactGas = (await receipt(exact.transaction)).gasUsed

    const batchGas = depositGas + claimGas + sweepGas
    const perPayment = Number(batchGas) / payments
    const settlePerPayment = Number(claimGas + sweepGas) / payments
    progress(`batch: deposits ${depositGas} gas, claim ${claimGas}, sweep ${sweepGas}; exact ${exactGas}`)
    await ours.close()
    return [
      row('batch', `JSON-RPC calls per EOA voucher verify (${payments} over ${channels} channels)`, 'calls', 'lower', ourPerVerify, theirPerVerify),
      row('batch', `voucher verifies/s, concurrency ${concurrency}`, 'ok/s', 'higher', (payments / ourRun.elapsedMs) * 1000, (payments / theirRun.elapsedMs) * 1000),
      row(
        'batch',
        `gas per payment: ${channels} deposits + 1 claim + 1 sweep over ${payments} payments, against one exact transfer`,
        'gas',
        'lower',
        perPayment,
        Number(exactGas),
        `theirs = our exact settle (transferWithAuthorization); deposits ${depositGas}, claim ${claimGas}, sweep ${sweepGas}`,
      ),
      row('batch', `gas per payment: 1 claim + 1 sweep over ${payments} payments (deposits aside), against one exact transfer`, 'gas', 'lower', settlePerPayment, Number(exactGas), 'theirs = our exact settle (transferWithAuthorization)'),
    ]
  } finally {
    await proxy?.close()
    await world.stop()
  }
}
