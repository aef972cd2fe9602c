/**
 * What the races tests on each shared store have in common: the chain and the
 * store server a file starts, the instances it serves over HTTP, and the race
 * of 50 callers settling one payment through two instances. Each store's file
 * builds its own instances and adds its own checks.
 */
import type { Hex, LocalAccount } from 'viem'
import { afterAll, beforeAll, expect } from 'vitest'
import type { Facilitator } from '../../src/facilitator/facilitator.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import { tokenBalance } from '../support/evm-contracts.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { authorizationsIn, authorizationsUsed, body, nonceSum, postJson, serve } from './support.js'

/**
 * Starts a chain with 4 signers and the store server for the calling file in
 * `beforeAll`; closes the served instances, their stores, the chain and the
 * server in `afterAll`.
 */
export function useRaceWorld<Server extends { url: string; stop(): Promise<void> }>(startServer: () => Promise<Server>) {
  let world: EvmFixture | undefined
  let server: Server | undefined
  const stores: { close?(): Promise<void> }[] = []
  const closers: (() => Promise<void>)[] = []

  beforeAll(async () => {
    ;[world, server] = await Promise.all([startEvmFixture({ signerCount: 4 }), startServer()])
  })
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()))
    await Promise.all(stores.map((store) => store.close?.()))
    await Promise.all([world?.stop(), server?.stop()])
  })

  return {
    world: () => world ?? raise('useRaceWorld: the chain starts in beforeAll'),
    server: () => server ?? raise('useRaceWorld: the store server starts in beforeAll'),
    /** Serves `facilitator` over HTTP; it and its store are closed after the file's tests. */
    async serve(facilitator: Pick<Facilitator, 'supported' | 'verify' | 'settle'>, store: { close?(): Promise<void> }) {
      stores.push(store)
      const served = await serve(facilitator)
      closers.push(served.close)
      return served
    },
  }
}

function raise(message: string): never {
  throw new Error(message)
}

/**
 * 50 concurrent settles of one payment, alternating between instances `a` and
 * `b` that share a store: every caller gets the one transaction (1 success, 49
 * the same hash) and exactly one transfer lands on chain.
 */
export async function settleOnePaymentFromFiftyCallers(world: EvmFixture, a: { url: string }, b: { url: string }): Promise<{ hash: Hex; payer: LocalAccount; elapsed: number }> {
  const payer = await world.newPayer(1_000_000n)
  const requirements = world.requirementsV2({ amount: '1000' })
  const paymentPayload = await signExactEvmPayment({ signer: payer, requirements })
  const fromBlock = (await world.node.publicClient.getBlockNumber()) + 1n
  const signerAddresses = world.signers.map((s) => s.address)
  const noncesBefore = await nonceSum(world, signerAddresses)
  const payToBefore = await tokenBalance(world.node, world.token, world.payTo)

  const started = performance.now()
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) => postJson(`${(i % 2 === 0 ? a : b).url}/settle`, body(paymentPayload, requirements))),
  )
  const elapsed = performance.now() - started

  expect(answers.map((x) => x.status)).toEqual(Array(50).fill(200))
  const hashes = new Set(answers.map((x) => x.json.transaction))
  // Every caller of the one payment learns how it landed: success, with the one hash.
  expect(answers.filter((x) => x.json.success === true)).toHaveLength(50)
  expect(hashes.size).toBe(1)
  const [hash] = [...hashes] as Hex[]
  // Exactly one transfer on chain: one authorization used, one signer transaction, one amount moved.
  expect(await authorizationsUsed(world, payer.address, fromBlock)).toHaveLength(1)
  expect(await authorizationsIn(world, hash!)).toHaveLength(1)
  expect(await nonceSum(world, signerAddresses)).toBe(noncesBefore + 1)
  expect(await tokenBalance(world.node, world.token, payer.address)).toBe(1_000_000n - 1000n)
  expect(await tokenBalance(world.node, world.token, world.payTo)).toBe(payToBefore + 1000n)
  return { hash: hash!, payer, elapsed }
}
