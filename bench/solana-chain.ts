/**
 * The Solana "node" of the benchmark in a process of its own, as anvil is for
 * EVM and as a real RPC always is: LiteSVM behind the loopback JSON-RPC, with
 * the payment scenario set up for keys the parent hands over. Its CPU is then
 * not charged to the facilitator under test.
 *
 * Parent -> child messages: 'reset-stats', 'stats', 'close', { fund: addresses } (each gets a token
 * account holding tokens of the scenario's mint: payers of their own, as a resource server sees them).
 * Child -> parent: { ready, url, mint, payTo, pid }, { reset }, { stats: { requests, cpuMs } }, { funded }.
 */
import { address, createKeyPairSignerFromPrivateKeyBytes, lamports, type Address } from '@solana/kit'
import { findAssociatedTokenPda, getCreateAssociatedTokenIdempotentInstruction, getMintToCheckedInstruction } from '@solana-program/token'
import { createPaymentScenario, execute, startSolanaTestRpc, type PaymentScenario } from '../test/support/svm-fixtures.js'
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
/** Token accounts with `amount` for each owner, six owners to a transaction, paid and signed by the mint authority. */
async function fund(s: PaymentScenario, owners: readonly Address[], amount: bigint): Promise<void> {
  // The rent of each new token account (165 bytes), and some for the fees.
  chain.svm.airdrop(s.authority.address, lamports(BigInt(owners.length) * chain.svm.minimumBalanceForRentExemption(165n) + 10n ** 9n))
  for (let from = 0; from < owners.length; from += 6) {
    const instructions = await Promise.all(
      owners.slice(from, from + 6).map(async (owner) => {
        const [ata] = await findAssociatedTokenPda({ mint: s.mint, owner, tokenProgram: s.tokenProgram })
        return [
          getCreateAssociatedTokenIdempotentInstruction({ payer: s.authority, ata, owner, mint: s.mint, tokenProgram: s.tokenProgram }),
          getMintToCheckedInstruction({ mint: s.mint, token: ata, mintAuthority: s.authority, amount, decimals: s.decimals }, { programAddress: s.tokenProgram }),
        ]
      }),
    )
    await execute(chain.svm, s.authority, instructions.flat())
  }
}

process.on('message', (message) => {
  if (typeof message === 'object' && message !== null && 'fund' in message) {
    const owners = (message as { fund: string[] }).fund.map((owner) => address(owner))
    void fund(scenario, owners, 10n ** 12n).then(
      () => send({ funded: owners.length }),
      // LiteSVM's failures print the whole transaction's metadata: its first line says enough.
      (error: unknown) => send({ fundFailed: String(error).slice(0, 300) }),
    )
  }
  else if (message === 'reset-stats') {
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
send({ ready: true, url: chain.url, mint: scenario.mint, payTo: scenario.payTo, pid: process.pid })
