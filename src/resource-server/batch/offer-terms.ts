/** The terms of a `batch-settlement` offer a channel must match, read once from the resolved offer. */
import { getAddress, type Address } from 'viem'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import { MAX_WITHDRAW_DELAY, MIN_WITHDRAW_DELAY } from '../../evm/batch/constants.js'
import type { PaymentOffer } from '../payment-required.js'

export interface BatchOfferTerms {
  readonly network: string
  readonly chainId: number
  readonly asset: Address
  readonly payTo: Address
  readonly receiverAuthorizer: Address
  readonly withdrawDelay: number
  readonly price: bigint
}

/** Reads the terms of a resolved offer (its `extra` holds `receiverAuthorizer` and `withdrawDelay`), or throws `misconfigured`. */
export function batchOfferTerms(offer: PaymentOffer): BatchOfferTerms {
  const match = /^eip155:(\d+)$/.exec(offer.network)
  if (!match) throw new FacilitatorError('misconfigured', `batch-settlement serves eip155 networks, not ${offer.network}`)
  const withdrawDelay = offer.extra?.withdrawDelay
  if (typeof withdrawDelay !== 'number' || !Number.isInteger(withdrawDelay) || withdrawDelay < MIN_WITHDRAW_DELAY || withdrawDelay > MAX_WITHDRAW_DELAY) {
    throw new FacilitatorError('misconfigured', `the batch-settlement offer on ${offer.network} has withdrawDelay ${String(withdrawDelay)}: it must be whole seconds from ${MIN_WITHDRAW_DELAY} to ${MAX_WITHDRAW_DELAY}`)
  }
  const authorizer = offer.extra?.receiverAuthorizer
  if (typeof authorizer !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(authorizer) || /^0x0{40}$/.test(authorizer)) {
    throw new FacilitatorError('misconfigured', `the batch-settlement offer on ${offer.network} has no receiverAuthorizer: give the server one, or use a facilitator that lists one in supported()`)
  }
  return {
    network: offer.network,
    chainId: Number(match[1]),
    asset: getAddress(offer.asset),
    payTo: getAddress(offer.payTo),
    receiverAuthorizer: getAddress(authorizer),
    withdrawDelay,
    price: BigInt(offer.amount),
  }
}
