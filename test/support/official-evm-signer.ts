/** The official x402 facilitator's EVM signer, for tests and benchmarks that run it beside ours. */
import { toFacilitatorEvmSigner } from '@x402/evm'
import { createWalletClient, http, publicActions, type LocalAccount } from 'viem'
import type { EvmFixture } from './evm-fixture.js'

/**
 * The official facilitator's signer, as its docs wire it over a viem wallet client with public
 * actions: `account` on anvil's chain, receipts polled every 50 ms, no transport retries.
 */
export function officialEvmSigner(account: LocalAccount, chain: EvmFixture['node']['chain'], rpcUrl: string, onFetchRequest?: () => void) {
  const wallet = createWalletClient({ account, chain, pollingInterval: 50, transport: http(rpcUrl, { retryCount: 0, ...(onFetchRequest ? { onFetchRequest } : {}) }) }).extend(publicActions)
  return toFacilitatorEvmSigner({
    address: account.address,
    readContract: (args) => wallet.readContract(args as Parameters<typeof wallet.readContract>[0]),
    verifyTypedData: (args) => wallet.verifyTypedData(args as Parameters<typeof wallet.verifyTypedData>[0]),
    writeContract: (args) => wallet.writeContract(args as Parameters<typeof wallet.writeContract>[0]),
    sendTransaction: (args) => wallet.sendTransaction(args),
    waitForTransactionReceipt: (args) => wallet.waitForTransactionReceipt(args),
    getCode: (args) => wallet.getCode(args),
  })
}
