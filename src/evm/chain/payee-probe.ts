import { encodeFunctionData, type Address, type Hex } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { PayeeCredit } from '../asset-policy.js'
import type { NetworkRuntime } from './network-runtime.js'
import { EVM_REJECTION, type Rejection } from '../reasons.js'
import { feeFields, quantity, revertReasonOf, whenRefused, type SettlementSender } from './node-answers.js'

/**
 * Runtime code of `PayeeProbe` (src/evm/chain/payee-probe.sol; solc 0.8.37, evmVersion paris so that it
 * runs on chains without PUSH0, optimizer 200 runs, no metadata). Never deployed: only ever placed
 * at the signer's address by an `eth_call` state override. test/evm/payee-credit.test.ts compiles the
 * source and checks it is this code.
 */
export const PAYEE_PROBE_CODE: Hex =
  '0x608060405234801561001057600080fd5b506004361061002b5760003560e01c8063c61e0eec14610030575b600080fd5b61004361003e36600461027f565b61005c565b6040805192835260208301919091520160405180910390f35b6000806100698686610168565b915060005b838110156101525760008086868481811061008b5761008b610313565b905060200281019061009d9190610329565b6100ab906020810190610349565b6001600160a01b03168787858181106100c6576100c6610313565b90506020028101906100d89190610329565b6100e690602081019061036b565b6040516100f49291906103b9565b6000604051808303816000865af19150503d8060008114610131576040519150601f19603f3d011682016040523d82523d6000602084013e610136565b606091505b50915091508161014857805160208201fd5b505060010161006e565b5061015d8686610168565b905094509492505050565b6000806000846001600160a01b03166370a082318560405160240161019c91906001600160a01b0391909116815260200190565b6040516020818303038152906040529060e01b6020820180516001600160e01b0383818316178352505050506040516101d591906103c9565b600060405180830381855afa9150503d8060008114610210576040519150601f19603f3d011682016040523d82523d6000602084013e610215565b606091505b5091509150811580610228575060208151105b1561024657604051631afa0fef60e01b815260040160405180910390fd5b8080602001905181019061025a91906103f8565b95945050505050565b80356001600160a01b038116811461027a57600080fd5b919050565b6000806000806060858703121561029557600080fd5b61029e85610263565b93506102ac60208601610263565b9250604085013567ffffffffffffffff8111156102c857600080fd5b8501601f810187136102d957600080fd5b803567ffffffffffffffff8111156102f057600080fd5b8760208260051b840101111561030557600080fd5b949793965060200194505050565b634e487b7160e01b600052603260045260246000fd5b60008235603e1983360301811261033f57600080fd5b9190910192915050565b60006020828403121561035b57600080fd5b61036482610263565b9392505050565b6000808335601e1984360301811261038257600080fd5b83018035915067ffffffffffffffff82111561039d57600080fd5b6020019150368190038213156103b257600080fd5b9250929050565b8183823760009101908152919050565b6000825160005b818110156103ea57602081860181015185830152016103d0565b506000920191825250919050565b60006020828403121561040a57600080fd5b505191905056'

export const payeeProbeAbi = [
  { type: 'error', name: 'BalanceUnreadable', inputs: [] },
  {
    type: 'function',
    name: 'probe',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'token', type: 'address' },
      { name: 'payee', type: 'address' },
      {
        name: 'calls',
        type: 'tuple[]',
        components: [
          { name: 'target', type: 'address' },
          { name: 'data', type: 'bytes' },
        ],
      },
    ],
    outputs: [
      { name: 'before', type: 'uint256' },
      { name: 'afterwards', type: 'uint256' },
    ],
  },
] as const

/**
 * Gas for the probe's own work and its two `balanceOf` reads, on top of the limit of the calls it runs
 * (a token whose `balanceOf` burns more fails the proof: refused, nothing sent).
 */
export const PAYEE_PROBE_GAS = 100_000n

/** What the probe said: the credit is proven (`rejection` undefined) or refused, the fee quote to renew, or a fault of ours. */
export type PayeeProbe = { readonly rejection: Rejection | undefined } | { readonly staleFees: true } | { readonly fault: FacilitatorError }

/**
 * The probe's refusal, or `undefined` when the credit is proven; a fault is thrown, and so is a fee
 * quote the node found below its base fee (for callers that have no fresh quote to try again with).
 */
export function payeeRejection(proven: PayeeProbe): Rejection | undefined {
  if ('fault' in proven) throw proven.fault
  if ('staleFees' in proven) throw new FacilitatorError('rpc_error', 'proving what the payee receives: the node found the fee quote below its base fee; retry')
  return proven.rejection
}

/**
 * Proves, before anything is sent, that the settlement's `calls` credit `payTo` with exactly
 * `credit.amount` of `credit.token`: one `eth_call` whose state override places the PayeeProbe at
 * the sender's own address, called from that sender with its fees and `gas` as the limit. The calls
 * then run with the settlement's sender semantics (`msg.sender` and `tx.origin` are the signer, as
 * for the transaction: the upto proxy only lets the named facilitator settle, a token may treat
 * callers differently), in order, between two reads of `payTo`'s balance in the same execution.
 * Sends its request at once (no await before it), so that it joins the JSON-RPC batch of the calls
 * made beside it: no extra round trip. Never rejects. A node that ignores the state override answers
 * the call to a plain account with nothing: a fault naming the cause (a token outside the known
 * table cannot be proven there; list it in the network's `assets` to vouch for it instead).
 */
export async function probePayeeCredit(
  runtime: NetworkRuntime,
  sender: SettlementSender,
  calls: readonly { readonly to: Address; readonly data: Hex }[],
  credit: PayeeCredit,
  gas: bigint,
): Promise<PayeeProbe> {
  const data = encodeFunctionData({
    abi: payeeProbeAbi,
    functionName: 'probe',
    args: [credit.token, credit.payTo, calls.map((call) => ({ target: call.to, data: call.data }))],
  })
  const transaction = { from: sender.from, to: sender.from, data, gas: quantity(gas), ...feeFields(sender.fees) }
  let raw: Hex
  try {
    raw = await runtime.client.request({ method: 'eth_call', params: [transaction, 'latest', { [sender.from]: { code: PAYEE_PROBE_CODE } }] })
  } catch (error) {
    return whenRefused(runtime, sender, error, 'proving what the payee receives', (): PayeeProbe => ({
      rejection: {
        reason: EVM_REJECTION.payeeAmountMismatch,
        message: `what payTo ${credit.payTo} receives of ${credit.token} could not be proven: the settlement reverted when run between two reads of payTo's balance${revertReasonOf(error)}; nothing was sent`,
      },
    }))
  }
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]{128}$/.test(raw)) {
    return {
      fault: new FacilitatorError(
        'rpc_error',
        `the RPC of ${runtime.network.caip2} did not apply an eth_call state override, which proves what payTo receives of a token outside the known table (${credit.token}); ` +
          'use a node that supports state overrides, or list the token in the network\'s assets to vouch for it',
      ),
    }
  }
  const before = BigInt(`0x${raw.slice(2, 66)}`)
  const after = BigInt(`0x${raw.slice(66, 130)}`)
  const received = after - before
  if (received === credit.amount) return { rejection: undefined }
  return {
    rejection: {
      reason: EVM_REJECTION.payeeAmountMismatch,
      message:
        `payTo ${credit.payTo} would receive ${received} of ${credit.token}, not the ${credit.amount} the payment moves ` +
        '(a fee-on-transfer, rebasing or hook token): refused for tokens outside the known table unless the operator lists them in assets; nothing was sent',
    },
  }
}
