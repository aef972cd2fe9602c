/**
 * The Solidity side of the EVM tests: compiles the contracts in
 * `test/support/contracts` with solc-js (OpenZeppelin 5, evmVersion cancun),
 * caches the artifacts, and deploys them on an anvil node. Also installs
 * Multicall3 at its canonical address, which a fresh anvil lacks.
 *
 * @example
 * const node = await startAnvil({ chainId: 84532 })
 * await installMulticall3(node)
 * const usdc = await deployTestToken(node)
 * await fundPayer(node, usdc, payer.address, 1_000_000n)
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, existsSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { encodeFunctionData, type Abi, type Address, type Hex, type LocalAccount } from 'viem'
import { MULTICALL3_ADDRESS } from '../../src/evm/codec/abi.js'
import type { AnvilNode } from './anvil.js'

const require = createRequire(import.meta.url)
const CONTRACTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'contracts')
const CACHE_DIR = join(process.cwd(), 'node_modules', '.cache', 'x402-facilitator-test')
const SOURCES = ['TestUSDC.sol', 'TestSmartWallet.sol', 'TestWalletFactory.sol', 'TestGasBurningWallet.sol', 'TestGasBurningToken.sol', 'TestGasPriceWallet.sol', 'TestFeeOnTransferToken.sol'] as const

/** ABI and creation bytecode of one compiled contract. */
export interface Artifact {
  readonly abi: Abi
  readonly bytecode: Hex
}

export type ContractName =
  | 'TestUSDC'
  | 'TestSmartWallet'
  | 'TestWalletFactory'
  | 'TestGasBurningWallet'
  | 'TestGasBurningWalletFactory'
  | 'TestGasBurningToken'
  | 'TestGasPriceWallet'
  | 'TestFeeOnTransferToken'
export type Artifacts = Record<ContractName, Artifact>

interface SolcModule {
  version(): string
  compile(input: string, callbacks: { import: (path: string) => { contents: string } | { error: string } }): string
}

/**
 * Compiles `files` of test/support/contracts with solc-js (OpenZeppelin 5, evmVersion cancun; imports
 * from beside them or node_modules), or reads them from the cache when neither the sources nor the
 * compiler changed (compiling takes seconds; reading is instant). Answers a reader of one contract.
 *
 * @example
 * const pick = compileSolidity('artifacts', ['TestUSDC.sol'])
 * const usdc = pick('TestUSDC.sol', 'TestUSDC')
 */
export function compileSolidity(cacheName: string, files: readonly string[]): (file: string, name: string) => Artifact {
  const solc: SolcModule = require('solc')
  const sources = Object.fromEntries(files.map((file) => [file, { content: readFileSync(join(CONTRACTS_DIR, file), 'utf8') }]))
  const settings = {
    evmVersion: 'cancun',
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  }
  const ozVersion = JSON.parse(readFileSync(require.resolve('@openzeppelin/contracts/package.json'), 'utf8')).version as string
  const key = createHash('sha256').update(JSON.stringify({ sources, settings, solc: solc.version(), ozVersion })).digest('hex').slice(0, 16)
  const cacheFile = join(CACHE_DIR, `${cacheName}-by-file-${key}.json`)
  let compiled: Record<string, Record<string, Artifact>>
  if (existsSync(cacheFile)) {
    compiled = JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, Record<string, Artifact>>
  } else {
    const output = JSON.parse(
      solc.compile(JSON.stringify({ language: 'Solidity', sources, settings }), {
        import: (path) => {
          try {
            return { contents: readFileSync(path.startsWith('@') ? require.resolve(path) : join(CONTRACTS_DIR, path), 'utf8') }
          } catch {
            return { error: `not found: ${path}` }
          }
        },
      }),
    ) as {
      errors?: { severity: string; formattedMessage: string }[]
      contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>
    }
    const errors = (output.errors ?? []).filter((e) => e.severity === 'error')
    if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`)
    compiled = Object.fromEntries(
      Object.entries(output.contracts).map(([file, contracts]) => [
        file,
        Object.fromEntries(Object.entries(contracts).map(([name, contract]) => [name, { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` as Hex }])),
      ]),
    )
    mkdirSync(CACHE_DIR, { recursive: true })
    writeFileSync(cacheFile, JSON.stringify(compiled))
  }
  return (file, name) => {
    const artifact = compiled[file]?.[name]
    if (!artifact) throw new Error(`solc produced no ${name}`)
    return artifact
  }
}

