import type { SettlementRecord } from './settlement-record.js'

interface LeaseKeeperInput {
  leaseMs: number
  owner: string
  read(): Promise<SettlementRecord | undefined>
  write(record: SettlementRecord, ttlMs: number): Promise<boolean>
}

/**
 * Keeps the lease of the record a settle call holds (a claim, a broadcast) while the call lives:
 * every third of the lease it checks the record is still its own and writes it back with a new
 * lease. A settle that ends within a third of the lease (nearly all) never renews. Every write of
 * the call goes through `serial`, so a renewal never lands after the write that ended the lease.
 */
export function leaseKeeper(input: LeaseKeeperInput) {
  let held: { record: SettlementRecord & { leaseUntil: number }; ttlMs: number } | undefined
  let lost = false
  let timer: ReturnType<typeof setInterval> | undefined
  let queue: Promise<unknown> = Promise.resolve()
  const serial = <T>(job: () => Promise<T>): Promise<T> => {
    const run = queue.then(job, job)
    queue = run.catch(() => undefined)
    return run
  }
  const letGo = () => {
    held = undefined
    if (timer) clearInterval(timer)
    timer = undefined
  }
  const renew = () => {
    const current = held
    if (!current) return
    void serial(async () => {
      if (held !== current) return
      const now = await input.read()
      if (held !== current) return
      if (!now || !('owner' in now) || now.owner !== input.owner) {
        lost = true
        letGo()
        return
      }
      const renewed = { ...current.record, leaseUntil: Date.now() + input.leaseMs }
      await input.write(renewed, current.ttlMs)
      if (held === current) held = { record: renewed, ttlMs: current.ttlMs }
    }).catch(() => undefined)
  }
  return {
    serial,
    letGo,
    /** From now on this call holds `record`'s lease. */
    hold(record: SettlementRecord, ttlMs: number) {
      if (record.state !== 'claimed' && record.state !== 'broadcast') return
      held = { record, ttlMs }
      if (!timer) {
        timer = setInterval(renew, Math.max(1, Math.floor(input.leaseMs / 3)))
        ;(timer as { unref?: () => void }).unref?.()
      }
    },
    /**
     * Whether the record is still this call's. Free while the lease has not run out by this
     * process's clock; past it (the call stalled), the store is asked.
     */
    async stillOwned(): Promise<boolean> {
      if (lost) return false
      if (!held || held.record.leaseUntil > Date.now()) return true
      return serial(async () => {
        const now = await input.read()
        return !!now && 'owner' in now && now.owner === input.owner
      }).catch(() => false)
    },
  }
}
