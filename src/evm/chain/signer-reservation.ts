import type { SettleReservation } from '../../core/adapter.js'
import { FacilitatorError } from '../../errors/facilitator-error.js'
import type { NetworkRuntime, SignerSlot } from './network-runtime.js'

/** A settlement slot held on a signer (`slot` undefined: an upto payload naming none of ours, which verify refuses). */
export interface SignerReservation extends SettleReservation {
  readonly slot: SignerSlot | undefined
}

/** Takes a settlement slot on `slot`, or throws `signer_busy` (with `busy` as its message) when it holds `maxInFlight`. */
export function reserveSigner(slot: SignerSlot, maxInFlight: number, busy: string): SignerReservation {
  if (slot.inFlight >= maxInFlight) throw new FacilitatorError('signer_busy', busy)
  slot.inFlight++
  let held = true
  return {
    slot,
    release() {
      if (!held) return
      held = false
      slot.inFlight--
    },
  }
}

/**
 * Runs a settle's sending on `slot`: a slot the core reserved for this settle is already counted;
 * any other (a direct call, or an upto signer other than the one reserved) is counted meanwhile.
 */
export async function onSigner<T>(slot: SignerSlot, reservation: SignerReservation | undefined, work: (slot: SignerSlot) => Promise<T>): Promise<T> {
  const counted = slot !== reservation?.slot
  if (counted) slot.inFlight++
  try {
    return await work(slot)
  } finally {
    if (counted) slot.inFlight--
  }
}

/**
 * A signer the node would not let pay for the gas of a simulation is left out for a while, as
 * one refused at sending is, so that settles pick the others meanwhile. Returns the error.
 */
export function leftOutIfUnfunded(runtime: NetworkRuntime, slot: SignerSlot, error: unknown): unknown {
  if (error instanceof FacilitatorError && error.code === 'signer_unfunded') runtime.leaveOutUnfunded(slot)
  return error
}
