/**
 * Microbenchmark of the Permit2 witness digests: viem's hashTypedData against the fixed-shape
 * encoders in src/evm/codec/permit2-typed-data.ts. Run: node --import tsx scripts/bench-permit2-digest.ts
 */
import { randomBytes } from 'node:crypto'
import { bytesToHex, getAddress, hashTypedData, type Address } from 'viem'
import { loadKeccak, keccakBackend } from '../src/evm/crypto/keccak.js'
import { hashPermit2Witness, hashUptoWitness, permit2TypedData, uptoTypedData, type UptoWitnessMessage } from '../src/evm/codec/permit2-typed-data.js'

await loadKeccak()
const address = () => getAddress(bytesToHex(randomBytes(20))) as Address
const uint = () => BigInt(bytesToHex(randomBytes(32)))
const N = 20_000
const messages: UptoWitnessMessage[] = Array.from({ length: 256 }, () => ({
  token: address(), amount: uint(), spender: address(), nonce: uint(), deadline: uint(), to: address(), facilitator: address(), validAfter: 0n,
}))

function time(label: string, fn: (m: UptoWitnessMessage) => unknown): number {
  for (let i = 0; i < 2000; i++) fn(messages[i & 255]!)
  const runs: number[] = []
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < N; i++) fn(messages[i & 255]!)
    runs.push(Number(process.hrtime.bigint() - start) / 1000 / N)
  }
  runs.sort((a, b) => a - b)
  console.log(`${label.padEnd(28)} median ${runs[2]!.toFixed(2)} µs  (runs ${runs.map((x) => x.toFixed(1)).join(' ')})`)
  return runs[2]!
}

console.log(`keccak: ${keccakBackend()}, ${N} digests a run`)
time('exact viem hashTypedData', (m) => hashTypedData(permit2TypedData(1, m)))
time('exact hashPermit2Witness', (m) => hashPermit2Witness(1, m))
time('upto viem hashTypedData', (m) => hashTypedData(uptoTypedData(1, m)))
time('upto hashUptoWitness', (m) => hashUptoWitness(1, m))