/** Compiles the test contracts, or reads them from the cache (see compileSolidity). */
export function compileTestContracts(): Artifacts {
  const pick = compileSolidity('artifacts', SOURCES)
  return {
    TestUSDC: pick('TestUSDC.sol', 'TestUSDC'),
    TestSmartWallet: pick('TestSmartWallet.sol', 'TestSmartWallet'),
    TestWalletFactory: pick('TestWalletFactory.sol', 'TestWalletFactory'),
    TestGasBurningWallet: pick('TestGasBurningWallet.sol', 'TestGasBurningWallet'),
    TestGasBurningWalletFactory: pick('TestGasBurningWallet.sol', 'TestGasBurningWalletFactory'),
    TestGasBurningToken: pick('TestGasBurningToken.sol', 'TestGasBurningToken'),
    TestGasPriceWallet: pick('TestGasPriceWallet.sol', 'TestGasPriceWallet'),
    TestFeeOnTransferToken: pick('TestFeeOnTransferToken.sol', 'TestFeeOnTransferToken'),
  }
}

/**
 * Multicall3's deployed (runtime) code, cut from the creation code viem ships
 * (in an internal module it does not export, so the file is read): the
 * 32-byte constructor copies the runtime that starts right after it.
 */
export function multicall3RuntimeCode(): Hex {
  const file = join(dirname(require.resolve('viem')), '..', '_esm', 'constants', 'contracts.js')
  const found = /multicall3Bytecode\s*=\s*'0x([0-9a-f]+)'/.exec(readFileSync(file, 'utf8'))
  if (!found?.[1]) throw new Error(`multicall3Bytecode not found in ${file}`)
  const creation = found[1]
  const header = creation.slice(0, 64)
  const length = Number.parseInt(header.slice(38, 42), 16)
  if (!header.startsWith('608060405234801561001057600080fd5b5061') || creation.length !== 64 + length * 2) {
    throw new Error('viem multicall3Bytecode has an unexpected layout')
  }
  return `0x${creation.slice(64)}`
}

/** Installs Multicall3 at 0xcA11bde05977b3631167028862bE2a173976CA11 with anvil_setCode. */
export async function installMulticall3(node: AnvilNode): Promise<Address> {
  await node.testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: multicall3RuntimeCode() })
  return MULTICALL3_ADDRESS
}

/** Deploys a compiled contract from `from` (default: the node's first account) and returns its address. */
export async function deployContract(node: AnvilNode, artifact: Artifact, args: readonly unknown[] = [], from?: LocalAccount): Promise<Address> {
  const wallet = node.walletClient(from)
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args, account: from ?? node.accounts[0]!, chain: node.chain })
  const receipt = await node.publicClient.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error('contract deployment failed')
  return receipt.contractAddress
}

/** A deployed EIP-3009 test token and the EIP-712 domain its payments are signed for. */
export interface TestToken {
  readonly address: Address
  readonly abi: Abi
  /** The domain's name and version, as `paymentRequirements.extra` carries them. */
  readonly name: string
  readonly version: string
}

/** Deploys a USDC-like EIP-3009 token. @default name "USD Coin", version "2" */
export async function deployTestToken(node: AnvilNode, domain: { name?: string; version?: string; vrsRecoversOnly?: boolean } = {}): Promise<TestToken> {
  const { TestUSDC } = compileTestContracts()
  const name = domain.name ?? 'USD Coin'
  const version = domain.version ?? '2'
  const address = await deployContract(node, TestUSDC, [name, version, domain.vrsRecoversOnly ?? false])
  return { address, abi: TestUSDC.abi, name, version }
}

/**
 * Deploys an attacker's EIP-3009 token: a test USDC ("USD Coin" / "2" unless told) whose
 * `transferWithAuthorization` first burns `burnGas` gas (see TestGasBurningToken.sol).
 */
export async function deployGasBurningToken(node: AnvilNode, burnGas: bigint, domain: { name?: string; version?: string } = {}): Promise<TestToken> {
  const { TestGasBurningToken } = compileTestContracts()
  const name = domain.name ?? 'USD Coin'
  const version = domain.version ?? '2'
  const address = await deployContract(node, TestGasBurningToken, [name, version, burnGas])
  return { address, abi: TestGasBurningToken.abi, name, version }
}

/**
 * Deploys a fee-on-transfer token: a test USDC ("USD Coin" / "2" unless told: EIP-3009, EIP-2612,
 * approve for Permit2) that burns `feePercent` % (10 by default) of every transfer, so that a payment
 * of 1,000 credits its recipient 900 (see TestFeeOnTransferToken.sol). Anyone may change the fee
 * with `setFeePercent`.
 */
export async function deployFeeOnTransferToken(node: AnvilNode, options: { feePercent?: bigint; name?: string; version?: string } = {}): Promise<TestToken> {
  const { TestFeeOnTransferToken } = compileTestContracts()
  const name = options.name ?? 'USD Coin'
  const version = options.version ?? '2'
  const address = await deployContract(node, TestFeeOnTransferToken, [name, version, options.feePercent ?? 10n])
  return { address, abi: TestFeeOnTransferToken.abi, name, version }
}

