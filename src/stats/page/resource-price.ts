import * as z from 'zod'
import { amountSchema } from '../../schemas/primitives.js'

/**
 * What a resource costs on one network, read from one of its discovery
 * `accepts` (payment requirements a resource server sent: untrusted, so
 * parsed). v2 requirements carry `amount`, v1 `maxAmountRequired`.
 */
export const resourcePriceSchema = z
  .object({
    scheme: z.string().max(64),
    network: z.string().max(128),
    asset: z.string().max(128),
    amount: amountSchema.optional(),
    maxAmountRequired: amountSchema.optional(),
  })
  .transform(({ scheme, network, asset, amount, maxAmountRequired }) => ({ scheme, network, asset, amount: amount ?? maxAmountRequired }))
  .refine((price): price is typeof price & { amount: string } => price.amount !== undefined, 'needs amount or maxAmountRequired')

export type ResourcePrice = z.output<typeof resourcePriceSchema>

/**
 * The prices among a resource's discovery `accepts`, skipping any entry that
 * does not parse.
 *
 * @example
 * import { pricesOf } from 'x402-facilitator'
 *
 * pricesOf([{ scheme: 'exact', network: 'eip155:8453', asset: '0x8335…', amount: '10000', payTo: '0x…' }])
 * // [{ scheme: 'exact', network: 'eip155:8453', asset: '0x8335…', amount: '10000' }]
 */
export function pricesOf(accepts: readonly unknown[]): ResourcePrice[] {
  const prices: ResourcePrice[] = []
  for (const accept of accepts) {
    const parsed = resourcePriceSchema.safeParse(accept)
    if (parsed.success) prices.push(parsed.data)
  }
  return prices
}
