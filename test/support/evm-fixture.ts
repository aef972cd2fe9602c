/**
 * A ready EVM world for tests, benchmarks and demos: anvil on chain 84532
 * (so the v1 `x402` client can call it `base-sepolia`), Multicall3, a test
 * USDC, an ERC-6492 wallet factory, facilitator signers and payment
 * requirements builders.
 *
 * @example
 * const world = await startEvmFixture()
 * const adapter = exactEvm(world.adapterConfig())
 * const requirements = world.requirementsV2({ amount: '1000' })
 * await world.stop()
 */
import { serializeErc6492Signature, type Address, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { ExactEvmConfig } from '../../src/evm/exact-evm-config.js'
import { signExactEvmPayment } from '../../src/evm/exact/sign-payment.js'
import type { PaymentPayload } from '../../src/schemas/payload.js'
import type { PaymentRequirementsV1, PaymentRequirementsV2 } from '../../src/schemas/requirements.js'
import { startAnvil, type AnvilNode, type StartAnvilOptions } from './anvil.js'
import { deployTestToken, deployWalletFactory, fundPayer, installMulticall3, type TestToken, type TestWalletFactory } from './evm-contracts.js'

export interface EvmFixture {
  readonly node: AnvilNode
  readonly token: TestToken
  readonly factory: TestWalletFactory
  /** Facilitator keys (anvil accounts 1..n, funded with ETH for gas). */
  readonly signers: readonly LocalAccount[]
  /** The resource server's address (`payTo`). */
  readonly payTo: Address
  /** A fresh payer key holding `amount` of the test token. */
  newPayer(amount?: bigint): Promise<LocalAccount>
  /**
   * A v2 payment from an undeployed ERC-6492 smart wallet holding `balance`, its
   * signature wrapped with the deployment through `factory` (the fixture's by default).
   */
  counterfactualPayment(options?: { factory?: Address; balance?: bigint }): Promise<{
    owner: LocalAccount
    wallet: Address
    paymentPayload: PaymentPayload
    requirements: PaymentRequirementsV2
  }>
  /** The token as a network's `assets` entry: a token the adapter knows (the built-in USDC is one too). */
  knownAsset: { address: Address; name: string; version: string }
  /** Adapter configuration for this chain, with the token known and the factory allow-listed. */
  adapterConfig(overrides?: Partial<ExactEvmConfig>): ExactEvmConfig
  /** v2 requirements (`eip155:84532`, `amount`). */
  requirementsV2(overrides?: Partial<PaymentRequirementsV2>): PaymentRequirementsV2
  /** v1 requirements (`base-sepolia`, `maxAmountRequired`). */
  requirementsV1(overrides?: Partial<PaymentRequirementsV1>): PaymentRequirementsV1
  /**
   * Verifies one valid payment in the fixture's token through `facilitator`, so that its adapter
   * holds a fee quote: the first verify reads one (and waits for it), the next ones use it.
   */
  warmUp(facilitator: { verify(body: unknown): Promise<{ isValid: boolean; invalidReason?: string }> }): Promise<void>
  stop(): Promise<void>
}

export interface EvmFixtureOptions extends StartAnvilOptions {
  /** How many facilitator signers. @default 1 */
  signerCount?: number
}

/** Starts anvil and deploys everything an EVM payment needs. */
export async function startEvmFixture(options: EvmFixtureOptions = {}): Promise<EvmFixture> {
  const node = await startAnvil({ chainId: 84532, ...options })
  try {
    await installMulticall3(node)
    const token = await deployTestToken(node)
    const factory = await deployWalletFactory(node)
    const signers = node.accounts.slice(1, 1 + (options.signerCount ?? 1))
    const payTo = privateKeyToAccount(generatePrivateKey()).address
    const extra = { name: token.name, version: token.version }
    const knownAsset = { address: token.address, name: token.name, version: token.version }
    const fixture: EvmFixture = {
      node,
      token,
      knownAsset,
      factory,
      signers,
      payTo,
      async newPayer(amount = 1_000_000n) {
        const payer = privateKeyToAccount(generatePrivateKey())
        if (amount > 0n) await fundPayer(node, token, payer.address, amount)
        return payer
      },
      async counterfactualPayment(options = {}) {
        const owner = privateKeyToAccount(generatePrivateKey())
        const salt = generatePrivateKey()
        const wallet = await factory.walletAddress(owner.address, salt)
        await fundPayer(node, token, wallet, options.balance ?? 1_000_000n)
        const requirements = fixture.requirementsV2()
        const paymentPayload = await signExactEvmPayment({
          signer: { ...owner, address: wallet },
          requirements,
          wrapSignature: (signature: Hex) =>
            serializeErc6492Signature({ address: options.factory ?? factory.address, data: factory.deployCalldata(owner.address, salt), signature }),
        })
        return { owner, wallet, paymentPayload, requirements }
      },
      adapterConfig: (overrides = {}) => ({
        networks: [{ network: 'eip155:84532', rpcUrls: [node.rpcUrl], assets: [knownAsset] }],
        signers,
        erc6492Factories: [factory.address],
        deployErc6492Wallets: true,
        ...overrides,
      }),
      requirementsV2: (overrides = {}) => ({
        scheme: 'exact',
        network: 'eip155:84532',
        amount: '1000',
        asset: token.address,
        payTo,
        maxTimeoutSeconds: 60,
        extra,
        ...overrides,
      }),
      requirementsV1: (overrides = {}) => ({
        scheme: 'exact',
        network: 'base-sepolia',
        maxAmountRequired: '1000',
        asset: token.address,
        payTo,
        resource: 'https://example.test/paid',
        description: 'a paid test resource',
        mimeType: 'application/json',
        maxTimeoutSeconds: 60,
        extra,
        ...overrides,
      }),
      async warmUp(facilitator) {
        const requirements = fixture.requirementsV2()
        const paymentPayload = await signExactEvmPayment({ signer: await fixture.newPayer(), requirements })
        const answer = await facilitator.verify({ x402Version: 2, paymentPayload, paymentRequirements: requirements })
        if (!answer.isValid) throw new Error(`the warm-up payment was refused: ${answer.invalidReason}`)
      },
      stop: () => node.stop(),
    }
    return fixture
  } catch (error) {
    await node.stop()
    throw error
  }
}
