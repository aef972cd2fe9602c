import { afterAll, beforeAll, describe, it } from 'vitest'
import { exactEvm, signExactEvmPayment } from '../../src/evm/index.js'
import { exactSvm } from '../../src/svm/index.js'
import { SOLANA_DEVNET } from '../../src/index.js'
import { adapterConformance } from '../../src/testing/index.js'
import { startEvmFixture, type EvmFixture } from '../support/evm-fixture.js'
import { createPaymentScenario, scenarioPaymentBody, startSolanaTestRpc, type PaymentScenario } from '../support/svm-fixtures.js'
import type { LiteSvmRpc } from '../support/litesvm-rpc.js'

// The built-in adapters pass the same contract checks a third party's adapter is given (x402-facilitator/testing).

describe('exactEvm holds the adapter contract (anvil)', () => {
  let world: EvmFixture
  beforeAll(async () => {
    world = await startEvmFixture()
  })
  afterAll(async () => world?.stop())

  const body = async (paymentPayload: unknown, requirements: unknown) => ({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
  let adapter: ReturnType<typeof exactEvm> | undefined
  const checks = adapterConformance({
    // Built when the first check runs (after the chain is up), then one instance for all, as in a process.
    get adapter() {
      return (adapter ??= exactEvm(world.adapterConfig()))
    },
    async payment() {
      const requirements = world.requirementsV2()
      return body(await signExactEvmPayment({ signer: await world.newPayer(), requirements }), requirements)
    },
    async invalidPayment() {
      // Signed for one recipient, presented to another.
      const requirements = world.requirementsV2()
      const paymentPayload = await signExactEvmPayment({ signer: await world.newPayer(), requirements })
      const other = { ...requirements, payTo: world.node.accounts[9]!.address }
      return { body: await body({ ...paymentPayload, accepted: other }, other), reason: 'invalid_exact_evm_payload_recipient_mismatch' }
    },
  })
  for (const check of checks) it(check.name, () => check.run(), 60_000)
})

describe('exactSvm holds the adapter contract (LiteSVM)', () => {
  let chain: LiteSvmRpc
  let s: PaymentScenario
  beforeAll(async () => {
    chain = await startSolanaTestRpc()
    s = await createPaymentScenario(chain.svm)
  })
  afterAll(async () => chain?.close())

  let adapter: ReturnType<typeof exactSvm> | undefined
  const checks = adapterConformance({
    get adapter() {
      return (adapter ??= exactSvm({ networks: [{ network: SOLANA_DEVNET, rpcUrl: chain.url }], feePayers: [s.feePayer], confirmPollIntervalMs: 5, confirmTimeoutMs: 5_000 }))
    },
    payment: () => scenarioPaymentBody(chain.url, s, 1_000n),
  })
  for (const check of checks) it(check.name, () => check.run(), 60_000)
})
