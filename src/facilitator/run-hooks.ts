import type { PaymentContext } from '../core/adapter.js'
import type { FacilitatorHooks, RefusalEvent, SettleEvent, VerifyEvent } from '../core/hooks.js'
import type { PaymentOptions } from './facilitator.js'

/** The first before-hook's rejection of a payment, in the order the hooks were given. */
export async function firstRejection(hooks: readonly FacilitatorHooks[] | undefined, name: 'beforeVerify' | 'beforeSettle', ctx: PaymentContext) {
  for (const hook of hooks ?? []) {
    const verdict = await hook[name]?.(ctx)
    if (verdict) return verdict
  }
  return undefined
}

interface AfterHookEvents {
  afterVerify: VerifyEvent
  afterSettle: SettleEvent
  afterRefusal: RefusalEvent
}

/** Runs after-hooks without delaying the answer; their failures go to onError. */
export function notify<K extends keyof AfterHookEvents>(options: PaymentOptions, name: K, event: AfterHookEvents[K]): void {
  for (const hook of options.hooks ?? []) {
    const fn = hook[name] as ((e: typeof event) => unknown) | undefined
    if (!fn) continue
    try {
      const outcome = fn.call(hook, event)
      if (outcome instanceof Promise) {
        const tracked = outcome.catch((error: unknown) => options.onError?.(error, name))
        options.pending?.add(tracked)
        void tracked.finally(() => options.pending?.delete(tracked))
      }
    } catch (error) {
      options.onError?.(error, name)
    }
  }
}
