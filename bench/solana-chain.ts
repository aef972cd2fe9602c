/**
 * The Solana "node" of the benchmark in a process of its own, as anvil is for
 * EVM and as a real RPC always is: LiteSVM behind the loopback JSON-RPC, with
 * the payment scenario set up for keys the parent hands over. Its CPU is then
 * not charged to the facilitator under test.
 *
 * Parent -> child messages: 'reset-stats', 'stats', 'close'.
 * Child -> parent: { ready, url, mint, payTo }, { reset }, { stats: { requests, cpuMs } }.
 */
import { createKeyPairSignerFromPrivateKeyBytes, lamports } from '@solana/kit'
import { createPaymentScenario, startSolanaTestRpc } from '../test/support/svm-fixtures.js'
import { ownCpuMs } from './measure.js'

const [feePayerSeed, payerSeed] = (process.env.BENCH_SOLANA_SEEDS ?? '').split(',')
if (!process.send || !feePayerSeed || !payerSeed) throw new Error('run by bench/svm.ts, with BENCH_SOLANA_SEEDS')
const send = process.send.bind(process)

const chain = await startSolanaTestRpc()
const feePayer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(feePayerSeed, 'hex'))
chain.svm.airdrop(feePayer.address, lamports(100n * 10n ** 9n))
const scenario = await createPaymentScenario(chain.svm, {
  balance: 10n ** 15n,
  feePayer,
  payer: await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(payerSeed, 'hex')),
})
process.on('message', (message) => {
  if (message === 'reset-stats') {
    chain.resetStats()
    send({ reset: true })
  }
  else if (message === 'stats') {
    send({ stats: { requests: chain.stats.requests, cpuMs: ownCpuMs() } })
  }
  else if (message === 'close') void chain.close().finally(() => process.exit(0))
})
// The parent going away ends the node too.
process.on('disconnect', () => void chain.close().finally(() => process.exit(0)))
send({ ready: true, url: chain.url, mint: scenario.mint, payTo: scenario.payTo })
