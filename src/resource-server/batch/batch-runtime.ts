/** What every part of the batch-settlement server shares: the facilitator, the store, the keys and the clocks. */
import type { LocalAccount } from 'viem'
import type { Facilitator } from '../../facilitator/facilitator.js'
import type { ChannelStateStore } from './channel-state-store.js'

export interface BatchRuntime {
  readonly facilitator: Pick<Facilitator, 'verify' | 'settle'>
  readonly store: ChannelStateStore
  /** The server's own receiver authorizer key, when it does not delegate to the facilitator's. */
  readonly authorizer: Pick<LocalAccount, 'address' | 'signTypedData'> | undefined
  /** How long mirrored on-chain state is fresh enough to check an EOA voucher without the facilitator. */
  readonly freshMs: number
  /** How long a channel's lease lives when never released (a crashed instance). */
  readonly leaseMs: number
  /** Names this instance in lease holders (diagnostics). */
  readonly instance: string
  readonly now: () => number
}