/** Mints `amount` (smallest unit) of the test token to `payer`. */
export async function fundPayer(node: AnvilNode, token: TestToken, payer: Address, amount: bigint): Promise<void> {
  const hash = await node.walletClient().sendTransaction({
    account: node.accounts[0]!,
    chain: node.chain,
    to: token.address,
    data: encodeFunctionData({ abi: token.abi, functionName: 'mint', args: [payer, amount] }),
  })
  await node.publicClient.waitForTransactionReceipt({ hash })
}

/** The payer's token balance. */
export async function tokenBalance(node: AnvilNode, token: TestToken, owner: Address): Promise<bigint> {
  const balance = await node.publicClient.readContract({ address: token.address, abi: token.abi, functionName: 'balanceOf', args: [owner] })
  if (typeof balance !== 'bigint') throw new Error('balanceOf did not return a number')
  return balance
}

/** Deploys an ERC-1271 smart wallet owned by `owner`. */
export async function deploySmartWallet(node: AnvilNode, owner: Address): Promise<Address> {
  return deployContract(node, compileTestContracts().TestSmartWallet, [owner])
}

/** Deploys an ERC-1271 wallet owned by `owner` whose `isValidSignature` burns gas (`rounds` hashes, about 230 gas each on anvil). */
export async function deployGasBurningWallet(node: AnvilNode, owner: Address, rounds: bigint): Promise<Address> {
  return deployContract(node, compileTestContracts().TestGasBurningWallet, [owner, rounds])
}

/**
 * Gives a plain key's `account` code, as an EIP-7702 delegation does: a gas-burning wallet's
 * (see {@link deployGasBurningWallet}) owned by the account itself, so that its key's signatures
 * stay valid when a token asks its `isValidSignature`, after `rounds` hashes.
 */
export async function delegateAccount(node: AnvilNode, account: Address, rounds: bigint): Promise<void> {
  const delegate = await deployGasBurningWallet(node, account, rounds)
  await node.testClient.setCode({ address: account, bytecode: (await node.publicClient.getCode({ address: delegate }))! })
}

/** Deploys an ERC-1271 wallet owned by `owner` whose signatures are valid only at `tx.gasprice == 0` (in simulations without fees). */
export async function deployGasPriceWallet(node: AnvilNode, owner: Address): Promise<Address> {
  return deployContract(node, compileTestContracts().TestGasPriceWallet, [owner])
}

/**
 * Gives a plain key's `account` the code of a gas-price wallet owned by the account itself, as an
 * EIP-7702 delegation to it would: its key's signatures are valid to a token that asks the
 * account's `isValidSignature`, but only at `tx.gasprice == 0`.
 */
export async function delegateToGasPriceWallet(node: AnvilNode, account: Address): Promise<void> {
  const delegate = await deployGasPriceWallet(node, account)
  await node.testClient.setCode({ address: account, bytecode: (await node.publicClient.getCode({ address: delegate }))! })
}

/** A deployed counterfactual wallet factory and helpers to build ERC-6492 deployments. */
export interface TestWalletFactory {
  readonly address: Address
  /** The address `createAccount(owner, salt)` deploys to. */
  walletAddress(owner: Address, salt: Hex): Promise<Address>
  /** Calldata of `createAccount(owner, salt)`, as an ERC-6492 wrapper carries it. */
  deployCalldata(owner: Address, salt: Hex): Hex
}

/** Deploys the ERC-6492 test factory, or with `burnRounds` one whose wallets burn gas in `isValidSignature`. */
export async function deployWalletFactory(node: AnvilNode, burnRounds?: bigint): Promise<TestWalletFactory> {
  const artifacts = compileTestContracts()
  const TestWalletFactory = burnRounds === undefined ? artifacts.TestWalletFactory : artifacts.TestGasBurningWalletFactory
  const address = await deployContract(node, TestWalletFactory, burnRounds === undefined ? [] : [burnRounds])
  return {
    address,
    async walletAddress(owner, salt) {
      const wallet = await node.publicClient.readContract({ address, abi: TestWalletFactory.abi, functionName: 'getAddress', args: [owner, salt] })
      if (typeof wallet !== 'string' || !wallet.startsWith('0x')) throw new Error('getAddress returned no address')
      return `0x${wallet.slice(2)}`
    },
    deployCalldata: (owner, salt) => encodeFunctionData({ abi: TestWalletFactory.abi, functionName: 'createAccount', args: [owner, salt] }),
  }
}

/**
 * One call for the common setup: anvil with Multicall3, a test USDC, and the
 * deployer as facilitator signer is left to the caller.
 */
export async function setupEvmChain(node: AnvilNode): Promise<{ token: TestToken }> {
  await installMulticall3(node)
  return { token: await deployTestToken(node) }
}
