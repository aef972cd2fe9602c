/**
 * The batch-settlement contracts on an anvil node, at their canonical addresses (the official
 * clients sign typed data naming them): our x402BatchSettlement and its EIP-3009 and Permit2
 * deposit collectors (test/support/contracts/X402BatchSettlement.sol, X402DepositCollectors.sol),
 * written to the x402 spec, compiled with solc-js (evmVersion cancun: transient storage) and cached.
 * The Permit2 collector needs Permit2 (installPermit2).
 *
 * @example
 * const node = await startAnvil({ chainId: 84532 })
 * await installPermit2(node)
 * await installBatchSettlement(node)
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Abi, Hex } from 'viem'
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from '../../src/evm/batch/constants.js'
import type { AnvilNode } from './anvil.js'
import { deployContract } from './evm-contracts.js'

const require = createRequire(import.meta.url)
const CONTRACTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'contracts')
const CACHE_DIR = join(process.cwd(), 'node_modules', '.cache', 'x402-facilitator-test')
const FILES = ['X402BatchSettlement.sol', 'X402DepositCollectors.sol'] as const

interface SolcModule {
  version(): string
  compile(input: string, callbacks: { import: (path: string) => { contents: string } | { error: string } }): string
}

interface Compiled {
  readonly abi: Abi
  readonly bytecode: Hex
}

export interface BatchSettlementArtifacts {
  readonly settlement: Compiled
  readonly erc3009Collector: Compiled
  readonly permit2Collector: Compiled
}

/** Compiles the three contracts (a few seconds), or reads them from the cache. */
export function compileBatchSettlementContracts(): BatchSettlementArtifacts {
  const solc: SolcModule = require('solc')
  const sources = Object.fromEntries(FILES.map((file) => [file, { content: readFileSync(join(CONTRACTS_DIR, file), 'utf8') }]))
  const settings = { evmVersion: 'cancun', optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } }
  const ozVersion = JSON.parse(readFileSync(require.resolve('@openzeppelin/contracts/package.json'), 'utf8')).version as string
  const key = createHash('sha256').update(JSON.stringify({ sources, settings, solc: solc.version(), ozVersion })).digest('hex').slice(0, 16)
  const cacheFile = join(CACHE_DIR, `batch-settlement-${key}.json`)
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as BatchSettlementArtifacts

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
  const pick = (file: string, name: string): Compiled => {
    const contract = output.contracts[file]?.[name]
    if (!contract) throw new Error(`solc produced no ${name}`)
    return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` }
  }
  const artifacts: BatchSettlementArtifacts = {
    settlement: pick('X402BatchSettlement.sol', 'X402BatchSettlement'),
    erc3009Collector: pick('X402DepositCollectors.sol', 'X402Erc3009DepositCollector'),
    permit2Collector: pick('X402DepositCollectors.sol', 'X402Permit2DepositCollector'),
  }
  mkdirSync(CACHE_DIR, { recursive: true })
  writeFileSync(cacheFile, JSON.stringify(artifacts))
  return artifacts
}

/**
 * Deploys each contract, then copies its runtime code to the canonical address. The settlement
 * contract's EIP-712 domain follows its address (OpenZeppelin's EIP712 rebuilds the separator when
 * `address(this)` is not the deployment's), and the collectors name it as a constant.
 */
export async function installBatchSettlement(node: AnvilNode): Promise<BatchSettlementArtifacts> {
  const artifacts = compileBatchSettlementContracts()
  const placements = [
    [artifacts.settlement, BATCH_SETTLEMENT_ADDRESS],
    [artifacts.erc3009Collector, ERC3009_DEPOSIT_COLLECTOR_ADDRESS],
    [artifacts.permit2Collector, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS],
  ] as const
  for (const [artifact, address] of placements) {
    const deployed = await deployContract(node, artifact)
    const code = await node.publicClient.getCode({ address: deployed })
    if (!code) throw new Error(`deployment of the contract for ${address} left no code`)
    await node.testClient.setCode({ address, bytecode: code })
  }
  return artifacts
}
