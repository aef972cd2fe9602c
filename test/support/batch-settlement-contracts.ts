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
import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS, PERMIT2_DEPOSIT_COLLECTOR_ADDRESS } from '../../src/evm/batch/constants.js'
import { batchSettlementAbi } from '../../src/evm/batch/abi.js'
import type { AnvilNode } from './anvil.js'
import { compileSolidity, deployContract, type Artifact } from './evm-contracts.js'

const FILES = ['X402BatchSettlement.sol', 'X402DepositCollectors.sol'] as const

export interface BatchSettlementArtifacts {
  readonly settlement: Artifact
  readonly erc3009Collector: Artifact
  readonly permit2Collector: Artifact
}

/** Compiles the three contracts (a few seconds), or reads them from the cache. */
export function compileBatchSettlementContracts(): BatchSettlementArtifacts {
  const pick = compileSolidity('batch-settlement', FILES)
  return {
    settlement: pick('X402BatchSettlement.sol', 'X402BatchSettlement'),
    erc3009Collector: pick('X402DepositCollectors.sol', 'X402Erc3009DepositCollector'),
    permit2Collector: pick('X402DepositCollectors.sol', 'X402Permit2DepositCollector'),
  }
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

/** A channel's on-chain state as the tests check it (the contract's own getters, one call each). */
export async function readChannelOnChain(node: AnvilNode, channelId: `0x${string}`) {
  const read = <T>(functionName: 'channels' | 'pendingWithdrawals' | 'refundNonce') =>
    node.publicClient.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName, args: [channelId] }) as Promise<T>
  const [[balance, totalClaimed], [, initiatedAt], refundNonce] = await Promise.all([
    read<readonly [bigint, bigint]>('channels'),
    read<readonly [bigint, bigint]>('pendingWithdrawals'),
    read<bigint>('refundNonce'),
  ])
  return { channelId, balance, totalClaimed, withdrawRequestedAt: Number(initiatedAt), refundNonce }
}
